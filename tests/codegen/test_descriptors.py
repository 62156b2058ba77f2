"""Tensor descriptors and block pointers on every path vs NumPy."""

import warnings

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from paths import cpu_available, on_path, path_missing, run_on_all_paths

from . import descriptor_kernels as dk

RNG = np.random.default_rng(5)


@pytest.mark.parametrize("M,N", [(64, 64), (50, 70), (1, 33)])
def test_descriptor_2d_copy_pads_and_clips(M, N):
    x = RNG.standard_normal((M, N)).astype(np.float32)
    grid = (enceladus.cdiv(M, 16), enceladus.cdiv(N, 32))
    run_on_all_paths(dk.descriptor_copy_kernel, grid, lambda: (x, np.zeros_like(x), M, N), lambda x, o, M, N: {1: 2 * x},
                     constexprs={"BM": 16, "BN": 32})


@pytest.mark.parametrize("M,N,K", [(64, 64, 64), (70, 33, 45)])
def test_block_pointer_matmul_with_advance_in_a_loop(M, N, K):
    a = RNG.standard_normal((M, K)).astype(np.float32)
    b = RNG.standard_normal((K, N)).astype(np.float32)
    grid = (enceladus.cdiv(M, 32), enceladus.cdiv(N, 32))
    run_on_all_paths(dk.block_ptr_matmul_kernel, grid, lambda: (a, b, np.zeros((M, N), np.float32), M, N, K),
                     lambda a, b, c, *_: {2: a @ b}, constexprs={"BM": 32, "BN": 32, "BK": 16}, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("M,N", [(64, 64), (50, 70)])
def test_host_tensor_descriptor_and_tuple_arguments(M, N):
    x = RNG.standard_normal((M, N)).astype(np.float32)
    gm, gn = enceladus.cdiv(M, 16), enceladus.cdiv(N, 32)

    def make_args():
        out = np.zeros_like(x)
        sums = np.zeros(gm * gn, np.float32)
        return (enceladus.TensorDescriptor.from_tensor(x, [16, 32]), enceladus.TensorDescriptor(out, (M, N), (N, 1),
                                                                                             (16, 32)), (sums, 3.0))

    def check(args, expected, path):
        out = args[1].base
        np.testing.assert_allclose(out, 3 * x, rtol=1e-6, err_msg=path)
        padded = np.zeros((gm * 16, gn * 32), np.float32)
        padded[:M, :N] = x
        want = padded.reshape(gm, 16, gn, 32).sum(axis=(1, 3)).ravel()
        np.testing.assert_allclose(args[2][0], want, rtol=1e-5, atol=1e-5, err_msg=path)

    run_on_all_paths(dk.host_descriptor_kernel, (gm, gn), make_args, lambda *a: {}, check=check,
                     constexprs={"BM": 16, "BN": 32})


def test_bad_descriptors_are_refused():
    with pytest.raises(ValueError, match="powers of two"):
        enceladus.TensorDescriptor(np.zeros(4), (4,), (1,), (3,))
    with pytest.raises(ValueError, match="same, nonzero length"):
        enceladus.TensorDescriptor(np.zeros(4), (4,), (1, 1), (4,))


@pytest.mark.parametrize("M,N", [(64, 64), (50, 70)])
def test_load_and_store_tensor_descriptor_functions(M, N):
    x = RNG.standard_normal((M, N)).astype(np.float32)
    grid = (enceladus.cdiv(M, 16), enceladus.cdiv(N, 32))
    run_on_all_paths(dk.descriptor_functions_kernel, grid, lambda: (x, np.zeros_like(x), M, N),
                     lambda x, o, M, N: {1: x + 1}, constexprs={"BM": 16, "BN": 32})


@pytest.mark.parametrize("col0", [0, 24, -8])
def test_descriptor_gather_and_scatter(col0):
    M, N, R, BN = 20, 40, 8, 32
    x = RNG.standard_normal((M, N)).astype(np.float32)
    rows = np.array([3, 0, 19, 7, 25, -1, 7, 12], np.int32)  # 25 and -1 lie outside: gathered as zeros
    dst_rows = np.array([0, 1, 2, 3, 4, 30, 6, 7], np.int32)  # row 30 lies outside: not written

    def reference(x, rows, out, dst_rows, M, N, col0):
        want = np.full_like(out, -5.0)
        for r, d in zip(rows, dst_rows):
            for c in range(col0, col0 + BN):
                if 0 <= d < M and 0 <= c < N:
                    want[d, c] = 10 * x[r, c] if 0 <= r < M else 0.0
        return {2: want}

    run_on_all_paths(dk.descriptor_gather_scatter_kernel, (1,),
                     lambda: (x, rows, np.full_like(x, -5.0), dst_rows, M, N, col0), reference,
                     constexprs={"R": R, "BN": BN})


def test_descriptor_gather_needs_one_row_blocks_and_int_row_offsets():
    from enceladus import CompilationError

    @enceladus.jit
    def two_row_blocks(x_ptr, BN: tl.constexpr):
        desc = tl.make_tensor_descriptor(x_ptr, shape=[8, 8], strides=[8, 1], block_shape=[2, BN])
        tl.store(x_ptr + tl.arange(0, BN), tl.sum(desc.gather(tl.arange(0, 8), 0), 0))

    with pytest.raises(CompilationError, match="blocks have 1 row") as info:
        enceladus.compile(two_row_blocks, signature="*fp32", constexprs={"BN": 8})
    assert "block_shape=[1, N]" in info.value.fix

    @enceladus.jit
    def float_rows(x_ptr, BN: tl.constexpr):
        desc = tl.make_tensor_descriptor(x_ptr, shape=[8, 8], strides=[8, 1], block_shape=[1, BN])
        tl.store(x_ptr + tl.arange(0, BN), tl.sum(desc.gather(tl.arange(0, 8).to(tl.float32), 0), 0))

    with pytest.raises(CompilationError, match="1-D int16 or int32 tile"):
        enceladus.compile(float_rows, signature="*fp32", constexprs={"BN": 8})


def test_tensor_descriptor_and_its_type_in_a_kernel():
    M, N = 40, 50
    x = RNG.standard_normal((M, N)).astype(np.float32)
    grid = (enceladus.cdiv(M, 16), enceladus.cdiv(N, 32))
    run_on_all_paths(dk.descriptor_type_kernel, grid, lambda: (x, np.zeros_like(x), M, N),
                     lambda x, o, M, N: {1: 3 * x}, constexprs={"BM": 16, "BN": 32})


@enceladus.jit
def desc_affine_kernel(src, dst, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """dst = 2 * src + 1 in [BM, BN] blocks, the block shape taken from the descriptors (they must agree); M and N
    (the descriptors' shape) only key the autotuner and size the grid."""
    m = tl.program_id(0) * BM
    n = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), tl.float32)  # like a matmul's accumulator: compiles only when the blocks agree
    dst.store([m, n], acc + src.load([m, n]) * 2 + 1)


