"""Every atomic runs once per logical element, and each replica of an element sees that one result."""

import numpy as np
import pytest

from paths import on_path

from . import replica_kernels as rk


@pytest.mark.parametrize("n", [1, 4, 16, 64])
@pytest.mark.parametrize("kind", ["add", "cas"])
@pytest.mark.parametrize("path", ["interpreter", "cpu"])
def test_column_tile_atomic(path, kind, n):
    counter = np.arange(n, dtype=np.int32) * (kind == "add")
    out = np.full((n, n), -1, np.int32)
    on_path(rk.column_atomic_kernel, path)[(1,)](counter, out, N=n, KIND=kind)
    rows = np.arange(n, dtype=np.int32)
    if kind == "add":
        np.testing.assert_array_equal(counter, rows + rows + 1)  # once per element, not once per replica
        np.testing.assert_array_equal(out, rows[:, None] + rows[None, :])
    else:
        np.testing.assert_array_equal(counter, rows + 100)
        np.testing.assert_array_equal(out, np.zeros((n, 1), np.int32) + rows[None, :])


@pytest.mark.parametrize("path", ["interpreter", "cpu"])
def test_row_and_3d_tile_atomics(path):
    n = 32
    counter = np.full(3 * n, 5, np.int32)
    out = np.full(8 * n, -1, np.int32)
    on_path(rk.row_atomic_kernel, path)[(1,)](counter, out, N=n, num_warps=4)
    cols = np.arange(n)
    np.testing.assert_array_equal(counter[:n], np.maximum(cols, 5))
    np.testing.assert_array_equal(counter[n:], 6)
    np.testing.assert_array_equal(out[:4 * n].reshape(4, n), np.full((4, n), 5))
    np.testing.assert_array_equal(out[4 * n:], 5)
