"""Tensor descriptors and block pointers on every path vs NumPy."""

import numpy as np
import pytest

import enceladus
from paths import run_on_all_paths

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
