"""tl.dot: simdgroup_matrix and multiply-add paths on every available path vs NumPy."""

import inspect
import re

import numpy as np
import pytest

import enceladus
from enceladus import CompilationError
from paths import run_on_all_paths

from . import dot_kernels as dk

RNG = np.random.default_rng(11)
TOL = {"float32": (1e-4, 1e-4), "float16": (2e-2, 2e-2), "bfloat16": (5e-2, 5e-2)}


def _arrays(dtype, *shapes):
    if dtype == "bfloat16":
        ml_dtypes = pytest.importorskip("ml_dtypes")
        dtype = ml_dtypes.bfloat16
    return [RNG.standard_normal(s).astype(np.float32).astype(dtype) for s in shapes]


def _matmul(M, N, K, dtype, BM, BN, BK, num_warps, epilogue="none", out_dtype=np.float32):
    a, b = _arrays(dtype, (M, K), (K, N))

    def reference(a, b, c, *rest):
        r = a.astype(np.float32) @ b.astype(np.float32)
        if epilogue == "leaky":
            r = r * 0.5
            r = np.where(r >= 0, r, r * np.float32(0.01))
        return {2: r.astype(out_dtype)}

    rtol, atol = TOL[dtype]
    grid = (enceladus.cdiv(M, BM), enceladus.cdiv(N, BN))
    run_on_all_paths(dk.matmul_kernel, grid,
                     lambda: (a, b, np.zeros((M, N), out_dtype), M, N, K, K, 1, N, 1, N, 1), reference,
                     constexprs={"BM": BM, "BN": BN, "BK": BK, "EPILOGUE": epilogue}, num_warps=num_warps,
                     rtol=rtol, atol=atol * np.sqrt(K))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_matmul_ragged(dtype):
    _matmul(257, 129, 77, dtype, 32, 32, 16, 4)


@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
def test_matmul_num_warps(num_warps):
    _matmul(128, 96, 64, "float32", 64, 32, 32, num_warps)


def test_matmul_epilogue_fusion_and_fp16_output():
    _matmul(100, 72, 40, "float16", 32, 64, 16, 4, epilogue="leaky", out_dtype=np.float16)


def test_accumulators_stay_in_registers():
    a = np.zeros((64, 64), np.float16)
    ck = dk.matmul_kernel.warmup(a, a, np.zeros((64, 64), np.float32), 64, 64, 64, 64, 1, 64, 1, 64, 1,
                                 BM=64, BN=64, BK=32, EPILOGUE="leaky", num_warps=4)
    msl = ck.asm["msl"]
    assert "simdgroup_multiply_accumulate" in msl and "simdgroup_half8x8" in msl
    # one staging of A and B per iteration; the accumulator stays in registers across the loop, and only the
    # stored result leaves the fragment layout, once, after the loop, for 16-byte stores (it was stored two
    # adjacent elements per lane)
    assert sum("converted" in note for note in ck.metadata["notes"]) == 1, ck.metadata["notes"]
    assert ck.abi.threadgroup_memory == (64 * 32 + 32 * 64) * 2 + 64 * 65 * 4
    assert ck.metadata["barriers"] == 3  # 2 per K step, 1 for the conversion
    store = [x for x in ck.accesses if x.kind == "store"][0]
    assert store.vector == 4


@pytest.mark.parametrize("M,N,K,out", [(4, 4, 4, "default"), (2, 8, 16, "default"), (16, 16, 16, "fp16"),
                                       (8, 8, 8, "acc")])
