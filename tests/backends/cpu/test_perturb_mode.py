"""The cpu backend's perturbation mode (ENCELADUS_CPU_PERTURB=1, docs/floating_point.md): every math function whose
Apple bound exceeds 0.5 ulp returns a result as far from the exact value as that bound allows, so that the test
suite's tolerances are shown to hold for the worst error an Apple GPU may give. The last test runs the whole of
tests/codegen, tests/conformance and tests/fuzz in that mode (CI runs only the README's pytest command)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from enceladus.backends.cpu.toolchain import PERTURB_DEFINE

ROOT = Path(__file__).resolve().parents[3]

# Apple's bounds in ulp (MSL specification 8.4: Table 8.1 for precise::, Table 8.2 for fast::), with an input
# range for each function of this test.
BOUNDS = {
    "precise::exp": (4, np.exp, (-80, 80)), "precise::exp2": (4, np.exp2, (-120, 120)),
    "precise::log": (4, np.log, (1e-30, 1e30)), "precise::log2": (4, np.log2, (1e-30, 1e30)),
    "precise::sin": (4, np.sin, (-100, 100)), "precise::cos": (4, np.cos, (-100, 100)),
    "precise::tan": (6, np.tan, (-1.5, 1.5)), "precise::tanh": (5, np.tanh, (-8, 8)),
    "precise::atan": (5, np.arctan, (-50, 50)), "precise::asin": (4, np.arcsin, (-1, 1)),
    "precise::sinpi": (4, lambda v: np.where(v == np.round(v), 0.0, np.sin(np.pi * np.fmod(v, 2.0))), (-3.3, 3.3)),
    "fast::rsqrt": (2, lambda v: 1 / np.sqrt(v), (1e-30, 1e30)),
}
BINARY_BOUNDS = {"precise::pow": (16, np.power), "precise::atan2": (6, np.arctan2)}


def _msl() -> str:
    kernels = [f"""kernel void k{i}(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) {{ y[i] = {fn}(x[i]); }}""" for i, fn in enumerate(BOUNDS)]
    kernels += [f"""kernel void b{i}(device const float* x [[buffer(0)]], device const float* z [[buffer(1)]],
                       device float* y [[buffer(2)]], uint i [[thread_position_in_grid]]) {{ y[i] = {fn}(x[i], z[i]); }}"""
                for i, fn in enumerate(BINARY_BOUNDS)]
    return "#include <metal_stdlib>\nusing namespace metal;\n" + "\n".join(kernels) + "\n"


def _inputs(lo: float, hi: float, n: int = 4096) -> np.ndarray:
    if lo > 0:  # positive ranges spanning decades: log-spaced
        return np.geomspace(lo, hi, n).astype(np.float32)
    return np.linspace(lo, hi, n).astype(np.float32)


def _launch(lib, name: str, *arrays: np.ndarray) -> np.ndarray:
    out = np.zeros_like(arrays[0])
    bufs = {i: a.ctypes.data for i, a in enumerate(arrays)}
    bufs[len(arrays)] = out.ctypes.data
    tg = 256 if len(out) % 256 == 0 else len(out)  # Metal's limit: 1024 threads per threadgroup
    lib.function(name).launch((len(out) // tg, 1, 1), (tg, 1, 1), bufs)
    return out


def _ulps(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|got - exact| in float ulps at the exact value (the smaller gap at a power of two: the strictest reading of
    the spec's definition, as the header uses)."""
    a = np.abs(exact)
    m, e = np.frexp(a)
    ulp = np.where(m == 0.5, np.ldexp(1.0, e - 25), np.ldexp(1.0, e - 24))
    return np.abs(got.astype(np.float64) - exact) / ulp


@pytest.fixture
def both_libs(backend, monkeypatch):  # backend: each installed compiler (conftest.py)
    monkeypatch.delenv("ENCELADUS_CPU_PERTURB", raising=False)
    plain = backend.compile(_msl())
    monkeypatch.setenv("ENCELADUS_CPU_PERTURB", "1")
    perturbed = backend.compile(_msl())
    return plain, perturbed


