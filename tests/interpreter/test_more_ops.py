"""More ops against NumPy: scans, shape ops, umulhi, fdiv, rounding modes, swizzle2d, CAS/exchange."""

import numpy as np
import pytest

from paths import on_path

from .kernels_ops import cas_kernel, swizzle_kernel, tile_op_kernel

RNG = np.random.default_rng(5)
M, N = 4, 8


def _run(op: str, x: np.ndarray, y: np.ndarray, out_dtype, size: int) -> np.ndarray:
    out = np.zeros(size, out_dtype)
    on_path(tile_op_kernel, "interpreter")[(1,)](x, y, out, OP=op, M=M, N=N)
    return out


def _pairwise_f16_rtz(x: np.ndarray) -> np.ndarray:
    near = x.astype(np.float16)
    too_big = np.abs(near.astype(np.float64)) > np.abs(x.astype(np.float64))
    return np.where(too_big, np.nextafter(near, np.float16(0)), near).astype(np.float16)


@pytest.mark.parametrize("op", ["cumprod", "argmin", "interleave", "cat", "permute", "expand_broadcast", "T"])
def test_shape_and_scan_ops(op) -> None:
    x = RNG.standard_normal((M, N)).astype(np.float32)
    y = RNG.standard_normal((M, N)).astype(np.float32)
    want = {"cumprod": lambda: np.cumprod(x, axis=1).ravel(),
            "argmin": lambda: x.argmin(axis=1).astype(np.int32),
            "interleave": lambda: np.stack([x, y], -1).ravel(),
            "cat": lambda: np.concatenate([x, y]).ravel(),
            "permute": lambda: x.reshape(M, N // 2, 2).transpose(2, 0, 1).ravel(),
            "expand_broadcast": lambda: np.repeat(x.sum(1, keepdims=True), N, 1).ravel(),
            "T": lambda: x.T.ravel()}[op]()
    got = _run(op, x, y, want.dtype, want.size)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_umulhi() -> None:
    x = RNG.integers(0, 2**32, (M, N), dtype=np.uint64).astype(np.uint32)
    y = RNG.integers(0, 2**32, (M, N), dtype=np.uint64).astype(np.uint32)
    got = _run("umulhi", x, y, np.uint32, M * N)
    np.testing.assert_array_equal(got, ((x.astype(np.uint64) * y.astype(np.uint64)) >> np.uint64(32)).ravel())
    xi = RNG.integers(-2**31, 2**31, (M, N)).astype(np.int32)
    yi = RNG.integers(-2**31, 2**31, (M, N)).astype(np.int32)
    got = _run("umulhi", xi, yi, np.int32, M * N)
    # the high word of the unsigned product of the bit patterns, as in Triton 3.9 (umulhi(-5, 3) == 2)
    want = np.array([((int(a) % 2**32) * (int(b) % 2**32)) >> 32 for a, b in zip(xi.ravel(), yi.ravel())],
                    np.int64).astype(np.uint32).view(np.int32)
    np.testing.assert_array_equal(got, want)


def test_fdiv_and_rtz_rounding() -> None:
    x = RNG.standard_normal((M, N)).astype(np.float32)
    y = (RNG.standard_normal((M, N)) + 3).astype(np.float32)
    np.testing.assert_array_equal(_run("fdiv", x, y, np.float32, M * N), (x / y).ravel())
    np.testing.assert_array_equal(_run("rtz", x, y, np.float16, M * N), _pairwise_f16_rtz(x).ravel())


def test_cumsum_widens_small_integers() -> None:
    x = np.full((M, N), 100, np.int8)
    got = _run("cumsum_int8", x, x, np.int32, M * N)  # int8 sums accumulate and return int32
    np.testing.assert_array_equal(got, np.cumsum(x.astype(np.int32), axis=1).ravel())


def _swizzle_ref(i, j, size_i, size_j, size_g):
    ij = i * size_j + j
    size_gj = size_g * size_j
    group_id = ij // size_gj
    off_i = group_id * size_g
    size_g = min(size_i - off_i, size_g)
    ij = ij % size_gj
    return off_i + ij % size_g, ij // size_g


def test_swizzle2d() -> None:
    out = np.zeros((5, 3, 2), np.int32)
    on_path(swizzle_kernel, "interpreter")[(5, 3)](out, M=5, N=3, G=2)
    want = np.array([[_swizzle_ref(i, j, 5, 3, 2) for j in range(3)] for i in range(5)], np.int32)
    np.testing.assert_array_equal(out, want)


def test_atomic_cas_and_xchg() -> None:
    lock = np.zeros(2, np.int32)
    out = np.zeros(8, np.int32)
    on_path(cas_kernel, "interpreter")[(4,)](lock, out)
    assert lock[0] == 1 and lock[1] == 3  # only program 0's CAS succeeds; the last exchange wins
    np.testing.assert_array_equal(out.reshape(4, 2), [[0, 0], [1, 0], [1, 1], [1, 2]])
