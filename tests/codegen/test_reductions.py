"""Reductions, shape ops, control flow and layout conversions on every path vs NumPy."""

import numpy as np
import pytest

import enceladus
from paths import run_on_all_paths

from . import reduce_kernels as rk

RNG = np.random.default_rng(7)
REF = {"sum": np.sum, "max": np.max, "min": np.min, "argmax": np.argmax, "argmin": np.argmin,
       "xor_sum": np.bitwise_xor.reduce}


def _padded(x, BM, BN, fill):
    out = np.full((BM, BN), fill, x.dtype)
    out[:x.shape[0], :x.shape[1]] = x
    return out


@pytest.mark.parametrize("num_warps", [1, 4, 8])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("op", ["sum", "max", "min", "argmax", "argmin"])
def test_reduce_2d_float(op, axis, num_warps):
    M, N, BM, BN = 13, 50, 16, 64
    x = RNG.standard_normal((M, N)).astype(np.float32)
    x[3, 7] = x[3, 9] = 99.0  # ties break to the lowest index
    x[5, 2] = x[11, 2] = -99.0

    def reference(x, out, M, N):
        xp = _padded(x, 16, 64, 0)  # masked-off lanes load 0
        r = REF[op](xp, axis=axis)
        r = r[:N] if axis == 0 else r[:M]
        return {1: r.astype(np.int32 if op.startswith("arg") else np.float32)}

    out_dtype = np.int32 if op.startswith("arg") else np.float32
    run_on_all_paths(rk.reduce2d_kernel, (1,), lambda: (x, np.zeros(max(M, N), out_dtype)[: (N if axis == 0 else M)],
                                                       M, N),
                     reference, constexprs={"OP": op, "AXIS": axis, "BM": BM, "BN": BN}, num_warps=num_warps,
                     rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype,op", [("int32", "sum"), ("int8", "sum"), ("uint16", "max"), ("int32", "xor_sum"),
                                      ("float16", "sum"), ("int64", "min")])
