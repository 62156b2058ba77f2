"""Conformance: broadcasting, where, reductions on every axis, scans, shape ops and dot shapes."""

from __future__ import annotations

import numpy as np
import pytest

from paths import run_on_all_paths

from . import kernels as K
from .reference import npd

RNG = np.random.default_rng(7)


def test_broadcasting_and_where():
    M, N = 8, 16
    r = RNG.uniform(-4, 4, M).astype(np.float32)
    c = RNG.uniform(-4, 4, N).astype(np.float32)
    for s in (1.5, 3.0):
        want = np.concatenate([(r[:, None] * 10 + c[None, :]).ravel(),
                               (np.broadcast_to(r[:, None], (M, N)) + np.float32(s)).ravel(),
                               (c[None, :] - r[:, None] + np.float32(s * 2)).ravel(),
                               np.where(r[:, None] > c[None, :], r[:, None], c[None, :]).ravel(),
                               (r[:, None] + c[None, :] if s > 2 else np.zeros((M, N))).ravel()]).astype(np.float32)
        run_on_all_paths(K.broadcasting, (1,), lambda s=s: [r.copy(), c.copy(), np.zeros(5 * M * N, np.float32), s],
                         lambda *a, want=want: {2: want}, constexprs={"M": M, "N": N})


SUM_TYPE = {"int8": "int32", "uint8": "uint32", "int64": "int64", "float16": "float16", "bfloat16": "bfloat16",
            "float32": "float32"}
REDUCE_CASES = [("int8", 0), ("int8", 1), ("int8", 2), ("float32", 0), ("float32", 1), ("float32", 2),
                ("uint8", 1), ("int64", 2), ("float16", 1), ("bfloat16", 0)]


@pytest.mark.parametrize("t,axis", REDUCE_CASES, ids=[f"{t}-axis{a}" for t, a in REDUCE_CASES])
def test_reductions_on_every_axis(t, axis):
    A, B, C = 2, 4, 8
    d = npd(t)
    if d.kind in "iu":
        info = np.iinfo(d)
        x = RNG.integers(max(info.min, -100), min(info.max, 100), (A, B, C)).astype(d)
        x[0, 0, 0] = info.max  # sums of narrow types must not wrap in the narrow type
        x.flat[-1] = info.max
    else:
        x = RNG.integers(-8, 9, (A, B, C)).astype(np.float32).astype(d)  # ties for argmax/argmin
    out_n = x.size // x.shape[axis]
    st = npd(SUM_TYPE[t])
    with np.errstate(over="ignore"):  # int64 sums wrap in int64
        total = (x.astype(np.float64).sum(axis=axis).astype(st) if d.kind == "f" or t == "bfloat16"
                 else x.astype(st).sum(axis=axis, dtype=st))
    want = {2: total.ravel(), 3: x.max(axis=axis).ravel(), 4: x.min(axis=axis).ravel(),
            5: x.argmax(axis=axis).astype(np.int32).ravel(), 6: x.argmin(axis=axis).astype(np.int32).ravel()}
    is_int = d.kind in "iu"
    if is_int:
        want[7] = np.bitwise_xor.reduce(x, axis=axis).ravel()

    def make_args():
        return [x.ravel().copy(), np.zeros(out_n, st), np.zeros(out_n, d), np.zeros(out_n, d),
                np.zeros(out_n, np.int32), np.zeros(out_n, np.int32), np.zeros(out_n, d)]

    # integer inputs are small integers: float sums are exact in every order
    run_on_all_paths(K.reductions3d, (1,), lambda: [0, *make_args()][1:], lambda *a: {i - 1: w for i, w in want.items()},
                     constexprs={"A": A, "B": B, "C": C, "AXIS": axis, "IS_INT": is_int, "OUT": out_n}, rtol=0, atol=0)


def test_keep_dims_on_a_3d_tile():
    x = np.arange(64, dtype=np.float32)
    run_on_all_paths(K.keep_dims_3d, (1,), lambda: [x.copy(), np.zeros(32, np.float32)],
                     lambda *a: {1: x.reshape(2, 4, 8).sum(axis=0).ravel()})


def test_reduce_over_all_axes():
    x = RNG.uniform(-1, 1, (16, 8)).astype(np.float32)
    want = np.array([x.sum(), x.max(), x.min(), x.sum() * 0.5], np.float32)
    run_on_all_paths(K.reduce_all, (1,), lambda: [x.ravel().copy(), np.zeros(4, np.float32)],
                     lambda *a: {1: want}, constexprs={"M": 16, "N": 8}, rtol=1e-5, atol=1e-5)


def c_mod(a: np.ndarray, m: int) -> np.ndarray:
    return np.fmod(a, m)


