"""tl.reduce_or (bitwise-or reduction, as Triton's) on every path vs NumPy: added by following the recipe in
docs/architecture.md (language stub, typing rule, interpreter rule; it lowers to the existing reduce op)."""

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from enceladus import CompilationError
from paths import run_on_all_paths

RNG = np.random.default_rng(14)


@enceladus.jit
def reduce_or_2d(x_ptr, out_ptr, AXIS: tl.constexpr, KEEP: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(x_ptr + rm[:, None] * BN + rn[None, :])
    if KEEP:
        r = x.reduce_or(AXIS, keep_dims=True)  # the tile method
        r = tl.reshape(r, (BN,)) if AXIS == 0 else tl.reshape(r, (BM,))
    else:
        r = tl.reduce_or(x, AXIS)
    offs = tl.arange(0, BN) if AXIS == 0 else tl.arange(0, BM)
    tl.store(out_ptr + offs, r)


@enceladus.jit
def reduce_or_all(x_ptr, out_ptr, B: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, B))
    tl.store(out_ptr, tl.reduce_or(x, None))


@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32, np.uint64])
def test_reduce_or_2d(dtype, axis, keep):
    BM, BN = 8, 32
    info = np.iinfo(dtype)
    x = RNG.integers(max(info.min, -(2**62)), min(info.max, 2**62), (BM, BN), dtype=dtype, endpoint=True)
    x[:, 3] = 0  # a column (and rows' elements) of zeros: or must not invent bits
    n = BN if axis == 0 else BM

    def reference(x, out):
        return {1: np.bitwise_or.reduce(x, axis=axis)}

    run_on_all_paths(reduce_or_2d, (1,), lambda: (x.copy(), np.zeros(n, dtype)), reference,
                     constexprs={"AXIS": axis, "KEEP": keep, "BM": BM, "BN": BN})


def test_reduce_or_of_flags_and_of_everything():
    x = np.zeros(64, np.int32)
    x[[5, 40]] = [1 << 3, 1 << 30]
    run_on_all_paths(reduce_or_all, (1,), lambda: (x.copy(), np.zeros(1, np.int32)),
                     lambda x, out: {1: np.array([np.bitwise_or.reduce(x)], np.int32)}, constexprs={"B": 64})
    flags = (RNG.random(64) < 0.05)
    run_on_all_paths(reduce_or_all, (1,), lambda: (flags.copy(), np.zeros(1, np.bool_)),
                     lambda x, out: {1: np.array([x.any()])}, constexprs={"B": 64})


def test_reduce_or_refuses_floats():
    with pytest.raises(CompilationError, match="tl.reduce_or needs an integer tile") as info:
        enceladus.compile(reduce_or_all, signature="*fp32, *fp32", constexprs={"B": 16})
    assert info.value.fix and "x.to(tl.int32)" in info.value.fix