def test_reduce_2d_dtypes(dtype, op):
    M, N = 8, 32
    x = RNG.integers(-100, 100, (M, N)).astype(dtype) if dtype != "uint16" else RNG.integers(0, 60000, (M, N)).astype(dtype)
    if dtype == "float16":
        x = RNG.standard_normal((M, N)).astype(dtype)
    acc = {"int8": np.int32}.get(dtype, np.dtype(dtype))
    run_on_all_paths(rk.reduce2d_kernel, (1,), lambda: (x, np.zeros(M, acc), M, N),
                     lambda x, out, M, N: {1: REF[op](x.astype(acc) if op == "sum" else x, axis=1).astype(acc)},
                     constexprs={"OP": op, "AXIS": 1, "BM": M, "BN": N}, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("n", [1, 7, 100, 1000, 1024])
def test_reduce_all_axes_to_scalars(n):
    x = RNG.standard_normal(n).astype(np.float32)
    run_on_all_paths(rk.reduce_all_kernel, (1,), lambda: (x, np.zeros(3, np.float32), n),
                     lambda x, out, n: {1: np.array([x.sum(), max(x.max(), 0.0), 2 * x.sum()], np.float32)},
                     constexprs={"BLOCK": 1024}, rtol=1e-5, atol=1e-4)


def test_keep_dims_and_compositions():
    x = RNG.standard_normal((32, 64)).astype(np.float32)

    def reference(x, out):
        c = x - x.sum(1, keepdims=True) / 64
        return {1: c / np.abs(c).max(0, keepdims=True)}

    run_on_all_paths(rk.keep_dims_kernel, (1,), lambda: (x, np.zeros_like(x)), reference,
                     constexprs={"BM": 32, "BN": 64}, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_reduce_3d(axis):
    A, B, C = 4, 8, 16
    x = RNG.standard_normal((A, B, C)).astype(np.float32)
    shape = [s for i, s in enumerate((A, B, C)) if i != axis]
    run_on_all_paths(rk.reduce3d_kernel, (1,), lambda: (x, np.zeros(shape, np.float32)),
                     lambda x, out: {1: x.sum(axis)}, constexprs={"A": A, "B": B, "C": C, "AXIS": axis},
                     rtol=1e-5, atol=1e-5)


def test_reduce_with_user_combine_and_tuples():
    x = RNG.standard_normal(300).astype(np.float32)
    x[17] = x[250] = 10.0
    run_on_all_paths(rk.custom_reduce_kernel, (1,),
                     lambda: (x, np.zeros(1, np.float32), np.zeros(1, np.int32), 300),
                     lambda x, v, i, n: {1: np.array([10.0], np.float32), 2: np.array([17], np.int32)},
                     constexprs={"BLOCK": 512})


def _softmax(x):
    x = x.astype(np.float32)
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("n_cols,num_warps", [(1, 1), (3, 4), (127, 2), (1000, 4), (2049, 8), (8192, 16)])
def test_softmax(n_cols, num_warps, dtype):
    rows = 3
    x = RNG.standard_normal((rows, n_cols)).astype(dtype)
    block = enceladus.next_power_of_2(n_cols)
    run_on_all_paths(rk.softmax_kernel, (rows,), lambda: (x, np.zeros_like(x), rows, n_cols, n_cols),
                     lambda x, out, *_: {1: _softmax(x).astype(dtype)}, constexprs={"BLOCK": block},
                     num_warps=num_warps, rtol=1e-2 if dtype == "float16" else 1e-5, atol=1e-3 if dtype == "float16"
                     else 1e-6)


def test_softmax_resources_are_minimal():
    x = np.zeros((4, 1024), np.float32)
    ck = rk.softmax_kernel.warmup(x, x.copy(), 4, 1024, 1024, BLOCK=1024, num_warps=4)
    assert ck.metadata["barriers"] == 2  # one per cross-SIMD-group reduction
    assert ck.abi.threadgroup_memory == 2 * 4 * 4  # one fp32 partial per SIMD group, per reduction
    assert sum(a.kind == "load" for a in ck.accesses) == 1  # the row is read once
    ck = rk.softmax_kernel.warmup(x, x.copy(), 4, 1024, 1024, BLOCK=32, num_warps=1)
    assert ck.metadata["barriers"] == 0 and ck.abi.threadgroup_memory == 0  # one SIMD group: shuffles only


SHAPE_REF = {
    "trans": lambda x: x.T, "T": lambda x: x.T + 1, "reshape": lambda x: x.reshape(x.shape[1], x.shape[0]),
    "ravel": lambda x: x.ravel(), "flip": lambda x: x[:, ::-1], "flip0": lambda x: x[::-1],
    "cat": lambda x: np.concatenate([x, 2 * x]),
    "split": lambda x: np.concatenate([x[:, 0::2], x[:, 1::2]], axis=1),
    "join": lambda x: np.stack([x, x + 100], axis=-1),
    "interleave": lambda x: np.stack([x, -x], axis=-1).reshape(x.shape[0], -1),
    "broadcast_to": lambda x: np.broadcast_to(x[0], x.shape) + np.arange(x.shape[0])[:, None],
    "permute3": lambda x: x.reshape(2, x.shape[0] // 2, x.shape[1]).transpose(2, 0, 1),
    "squeeze": lambda x: x.sum(1),
}


@pytest.mark.parametrize("op", sorted(SHAPE_REF))
def test_shape_ops(op):
    BM, BN = 16, 32
    x = RNG.integers(-50, 50, (BM, BN)).astype(np.int32)
    want = SHAPE_REF[op](x).astype(np.int32)
    run_on_all_paths(rk.shape_ops_kernel, (1,), lambda: (x, np.zeros(want.shape, np.int32)),
                     lambda x, out: {1: want}, constexprs={"OP": op, "BM": BM, "BN": BN})


@pytest.mark.parametrize("n_cols", [1, 100, 256, 1000])
def test_runtime_loop_with_carried_tile(n_cols):
    x = RNG.standard_normal((3, n_cols)).astype(np.float32)
    run_on_all_paths(rk.loop_sum_kernel, (3,), lambda: (x, np.zeros(3, np.float32), n_cols, n_cols),
                     lambda x, out, *_: {1: x.sum(1)}, constexprs={"BLOCK": 64}, rtol=1e-5, atol=1e-5)


def _control_ref(mode, n, programs, block):
    out = np.zeros((programs, block), np.int32)
    offs = np.arange(block)
    for pid in range(min(n, programs)):
        if mode == 0:
            v = [offs * 2, offs + 100, -offs][pid % 3]
        elif mode == 1:
            v = offs * pid
        elif mode == 2:
            v = np.full(block, sum(i * (j + 1) for i in range(pid, 0, -1) for j in range(2)))
        else:
            k = pid * 2 if pid > 1 else pid + 7
            v = offs + k
            for s in range(3):
                v = v * 2 + s
        out[pid] = v
    return out


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_control_flow(mode):
    programs, n, block = 6, 5, 16  # program 5 returns early
    run_on_all_paths(rk.control_kernel, (programs,), lambda: (np.zeros((programs, block), np.int32), n),
                     lambda out, n: {0: _control_ref(mode, n, programs, block)},
                     constexprs={"MODE": mode, "BLOCK": block})


def test_loaded_tile_needed_in_two_layouts_is_converted():
    x = RNG.standard_normal((16, 64)).astype(np.float32)
    y = RNG.standard_normal(64).astype(np.float32)
    run_on_all_paths(rk.layout_conversion_kernel, (1,),
                     lambda: (x, y, np.zeros_like(x), np.zeros_like(y)),
                     lambda x, y, o, o2: {2: x + y[None, :], 3: 2 * y}, constexprs={"BM": 16, "BN": 64})


@pytest.mark.parametrize("num_warps", [1, 4])
@pytest.mark.parametrize("shape", [(4, 8), (8, 128), (64, 64), (2, 1024)])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum(shape, axis, reverse, num_warps):
    x = RNG.integers(-5, 5, shape).astype(np.int32)

    def reference(x, out, idx):
        y = np.flip(np.cumsum(np.flip(x, axis), axis), axis) if reverse else np.cumsum(x, axis)
        return {1: y.astype(np.int32)}

    run_on_all_paths(rk.scan2d_kernel, (1,), lambda: (x, np.zeros_like(x), np.zeros_like(x)), reference,
                     constexprs={"OP": "cumsum", "AXIS": axis, "REVERSE": reverse, "BM": shape[0], "BN": shape[1]},
                     num_warps=num_warps)


def test_cumprod_float():
    x = RNG.uniform(0.9, 1.1, (16, 32)).astype(np.float32)
    run_on_all_paths(rk.scan2d_kernel, (1,), lambda: (x, np.zeros_like(x), np.zeros(x.shape, np.int32)),
                     lambda x, out, idx: {1: np.cumprod(x, 1)},
                     constexprs={"OP": "cumprod", "AXIS": 1, "REVERSE": False, "BM": 16, "BN": 32}, rtol=1e-5)


@pytest.mark.parametrize("reverse", [False, True])
def test_associative_scan_non_commutative_tuple(reverse):
    # pair_first keeps the index of the first element it combined: the row's first element scanning forward,
    # the row's last element scanning in reverse (a reverse scan combines from the end, like Triton's)
    BM, BN = 8, 256
    x = RNG.integers(-5, 5, (BM, BN)).astype(np.int32)
    flat = np.arange(BM * BN, dtype=np.int32).reshape(BM, BN)

    def reference(x, out, idx):
        if reverse:
            return {1: np.flip(np.cumsum(np.flip(x, 1), 1), 1).astype(np.int32),
                    2: np.broadcast_to(flat[:, -1:], (BM, BN)).copy()}
        return {1: np.cumsum(x, 1).astype(np.int32), 2: np.broadcast_to(flat[:, :1], (BM, BN)).copy()}

    run_on_all_paths(rk.scan2d_kernel, (1,), lambda: (x, np.zeros_like(x), np.zeros_like(x)), reference,
                     constexprs={"OP": "pair", "AXIS": 1, "REVERSE": reverse, "BM": BM, "BN": BN}, num_warps=4)


NARROW = [("int1", "int32", "int1"), ("int8", "int32", "int8"), ("uint8", "int32", "uint8"),
          ("int16", "int32", "int16"), ("uint16", "int32", "uint16"), ("float16", "float32", "float16"),
          ("bfloat16", "float32", "float32"), ("int32", "int32", "int32"), ("float32", "float32", "float32")]


@pytest.mark.parametrize("indices", [False, True], ids=["values", "with_indices"])
@pytest.mark.parametrize("src,want,want_indexed", NARROW, ids=[n[0] for n in NARROW])
def test_max_min_result_types_follow_triton(src, want, want_indexed, indices):
    """Found by the long fuzz campaign: tl.max/tl.min of int1/int8/int16/fp16 tiles keep the input type in neither
    Triton path (standard.py: types narrower than 32 bits reduce in int32/fp32 unless indices are asked for)."""
    import enceladus.language as tl
    from enceladus.language.dtypes import bfloat16_numpy

    def to_numpy_dtype(name):
        return bfloat16_numpy() if name == "bfloat16" else np.dtype("bool" if name == "int1" else name)

    N = 32
    npt = to_numpy_dtype(src)
    if src == "int1":
        x = np.arange(N) % 3 == 0
    elif src in ("float16", "bfloat16", "float32"):
        x = (np.linspace(-1, 1, N) * 60000 if src != "float32" else np.linspace(-3e38, 3e38, N)).astype(npt)
    else:
        info = np.iinfo(npt)
        x = np.linspace(info.min, info.max, N).astype(npt)
    result = want_indexed if indices else want
    out_t = to_numpy_dtype(result)

    def reference(x, out):
        hi, lo = x.astype(out_t).max(), x.astype(out_t).min()
        if result == "int1":  # int1 arithmetic wraps (Triton 3.9: True + True == False)
            return {1: np.array([(int(hi) * 2) & 1, (int(lo) * 2) & 1], bool)}
        with np.errstate(over="ignore"):
            return {1: np.array([hi + hi, lo + lo], out_t)}

    run_on_all_paths(rk.narrow_max_min, (1,), lambda: (x.copy(), np.zeros(2, out_t)), reference,
                     constexprs={"N": N, "WANT": getattr(tl, result), "INDICES": indices}, rtol=0, atol=0)