def test_small_and_out_dtypes(M, N, K, out):
    a, b = _arrays("float32", (M, K), (K, N))
    out_dtype = np.float16 if out == "fp16" else np.float32

    def reference(a, b, c):
        r = a @ b + (1.0 if out == "acc" else 0.0)
        return {2: r.astype(out_dtype)}

    run_on_all_paths(dk.small_dot_kernel, (1,), lambda: (a, b, np.zeros((M, N), out_dtype)), reference,
                     constexprs={"M": M, "N": N, "K": K, "OUT": out}, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("out", ["default", "int8"])  # out_dtype=tl.int8 is ignored, as in Triton
def test_int8_dot_accumulates_in_int32(out):
    a = RNG.integers(-128, 128, (16, 32)).astype(np.int8)
    b = RNG.integers(-128, 128, (32, 16)).astype(np.int8)
    run_on_all_paths(dk.small_dot_kernel, (1,), lambda: (a, b, np.zeros((16, 16), np.int32)),
                     lambda a, b, c: {2: a.astype(np.int32) @ b.astype(np.int32)},
                     constexprs={"M": 16, "N": 16, "K": 32, "OUT": out})


def test_batched_dot():
    a, b = _arrays("float32", (4, 16, 8), (4, 8, 32))
    run_on_all_paths(dk.batched_dot_kernel, (1,), lambda: (a, b, np.zeros((4, 16, 32), np.float32)),
                     lambda a, b, c: {2: a @ b}, constexprs={"B": 4, "M": 16, "N": 32, "K": 8}, rtol=1e-4, atol=1e-4)


def test_dot_with_transposed_operand_and_reduction_of_the_accumulator():
    a, bt = _arrays("float32", (32, 16), (64, 16))

    def reference(a, bt, c):
        r = a @ bt.T
        return {2: r - r.sum(1, keepdims=True)}

    run_on_all_paths(dk.dot_trans_kernel, (1,), lambda: (a, bt, np.zeros((32, 64), np.float32)), reference,
                     constexprs={"M": 32, "N": 64, "K": 16}, rtol=1e-4, atol=1e-3)


def _marked_line(fn):
    lines, start = inspect.getsourcelines(fn.fn)
    return start + next(i for i, line in enumerate(lines) if "# <- here" in line)


@pytest.mark.parametrize("kernel,sig,message,fix", [
    (dk.bad_dot_shapes, "*fp32", "do not agree", "tl.trans"),
    (dk.bad_dot_dtypes, "*fp32, *fp16", "same dtype", "b.to(a.dtype)"),
])
def test_dot_refusals(kernel, sig, message, fix):
    with pytest.raises(CompilationError) as info:
        enceladus.compile(kernel, signature=sig)
    assert message in info.value.message and fix in info.value.fix
    assert info.value.lineno == _marked_line(kernel)


@pytest.mark.parametrize("M,N,K", [(32, 64, 16), (32, 64, 32), (32, 32, 32)])
def test_values_moving_between_fragment_layouts(M, N, K):
    a = RNG.uniform(0.5, 1.0, (M, K)).astype(np.float32)
    b = RNG.standard_normal((K, N)).astype(np.float32)
    run_on_all_paths(dk.two_dot_layouts_kernel, (1,), lambda: (a, b, np.zeros((M, N), np.float32)),
                     lambda a, b, c: {2: (a @ b) / (a @ a.T).sum(1)[:, None]}, constexprs={"M": M, "N": N, "K": K},
                     rtol=1e-4, atol=1e-5)


def test_explain_shows_and_draws_the_fragment_layout(tmp_path):
    pytest.importorskip("matplotlib")
    from enceladus.compiler.layout import MmaLayout
    from enceladus.tools.layout_svg import element_owners

    a = np.zeros((64, 64), np.float16)
    text = dk.matmul_kernel.explain(a, a, np.zeros((64, 64), np.float32), 64, 64, 64, 64, 1, 64, 1, 64, 1, BM=64,
                                    BN=64, BK=32, EPILOGUE="none", save=str(tmp_path / "layouts.svg"))
    assert "mma<shape=[64, 64], warps=[2, 2]" in text and "simdgroup_matrix" in text
    assert (tmp_path / "layouts.svg").stat().st_size > 1000
    owners = element_owners(MmaLayout((32, 16), (2, 1)))
    assert (owners["copies"] == 1).all()  # every element held by exactly one (SIMD group, lane, register)
    assert owners["lane"][0, 0] == 0 and owners["lane"][0, 1] == 0 and owners["lane"][1, 0] == 2


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("num_warps", [1, 4])
def test_matmul2d_backend_runs_on_the_cpu_backend(dtype, num_warps):
    M, N, K = 100, 72, 96
    a, b = _arrays(dtype, (M, K), (K, N))
    grid = (enceladus.cdiv(M, 32), enceladus.cdiv(N, 32))
    c = np.zeros((M, N), np.float32)
    ck = dk.matmul_kernel[grid](a, b, c, M, N, K, K, 1, N, 1, N, 1, BM=32, BN=32, BK=32, EPILOGUE="leaky",
                                num_warps=num_warps, dot_backend="matmul2d")
    assert re.search(r"matmul2d<enc_desc\d*, execution_simdgroups", ck.asm["msl"]) and ck.metadata["uses_tensor_ops"]
    ref = a.astype(np.float32) @ b.astype(np.float32) * 0.5
    np.testing.assert_allclose(c, np.where(ref >= 0, ref, ref * np.float32(0.01)), rtol=2e-2, atol=2e-2 * np.sqrt(K))


def test_dot_backend_choice_and_fallbacks():
    a = np.zeros((64, 64), np.float16)
    args = (a, a, np.zeros((64, 64), np.float32), 64, 64, 64, 64, 1, 64, 1, 64, 1)
    auto = dk.matmul_kernel.warmup(*args, BM=64, BN=64, BK=32, EPILOGUE="none")
    assert auto.metadata["dot_backend"] == "simdgroup"  # "auto" on the cpu backend
    small_k = dk.matmul_kernel.warmup(*args, BM=64, BN=64, BK=16, EPILOGUE="none", dot_backend="matmul2d")
    notes = " ".join(small_k.metadata["notes"])
    assert "simdgroup_matrix" in notes and "multiple of 32" in notes  # falls back to simdgroup_matrix, says why
    with pytest.raises(ValueError, match="dot_backend='tensor' is not one of"):
        dk.matmul_kernel.warmup(*args, BM=64, BN=64, BK=32, EPILOGUE="none", dot_backend="tensor")
    cfg = enceladus.Config({"BM": 64}, num_warps=4, dot_backend="matmul2d")
    assert cfg.all_kwargs()["dot_backend"] == "matmul2d" and "dot_backend: matmul2d" in str(cfg)
