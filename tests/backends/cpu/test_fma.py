"""fma on the cpu backend: one instruction where the building machine has FMA, the same bits as libm's fmaf.

Kernels are built with ``-mfma`` when the machine has it (``toolchain.target_flags``, ``ENCELADUS_CPU_TARGET=native``):
each ``fma()`` (the compiler emits one for every multiply whose only use is an add, ``enable_fp_fusion``) is then
one instruction instead of a call of libm's ``fmaf``. Both round the exact ``a * b + c`` once, so both builds give
the same bits; ``-ffp-contract=off`` keeps every other ``a * b + c`` unfused, as before.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from enceladus.backends.cpu import toolchain
from paths import needs_cpu

pytestmark = needs_cpu

MSL = """
#include <metal_stdlib>
using namespace metal;
kernel void fused(device const float* a [[buffer(0)]], device const float* b [[buffer(1)]],
                  device const float* c [[buffer(2)]], device float* f [[buffer(3)]], device float* u [[buffer(4)]],
                  device half* h [[buffer(5)]], uint i [[thread_position_in_grid]]) {
    f[i] = fma(a[i], b[i], c[i]);
    u[i] = a[i] * b[i] + c[i];
    h[i] = fma(half(a[i]), half(b[i]), half(c[i]));
}
"""


def _run(backend, a, b, c):
    f, u, h = np.zeros_like(a), np.zeros_like(a), np.zeros(a.size, np.float16)
    lib = backend.compile(MSL)
    bufs = {k: v.ctypes.data for k, v in enumerate((a, b, c, f, u, h))}
    lib.function("fused").dispatch_threads((a.size, 1, 1), (256, 1, 1), bufs)
    return lib, f, u, h


def _inputs():
    rng = np.random.default_rng(0)
    n = 1 << 18
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    c = (-a * b).astype(np.float32)  # cancellation: the fused result keeps the product's rounding error
    c[::2] = rng.standard_normal(n // 2).astype(np.float32) * np.float32(1e-3)
    special = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 3.4e38, 1e-45, -1e-40], np.float32)
    a[:8], b[:8], c[:8] = special, special[::-1], special[3:].tolist() + special[:3].tolist()
    return a, b, c


def test_native_and_generic_builds_give_the_same_bits(backend, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, c = _inputs()
    runs = {}
    for target in ("native", "generic"):
        monkeypatch.setenv(toolchain.TARGET_ENV, target)
        runs[target] = _run(backend, a, b, c)
    (native, *got), (generic, *want) = runs["native"], runs["generic"]
    has_fma = {"f16c", "avx", "fma"} <= toolchain._host_cpu_features() and os.uname().machine in ("x86_64", "amd64")
    assert ("-mfma" in native._flags) == (has_fma and backend.compiler.kind in ("clang", "gcc"))
    assert "-mfma" not in generic._flags
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.view(np.uint32 if g.dtype == np.float32 else np.uint16),
                                      w.view(np.uint32 if w.dtype == np.float32 else np.uint16))
    f, u, _ = got
    # the fused result: exact product and sum rounded once (float64 holds a float32 product exactly)
    exact = (a[8:].astype(np.float64) * b[8:] + c[8:]).astype(np.float32)
    np.testing.assert_array_equal(f[8:], exact)
    # a * b + c without fma() stays two roundings (-ffp-contract=off), which differ from the fused one here
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(u, a * b + c)
    assert np.count_nonzero(f[8:] != u[8:]) > 1000


def test_target_flags_add_fma_where_the_machine_has_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(toolchain.TARGET_ENV, "native")
    clang = toolchain.CompilerInfo(command=("clang++",), kind="clang", version="clang (stand-in)")
    on_x86 = os.uname().machine in ("x86_64", "amd64")
    monkeypatch.setattr(toolchain, "_host_cpu_features", lambda: frozenset({"sse2", "avx", "f16c", "fma"}))
    assert ("-mfma" in toolchain.target_flags(clang)) == on_x86
    with_fma = toolchain.library_index_path("kernel", clang, "checked")
    monkeypatch.setattr(toolchain, "_host_cpu_features", lambda: frozenset({"sse2", "avx", "f16c"}))
    assert "-mfma" not in toolchain.target_flags(clang)
    assert ("-mf16c" in toolchain.target_flags(clang)) == on_x86
    if on_x86:  # the flags are part of the library index key: a shared cache never mixes the two
        assert toolchain.library_index_path("kernel", clang, "checked") != with_fma
    monkeypatch.setattr(toolchain, "_host_cpu_features", lambda: frozenset({"sse2", "avx", "fma"}))
    assert toolchain.target_flags(clang) == ()  # no F16C: the generic build, fmaf from libm
