"""Branches on scalars loaded from memory the kernel writes: every thread of a program takes the same way."""

import numpy as np
import pytest

from paths import on_path

from . import control_kernels as ck


@pytest.mark.parametrize("path", ["interpreter", "cpu"])
def test_branch_on_a_scalar_the_branch_overwrites(path):
    # thread 0 flips the flag inside the branch; every other thread must still see the value loaded before it
    flag = np.zeros(1, np.int32)
    out = np.full(128, 100, np.int32)
    on_path(ck.first_visit_kernel, path)[(1,)](flag, out, BLOCK=128, num_warps=4)
    assert flag[0] == 1
    np.testing.assert_array_equal(out, 7)
    on_path(ck.first_visit_kernel, path)[(1,)](flag, out, BLOCK=128, num_warps=4)
    np.testing.assert_array_equal(out, 8)


@pytest.mark.parametrize("path", ["interpreter", "cpu"])
def test_group_lock_partial_sums(path):
    rows, n, groups = 24, 100, 4
    x = np.random.default_rng(5).integers(-8, 8, (rows, n)).astype(np.float32)  # small integers: exact in any order
    partial = np.full((groups, n), np.nan, np.float32)  # never read before the first store of a group
    locks = np.zeros(2 * groups, np.int32)
    on_path(ck.locked_group_sum_kernel, path)[(rows,)](x, partial, locks, n, GROUPS=groups, BLOCK=128, num_warps=4)
    want = np.stack([x[g::groups].sum(axis=0) for g in range(groups)])
    np.testing.assert_array_equal(partial, want)
    np.testing.assert_array_equal(locks, [0] * groups + [1] * groups)
