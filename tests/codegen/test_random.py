"""Philox random numbers: identical on the compiler and the interpreter, independent of the block size."""

import numpy as np
import pytest

from paths import on_path

from . import random_kernels as rk


def _run(path, n, seed, block):
    i, u, z = np.zeros(n, np.uint32), np.zeros(n, np.float32), np.zeros(n, np.float32)
    rk.random_kernel.cache.clear() if path == "cpu" else None
    on_path(rk.random_kernel, path)[((n + block - 1) // block,)](i, u, z, seed, n, BLOCK=block)
    return i, u, z


@pytest.mark.parametrize("seed", [0, 1234, 2**40 + 7])
def test_same_numbers_on_every_path_and_block_size(seed):
    n = 1000
    ref_i, ref_u, ref_n = _run("interpreter", n, seed, 256)
    for block in (128, 512):
        i, u, z = _run("cpu", n, seed, block)
        np.testing.assert_array_equal(i, ref_i)
        np.testing.assert_array_equal(u, ref_u)
        np.testing.assert_allclose(z, ref_n, rtol=1e-5, atol=1e-5)  # log/cos/sqrt may differ by an ulp
    assert ref_u.min() >= 0 and ref_u.max() < 1
    assert abs(ref_u.mean() - 0.5) < 0.05 and abs(ref_n.mean()) < 0.1 and abs(ref_n.std() - 1) < 0.1
    assert len(np.unique(ref_i)) == n


def test_dropout():
    n, p = 4000, 0.3
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    outs = {}
    for path in ("interpreter", "cpu"):
        out = np.zeros_like(x)
        on_path(rk.dropout_kernel, path)[(4,)](x, out, n, p, 42, BLOCK=1024)
        outs[path] = out
    np.testing.assert_allclose(outs["cpu"], outs["interpreter"], rtol=1e-6)
    kept = outs["cpu"] != 0
    assert abs(kept.mean() - (1 - p)) < 0.03
    np.testing.assert_allclose(outs["cpu"][kept], x[kept] / (1 - p), rtol=1e-6)


def test_swizzle2d():
    SI, SJ, SG = 8, 4, 3
    want = np.zeros((SI, SJ), np.int32)
    for i in range(SI):
        for j in range(SJ):
            ij = i * SJ + j
            size_gj = SG * SJ
            off_i = (ij // size_gj) * SG
            g = min(SI - off_i, SG)
            ij %= size_gj
            want[i, j] = (off_i + ij % g) * SJ + ij // g
    for path in ("interpreter", "cpu"):
        out = np.zeros((SI, SJ), np.int32)
        on_path(rk.swizzle_kernel, path)[(1,)](out, SIZE_I=SI, SIZE_J=SJ, SIZE_G=SG)
        np.testing.assert_array_equal(out, want, err_msg=path)