@pytest.mark.parametrize("axis", [0, 1])
def test_scans(axis):
    M, N = 8, 16
    x = RNG.integers(0, 20, (M, N)).astype(np.int32)
    with np.errstate(over="ignore"):
        rev_prod = np.flip(np.cumprod(np.flip(x, axis), axis=axis, dtype=np.int32), axis)
        red = x.sum(axis=axis) * 1000 + x.max(axis=axis)
        want = np.concatenate([np.cumsum(x, axis, dtype=np.int32).ravel(),
                               np.flip(np.cumsum(np.flip(x, axis), axis, dtype=np.int32), axis).ravel(),
                               np.cumprod(x % 3 + 1, axis, dtype=np.int32).ravel(),
                               c_mod(rev_prod, 1000).ravel(),
                               (np.cumsum(x, axis, dtype=np.int32) - np.maximum.accumulate(x, axis)).ravel(),
                               red.astype(np.int32)])
    size = 5 * M * N + red.size

    def check(args, _e, path):
        np.testing.assert_array_equal(args[1][:size], want, err_msg=f"{path}: scans on axis {axis}")

    run_on_all_paths(K.scans, (1,), lambda: [x.ravel().copy(), np.zeros(6 * M * N, np.int32)], lambda *a: {},
                     check=check, constexprs={"M": M, "N": N, "AXIS": axis})


@pytest.mark.parametrize("dtype", ["int32", "uint32"])
def test_shape_ops(dtype):
    M, N = 4, 8
    # uint32 too: the shape ops move bits whatever their type (join/permute/trans of uint32 are corpus features)
    x = (np.arange(M * N, dtype=np.int64).reshape(M, N) * 3 + (-7 if dtype == "int32" else 7)).astype(dtype)
    r = np.arange(M, dtype=np.int32)
    size = M * N
    want = np.concatenate([x.T.ravel(), x.T.ravel(), x.ravel(), x.ravel(), np.flip(x, 1).ravel(),
                           (x[:, 0::2] - x[:, 1::2]).ravel(), np.stack([x, x + 1], -1).ravel(),
                           np.stack([r, r * 10], -1).ravel()])
    n = want.size

    def check(args, _e, path):
        out = args[1]
        np.testing.assert_array_equal(out[:n][: 5 * size + size // 2], want[: 5 * size + size // 2], err_msg=path)
        np.testing.assert_array_equal(out[6 * size: 8 * size], want[5 * size + size // 2: 7 * size + size // 2],
                                      err_msg=f"{path}: join")
        np.testing.assert_array_equal(out[8 * size: 8 * size + 2 * M], np.stack([r, r * 10], -1).ravel(),
                                      err_msg=f"{path}: interleave")
        # cat(can_reorder=True) may order its elements any way: compare as multisets
        np.testing.assert_array_equal(np.sort(out[8 * size + 2 * M: 8 * size + 4 * M]),
                                      np.sort(np.concatenate([r, r * 10])), err_msg=f"{path}: cat")

    run_on_all_paths(K.shape_ops, (1,), lambda: [x.ravel().copy(), np.zeros(9 * size, dtype)], lambda *a: {},
                     check=check, constexprs={"M": M, "N": N})


DOTS = [(16, 16, 16, "float16", False), (32, 64, 16, "float32", False), (8, 8, 8, "bfloat16", False),
        (16, 32, 32, "int8", False), (64, 32, 16, "float32", True), (16, 16, 64, "float16", True)]


@pytest.mark.parametrize("M,N,K_,t,acc", DOTS, ids=[f"{m}x{n}x{k}-{t}{'-acc' if a else ''}" for m, n, k, t, a in DOTS])
def test_dot_shapes(M, N, K_, t, acc):
    d = npd(t)
    if t == "int8":
        a = RNG.integers(-128, 128, (M, K_)).astype(np.int8)
        b = RNG.integers(-128, 128, (K_, N)).astype(np.int8)
        out_t = np.int32
        want = a.astype(np.int64) @ b.astype(np.int64)
    else:
        a = RNG.uniform(-1, 1, (M, K_)).astype(np.float32).astype(d)
        b = RNG.uniform(-1, 1, (K_, N)).astype(np.float32).astype(d)
        out_t = np.float32
        want = a.astype(np.float64) @ b.astype(np.float64)
    c = (RNG.uniform(-1, 1, (M, N)) if t != "int8" else RNG.integers(-1000, 1000, (M, N))).astype(out_t)
    if acc:
        want = want + c
    # fp16/bf16 products are exact in fp32 and accumulate in fp32; fp32 multiplies exactly in fp32 (no tf32)
    run_on_all_paths(K.dot_kernel, (1,), lambda: [a.copy(), b.copy(), c.copy(), np.zeros((M, N), out_t)],
                     lambda *args: {3: want.astype(out_t)}, constexprs={"M": M, "N": N, "K": K_, "USE_ACC": acc},
                     rtol=1e-5, atol=1e-5)
