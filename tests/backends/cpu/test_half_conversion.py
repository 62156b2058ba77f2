"""half <-> float conversions on the cpu backend: hardware (x86 F16C) and software builds give the same bits.

Kernels are built with ``-mf16c`` when the building machine has F16C (``toolchain.target_flags``, the default
``ENCELADUS_CPU_TARGET=native``); ``ENCELADUS_CPU_TARGET=generic`` keeps the software conversion. Both builds
must give Metal's rounding (to nearest even, subnormals, overflow to infinity) and the software rule for NaNs
(float -> half: the sign with the quiet NaN 0x7e00, payload dropped; half -> float: the payload shifted into
place, a signalling NaN kept signalling), bit for bit, on every one of the 65,536 halfs, on every rounding
midpoint between two halfs and its float neighbours, and on a sample of a million float bit patterns.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from enceladus.backends.cpu import CpuBackendError, toolchain
from paths import needs_cpu

pytestmark = needs_cpu

MSL = """
#include <metal_stdlib>
using namespace metal;
kernel void to_half(device const uint* x [[buffer(0)]], device ushort* out [[buffer(1)]],
                    uint i [[thread_position_in_grid]]) {
    out[i] = as_type<ushort>(half(as_type<float>(x[i])));
}
kernel void to_float(device const ushort* x [[buffer(0)]], device uint* out [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
    out[i] = as_type<uint>(float(as_type<half>(x[i])));
}
"""


def half_to_float_bits(h: np.ndarray) -> np.ndarray:
    """The reference half -> float conversion, on bits (exact: every half is a float)."""
    h = h.astype(np.uint32)
    sign, e, m = (h & 0x8000) << 16, (h >> 10) & 0x1F, h & 0x3FF
    normal = sign | ((e + 112) << 23) | (m << 13)
    sub = (m.astype(np.float64) * 2.0 ** -24).astype(np.float32).view(np.uint32) | sign  # exact
    special = sign | 0x7F800000 | (m << 13)  # inf and NaN: the payload as it is, not quieted
    return np.where(e == 0x1F, special, np.where(e == 0, sub, normal)).astype(np.uint32)


def float_to_half_bits(x: np.ndarray) -> np.ndarray:
    """The reference float -> half conversion, on bits: correctly rounded to nearest even (float64 holds every
    float and half exactly, and NumPy's float64 -> float16 cast rounds once), NaN -> sign | 0x7e00."""
    with np.errstate(over="ignore", invalid="ignore"):
        h = x.view(np.float32).astype(np.float64).astype(np.float16).view(np.uint16)
    nan = (x & 0x7FFFFFFF) > 0x7F800000
    return np.where(nan, ((x >> 16) & 0x8000) | 0x7E00, h).astype(np.uint16)


def float_inputs() -> np.ndarray:
    """Every half as a float, every midpoint between two adjacent halfs (and past HALF_MAX) with its float
    neighbours, specials and NaN payloads, float subnormals, and a sample of random bit patterns."""
    halfs = np.arange(1 << 15, dtype=np.uint16)  # the non-negative ones; signs are added below
    with np.errstate(invalid="ignore"):  # signalling NaNs among them
        exact = half_to_float_bits(halfs).view(np.float32).astype(np.float64)
    finite = exact[np.isfinite(exact)]
    upper = np.append(finite[1:], 65536.0)  # the next half above each (65536: where rounding to inf begins)
    mid = ((finite + upper) / 2).astype(np.float32).view(np.uint32)  # exact: a float holds every midpoint
    near = np.concatenate([mid, mid - 1, mid + 1, half_to_float_bits(halfs)])
    specials = np.array([0, 0x7F800000, 0x7F800001, 0x7FC00000, 0x7FFFFFFF, 0x7FA00000, 0x7F802000, 0x7FBFE000,
                         0x1, 0x7FFFFF, 0x800000, 0x33000000, 0x33000001, 0x32FFFFFF, 0x477FE000, 0x477FEFFF,
                         0x477FF000, 0x477FF001, 0x7F7FFFFF], np.uint32)
    rng = np.random.default_rng(25)
    sample = rng.integers(0, 1 << 32, size=1 << 20, dtype=np.uint64).astype(np.uint32)
    pos = np.concatenate([near, specials, sample])
    return np.concatenate([pos, pos | 0x80000000]).astype(np.uint32)


def _convert(backend, x: np.ndarray, kernel: str, out_dtype) -> np.ndarray:
    lib = backend.compile(MSL)
    out = np.zeros(x.size, out_dtype)
    lib.function(kernel).dispatch_threads((x.size, 1, 1), (256, 1, 1), {0: x.ctypes.data, 1: out.ctypes.data})
    return out


@pytest.fixture(params=["native", "generic"])
def target(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, backend) -> str:
    monkeypatch.setenv(toolchain.TARGET_ENV, request.param)
    if request.param == "native" and "-mf16c" not in toolchain.target_flags(backend.compiler):
        pytest.skip("this machine has no F16C: the native build is the software conversion (the generic case)")
    return request.param


def test_native_build_uses_f16c_where_the_machine_has_it(backend, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(toolchain.TARGET_ENV, "native")
    has = {"f16c", "avx"} <= toolchain._host_cpu_features() and os.uname().machine == "x86_64"
    lib = backend.compile(MSL)
    assert ("-mf16c" in lib._flags) == has
    monkeypatch.setenv(toolchain.TARGET_ENV, "generic")
    generic = backend.compile(MSL)
    assert "-mf16c" not in generic._flags
    if has:  # another library under another cache key: a shared cache never mixes the two
        assert generic.path != lib.path


def test_every_half_to_float(backend, target: str) -> None:
    h = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    got = _convert(backend, h, "to_float", np.uint32)
    want = half_to_float_bits(h)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, f"{bad.size} halfs differ, e.g. {h[bad[0]]:#06x} -> {got[bad[0]]:#010x}, " \
                          f"expected {want[bad[0]]:#010x}"


def test_float_to_half_rounding_midpoints_and_sample(backend, target: str) -> None:
    x = float_inputs()
    got = _convert(backend, x, "to_half", np.uint16)
    want = float_to_half_bits(x)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, f"{bad.size} floats differ, e.g. {x[bad[0]]:#010x} -> {got[bad[0]]:#06x}, " \
                          f"expected {want[bad[0]]:#06x}"


def test_builds_agree_bit_for_bit(backend, monkeypatch: pytest.MonkeyPatch) -> None:
    x, h = float_inputs(), np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    results = []
    for t in ("native", "generic"):
        monkeypatch.setenv(toolchain.TARGET_ENV, t)
        results.append((_convert(backend, x, "to_half", np.uint16), _convert(backend, h, "to_float", np.uint32)))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])


def test_bad_target_is_refused(backend, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(toolchain.TARGET_ENV, "skylake")
    with pytest.raises(CpuBackendError, match=r"ENCELADUS_CPU_TARGET='skylake'.*'native'.*'generic'"):
        backend.compile(MSL)


def test_target_flags_follow_the_machine_and_the_compiler(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(toolchain.TARGET_ENV, "native")
    monkeypatch.setattr(toolchain, "_host_cpu_features", lambda: frozenset({"sse2", "avx", "f16c"}))
    clang = toolchain.CompilerInfo(command=("clang++",), kind="clang", version="clang (stand-in)")
    zig = toolchain.CompilerInfo(command=("zig", "c++"), kind="zig", version="zig (stand-in)")
    on_x86 = os.uname().machine in ("x86_64", "amd64")
    assert ("-mf16c" in toolchain.target_flags(clang)) == on_x86
    assert toolchain.target_flags(zig) == ()  # zig's driver parses target options itself: not tried
    monkeypatch.setattr(toolchain, "_host_cpu_features", lambda: frozenset({"sse2", "avx"}))
    assert toolchain.target_flags(clang) == ()  # no F16C: the software conversion
    monkeypatch.setattr(toolchain, "_host_cpu_features", lambda: frozenset({"sse2", "avx", "f16c"}))
    monkeypatch.setenv(toolchain.TARGET_ENV, "generic")
    assert toolchain.target_flags(clang) == ()
    if on_x86:  # the flags are part of the library index key
        native = toolchain.library_index_path("kernel", clang, "checked")
        monkeypatch.setenv(toolchain.TARGET_ENV, "native")
        assert toolchain.library_index_path("kernel", clang, "checked") != native