def test_mode_is_a_define_and_part_of_the_cache_key(both_libs):
    plain, perturbed = both_libs
    assert f"-D{PERTURB_DEFINE}" in perturbed._flags and f"-D{PERTURB_DEFINE}" not in plain._flags
    assert plain.path != perturbed.path  # two builds, not one cached library answering for both


@pytest.mark.parametrize("fn", list(BOUNDS))
def test_mode_moves_results_to_apples_bound_and_no_further(both_libs, fn):
    plain, perturbed = both_libs
    bound, ref, (lo, hi) = BOUNDS[fn]
    x = _inputs(lo, hi)
    exact = ref(x.astype(np.float64))
    name = f"k{list(BOUNDS).index(fn)}"
    a, b = _launch(plain, name, x), _launch(perturbed, name, x)
    normal = np.abs(exact) >= 2.0**-126
    assert _ulps(a[normal], exact[normal]).max() <= 2.0  # the host libm (glibc's float functions: <= 2 ulp)
    err = _ulps(b[normal], exact[normal])
    assert err.max() <= bound, f"{fn}: {err.max():.3f} ulp exceeds Apple's {bound}"
    assert np.mean(err >= bound - 1.5) > 0.9, f"{fn}: most results should sit near the bound ({bound} ulp)"
    assert np.mean(a != b) > 0.9  # the mode changes outputs
    # both directions occur, and the same inputs give the same outputs (deterministic)
    assert (b > a).any() and (b < a).any()
    np.testing.assert_array_equal(b, _launch(perturbed, name, x))


@pytest.mark.parametrize("fn", list(BINARY_BOUNDS))
def test_binary_functions_are_perturbed_too(both_libs, fn):
    plain, perturbed = both_libs
    bound, ref = BINARY_BOUNDS[fn]
    x, z = np.geomspace(0.5, 4, 2048).astype(np.float32), np.linspace(-6, 6, 2048).astype(np.float32)
    exact = ref(x.astype(np.float64), z.astype(np.float64))
    name = f"b{list(BINARY_BOUNDS).index(fn)}"
    a, b = _launch(plain, name, x, z), _launch(perturbed, name, x, z)
    err = _ulps(b, exact)
    assert err.max() <= bound and np.mean(a != b) > 0.9


def test_special_values_are_not_perturbed(both_libs):
    _, perturbed = both_libs
    x = np.array([-np.inf, np.inf, np.nan, -200.0, 200.0], np.float32)
    y = _launch(perturbed, f"k{list(BOUNDS).index('precise::exp')}", x)
    assert y[0] == 0.0 and y[1] == np.inf and np.isnan(y[2]) and y[3] == 0.0 and y[4] == np.inf
    y = _launch(perturbed, f"k{list(BOUNDS).index('precise::log')}", np.array([0.0, -1.0, np.inf], np.float32))
    assert y[0] == -np.inf and np.isnan(y[1]) and y[2] == np.inf
    y = _launch(perturbed, f"k{list(BOUNDS).index('precise::sinpi')}", np.array([-3.0, -1.0, 0.0, 2.0, 7.0], np.float32))
    np.testing.assert_array_equal(y, 0.0)  # exact zeros stay exact: 0 ulp of error is all Apple allows there


# The whole of tests/codegen, tests/conformance and the differential fuzzer runs in the mode, on fp32 (fp16/bf16
# results round the perturbation away): a hand-picked subset went stale once (test_libdevice_special, added after
# the subset was chosen, failed in the mode: lgamma near its zeros). Its own two xdist workers; about 3 minutes.
PERTURBED_DIRS = ("tests/codegen", "tests/conformance", "tests/fuzz")


def test_codegen_conformance_and_fuzz_pass_under_apples_worst_error():
    env = dict(os.environ, ENCELADUS_CPU_PERTURB="1", ENCELADUS_PROXY_CHECK="0")
    for name in [k for k in env if k.startswith(("PYTEST_", "COV_"))]:
        env.pop(name)  # a fresh pytest run, not a worker of this one
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "-k",
           "not float16 and not bfloat16", *PERTURBED_DIRS]
    res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    assert res.returncode == 0, f"under ENCELADUS_CPU_PERTURB=1:\n{res.stdout[-6000:]}\n{res.stderr[-2000:]}"
    assert " passed" in res.stdout and " failed" not in res.stdout