def _set_blocks(nargs):
    """A config pre_hook as tutorial 09 writes them: the descriptors' blocks follow the config."""
    for name in ("src", "dst"):
        nargs[name].block_shape = [nargs["BM"], nargs["BN"]]


def test_assigning_block_shape_is_checked_and_launches_read_it():
    x = RNG.standard_normal((40, 70)).astype(np.float32)
    d = enceladus.TensorDescriptor.from_tensor(x, [1, 1])
    d.block_shape = [16, 32]  # Triton's descriptors are plain dataclasses: tutorial 09 assigns block_shape
    assert d.block_shape == (16, 32)
    with pytest.raises(ValueError, match="powers of two"):
        d.block_shape = [16, 24]
    with pytest.raises(ValueError, match="same, nonzero length"):
        d.block_shape = [16]
    assert d.block_shape == (16, 32)  # a refused assignment leaves the descriptor as it was
    for path in ("interpreter", "cpu"):
        out = np.zeros_like(x)
        src, dst = enceladus.TensorDescriptor.from_tensor(x, [1, 1]), enceladus.TensorDescriptor.from_tensor(out, [1, 1])
        for bm, bn in ((16, 32), (8, 64)):  # the same descriptor objects, re-blocked between launches
            out[:] = 0
            src.block_shape = dst.block_shape = (bm, bn)
            if path == "cpu" and not cpu_available():
                path_missing("cpu", "no C++ compiler")
            on_path(desc_affine_kernel, path)[(enceladus.cdiv(40, bm), enceladus.cdiv(70, bn))](src, dst, 40, 70, BM=bm, BN=bn)
            np.testing.assert_allclose(out, 2 * x + 1, rtol=1e-6, err_msg=f"{path} {bm}x{bn}")


@pytest.mark.parametrize("path", ["interpreter", "cpu"])
def test_autotune_pre_hook_sets_descriptor_blocks_before_compiling(path):
    # every config compiled for the dummy [1, 1] blocks (before its pre_hook ran) failed: "no config compiled"
    if path == "cpu" and not cpu_available():
        path_missing("cpu", "no C++ compiler")
    configs = [enceladus.Config({"BM": bm, "BN": bn}, num_warps=w, pre_hook=_set_blocks)
               for bm, bn, w in ((16, 32, 1), (32, 16, 2), (32, 32, 4))]
    tuned = enceladus.autotune(configs=configs, key=["M", "N"], warmup=1, rep=3)(on_path(desc_affine_kernel, path))
    for m, n in ((64, 64), (50, 70)):
        x = RNG.standard_normal((m, n)).astype(np.float32)
        out = np.zeros_like(x)
        src, dst = enceladus.TensorDescriptor.from_tensor(x, [1, 1]), enceladus.TensorDescriptor.from_tensor(out, [1, 1])
        grid = lambda meta: (enceladus.cdiv(meta["M"], meta["BM"]), enceladus.cdiv(meta["N"], meta["BN"]))  # noqa: E731
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no config may be skipped
            tuned[grid](src, dst, m, n)
        np.testing.assert_allclose(out, 2 * x + 1, rtol=1e-6, err_msg=f"{path} {m}x{n}")
        assert tuned.best_config in configs
        best = tuned.best_config.kwargs
        assert src.block_shape == (best["BM"], best["BN"])  # the chosen config's hook ran last
