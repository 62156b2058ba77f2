"""tl.dot with operands larger than Metal's 32 KB of threadgroup memory: staged in slices of K instead of refused
(it was OutOfResources for 64x128x128 float16), on every path against NumPy."""

import numpy as np
import pytest

import enceladus
from paths import run_on_all_paths

from . import big_dot_kernels as bk

RNG = np.random.default_rng(64)
BF16 = pytest.importorskip("ml_dtypes").bfloat16


def _operands(m, n, k, dtype):
    if dtype == "int8":
        return RNG.integers(-8, 8, (m, k)).astype(np.int8), RNG.integers(-8, 8, (k, n)).astype(np.int8)
    dt = BF16 if dtype == "bfloat16" else np.dtype(dtype)
    # small integers: every product and sum is exact, so the order of the K slices cannot change the result
    return RNG.integers(-4, 5, (m, k)).astype(dt), RNG.integers(-4, 5, (k, n)).astype(dt)


@pytest.mark.parametrize("m,n,k,dtype,out", [(64, 128, 128, "float16", "float32"),  # the case
                                             (64, 64, 256, "float32", "float32"),
                                             (32, 128, 256, "bfloat16", "float32"),
                                             (64, 128, 256, "int8", "int32")])
def test_big_dot(m, n, k, dtype, out):
    a, b = _operands(m, n, k, dtype)
    ck = enceladus.compile(bk.big_dot_kernel, {"a_ptr": f"*{_sig(dtype)}", "b_ptr": f"*{_sig(dtype)}",
                                               "c_ptr": f"*{_sig(out)}"}, {"M": m, "N": n, "K": k,
                                                                            "OUT": _tl(out)})
    assert any("slices of K" in note for note in ck.metadata["notes"]), ck.metadata["notes"]
    assert ck.metadata["threadgroup_memory"] <= 32768
    want = (a.astype(np.float64) @ b.astype(np.float64) + 1).astype(out)
    run_on_all_paths(bk.big_dot_kernel, (1,), lambda: (a, b, np.zeros((m, n), out)), lambda *x: {2: want},
                     constexprs={"M": m, "N": n, "K": k, "OUT": _tl(out)}, rtol=0, atol=0)


def test_big_dot_in_a_k_loop():
    bm, bn, bk_, K = 64, 128, 128, 384
    a, b = _operands(bm, bn, K, "float16")
    want = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    run_on_all_paths(bk.big_dot_loop_kernel, (1,), lambda: (a, b, np.zeros((bm, bn), np.float32), K),
                     lambda *x: {2: want}, constexprs={"BM": bm, "BN": bn, "BK": bk_}, rtol=0, atol=0)


def test_big_batched_dot():
    bsz, m, n, k = 2, 32, 32, 256
    a = RNG.integers(-4, 5, (bsz, m, k)).astype(np.float32)
    b = RNG.integers(-4, 5, (bsz, k, n)).astype(np.float32)
    run_on_all_paths(bk.big_batched_dot_kernel, (1,), lambda: (a, b, np.zeros((bsz, m, n), np.float32)),
                     lambda *x: {2: a @ b}, constexprs={"B": bsz, "M": m, "N": n, "K": k}, rtol=0, atol=0)


def _sig(name):
    return {"float16": "fp16", "float32": "fp32", "bfloat16": "bf16", "int8": "i8", "int32": "i32"}[name]


def _tl(name):
    import enceladus.language as tl

    return {"float32": tl.float32, "int32": tl.int32}[name]
