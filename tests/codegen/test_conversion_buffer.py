"""A layout conversion whose buffer, padded by one element per row (against bank conflicts), would exceed the
32 KB of threadgroup memory while the unpadded buffer fits (a [128, 128] fp16 tile: 33,024 bytes; tutorial
06's ``_attn_bwd`` with head dim 128) is compiled without the padding, its columns XOR-swizzled by row,
instead of being refused. Conversions that fit padded keep the padding.

Each case runs on every path against NumPy between sentinels; on the cpu path it checks the threadgroup
memory declared and runs once more in debug mode, whose threadgroup-memory race detector reports a missing
barrier or an element written twice or read unwritten (docs/cpu_backend.md)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from enceladus.compiler.codegen_msl.movement import conversion_buffer
from paths import cpu_available, on_path, path_missing, run_on_all_paths


@enceladus.jit
def sym_kernel(X, Y, N: tl.constexpr):
    """Y = X + X^T: X is needed in two layouts, so one of them comes through threadgroup memory."""
    r = tl.arange(0, N)
    x = tl.load(X + r[:, None] * N + r[None, :])
    tl.store(Y + r[:, None] * N + r[None, :], x + tl.trans(x))


@enceladus.jit
def sym3_kernel(X, Y, B: tl.constexpr, N: tl.constexpr):
    """Y[b] = X[b] + X[b]^T for a [B, N, N] tile (the rows of the conversion buffer span two dimensions)."""
    b = tl.arange(0, B)[:, None, None]
    i = tl.arange(0, N)[None, :, None]
    j = tl.arange(0, N)[None, None, :]
    offs = b * (N * N) + i * N + j
    x = tl.load(X + offs)
    tl.store(Y + offs, x + tl.permute(x, (0, 2, 1)))


def _check_cpu(kernel, make, ref, meta, grid, tg_bytes, swizzled):
    if not cpu_available():
        path_missing("cpu", "no C++ compiler")
    ck = kernel.warmup(*make(), **meta, grid=grid)
    assert ck.metadata["threadgroup_memory"] == tg_bytes
    notes = [n for n in ck.metadata["notes"] if "converted from" in n]
    assert notes and all(("XOR-swizzled" in n) == swizzled for n in notes), notes
    with warnings.catch_warnings():  # an instrumented build that fails would only warn
        warnings.simplefilter("error")
        args = make()
        on_path(kernel, "cpu")[grid](*args, **meta, debug=True)  # the race detector raises on a race
    np.testing.assert_array_equal(args[1], ref)


@pytest.mark.parametrize("dtype,n,swizzled", [(np.float16, 128, True), (np.float16, 64, False),
                                              (np.int16, 128, True), (np.float32, 64, False)],
                         ids=lambda v: getattr(v, "__name__", str(v)))
def test_square_conversion(dtype, n, swizzled):
    rng = np.random.default_rng(n)
    x = (rng.integers(-200, 200, (n, n))).astype(dtype)
    make = lambda: (x.copy(), np.zeros_like(x))  # noqa: E731
    run_on_all_paths(sym_kernel, (1,), make, lambda *a: {1: x + x.T}, constexprs={"N": n}, rtol=0, atol=0)
    padded = n * (n + 1) * x.itemsize
    _check_cpu(sym_kernel, make, x + x.T, {"N": n}, (1,), n * n * x.itemsize if swizzled else padded, swizzled)


def test_three_dimensional_conversion():
    """[4, 64, 64] fp16: 4 * 64 * 65 * 2 = 33,280 bytes padded, 32,768 unpadded."""
    B, N = 4, 64
    x = np.random.default_rng(3).standard_normal((B, N, N)).astype(np.float16)
    ref = x + np.transpose(x, (0, 2, 1))
    make = lambda: (x.copy(), np.zeros_like(x))  # noqa: E731
    run_on_all_paths(sym3_kernel, (1,), make, lambda *a: {1: ref}, constexprs={"B": B, "N": N}, rtol=0, atol=0)
    _check_cpu(sym3_kernel, make, ref, {"B": B, "N": N}, (1,), B * N * N * 2, True)


def test_conversion_buffer_choice():
    assert conversion_buffer((128, 128), 2) == (False, True)  # 33,024 bytes padded
    assert conversion_buffer((64, 128), 2) == (True, False)  # 16,512 bytes padded: fits
    assert conversion_buffer((64, 128), 4) == (False, True)  # 33,024 bytes padded
    assert conversion_buffer((256,), 4) == (False, False)  # 1-D: no rows to pad
    assert conversion_buffer((128, 96), 2) == (True, False)  # 24,832 bytes: fits padded
    assert conversion_buffer((170, 96), 2) == (False, False)  # 32,980 padded; 96 columns: no swizzle


@enceladus.jit
def pooled_kernel(X, Y, Z, N: tl.constexpr):
    """Two [N, N] conversions (one in a loop) that cannot each have their own 32 KB array: they share one
    pool, carved into typed arrays by pointer casts (which the debug build's race detector must follow)."""
    r = tl.arange(0, N)
    offs = r[:, None] * N + r[None, :]
    x = tl.load(X + offs)
    tl.store(Y + offs, x + tl.trans(x))
    for _ in range(2):
        z = tl.load(Z + offs)
        tl.store(Z + offs, z + tl.trans(z))


def test_pooled_conversions_are_race_checked():
    N = 128
    rng = np.random.default_rng(5)
    x = rng.integers(-50, 50, (N, N)).astype(np.float16)
    z = rng.integers(-10, 10, (N, N)).astype(np.float16)
    ref = z + z.T
    ref = ref + ref.T
    make = lambda: (x.copy(), np.zeros_like(x), z.copy())  # noqa: E731
    run_on_all_paths(pooled_kernel, (1,), make, lambda *a: {1: x + x.T, 2: ref}, constexprs={"N": N},
                     rtol=0, atol=0)
    if not cpu_available():
        path_missing("cpu", "no C++ compiler")
    ck = pooled_kernel.warmup(*make(), N=N, grid=(1,))
    assert "enc_pool" in ck.asm["msl"] and ck.metadata["threadgroup_memory"] == N * N * 2
    args = make()
    with warnings.catch_warnings():  # a failed instrumented build (no race checks) warns: an error here
        warnings.simplefilter("error")
        on_path(pooled_kernel, "cpu")[(1,)](*args, N=N, debug=True)
    np.testing.assert_array_equal(args[2], ref)
