"""int32 overflow in pointer-offset arithmetic is reported on the interpreter and the checked cpu backend.

``row * stride`` computed in int32 wraps in compiled code (Triton's semantics): for a view whose rows lie 2^32
elements apart, row 65536 would read row 0. Both paths report the wrap with the values and the kernel line
instead (docs/robustness.md, "Address overflow"); ``ENCELADUS_CHECKS=0`` restores the wrap. The views are made
with ``as_strided`` over a few bytes, so nothing near 2^32 bytes is allocated: a kernel that got the offset
right would address memory that does not exist, which the checks report as out of bounds.
"""

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import enceladus
import enceladus.language as tl
from paths import ALL_PATHS, cpu_available, on_path, path_missing, run_on_all_paths

OVERFLOW = r"int32 overflow in pointer-offset arithmetic"


def _path(kernel, path):
    if path == "cpu" and not cpu_available():
        path_missing("cpu", "no C++ compiler for the cpu backend")
    return on_path(kernel, path)


@enceladus.jit
def row_copy(x_ptr, out_ptr, row, stride, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + offs)  # the wrapping offset
    tl.store(out_ptr + offs, x)


@enceladus.jit
def tile_rows(x_ptr, out_ptr, rstep, stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.arange(0, BLOCK_M) * rstep
    cols = tl.arange(0, BLOCK_N)
    ptrs = x_ptr + rows[:, None] * stride + cols[None, :]
    tl.store(out_ptr + tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + cols[None, :], tl.load(ptrs))


@enceladus.jit
def shifted_row(x_ptr, out_ptr, row, shift, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + (row << shift) + offs))


@enceladus.jit
def widened_too_late(x_ptr, out_ptr, row, stride, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    start = (row * stride).to(tl.int64)  # already wrapped: widening does not bring the lost bits back
    tl.store(out_ptr + offs, tl.load(x_ptr + start + offs))


@enceladus.jit
def widened_first(x_ptr, out_ptr, row, stride, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + row.to(tl.int64) * stride + offs))


@enceladus.jit
def wrapping_values(out_ptr, base, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, offs * 1_000_003 + base)  # wraps, but is a value, not an offset


@enceladus.jit
def row_copy_unchecked(x_ptr, out_ptr, row, stride, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + row * stride + offs))


def _far_rows(rows: int, stride: int, width: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """A (rows, width) float32 view whose rows are ``stride`` elements apart, over only ``width`` real floats
    (row 0): the view spans ~rows * stride * 4 bytes that are never allocated."""
    base = np.arange(width, dtype=np.float32)
    return base, as_strided(base, shape=(rows, width), strides=(stride * 4, 4))


@pytest.mark.parametrize("path", ALL_PATHS)
def test_row_times_stride_past_int32_is_reported_not_wrapped(path):
    # the case: a view of 65537 rows of 16 floats (~1M elements) whose rows lie 2^16 floats apart
    # spans 2^34 bytes; row 65536 starts at element 2^32, which int32 arithmetic wraps to 0 (row 0)
    base, x = _far_rows(65537, 65536)
    out = np.zeros(16, np.float32)
    kernel = _path(row_copy, path)
    with pytest.raises(enceladus.LaunchError, match=OVERFLOW) as info:
        kernel[(1,)](x, out, 65536, x.strides[0] // 4, BLOCK=16)
    text = str(info.value)
    assert "row_copy" in text and "65536 * 65536 = 4294967296" in text
    assert "x = tl.load(x_ptr + row * stride + offs)" in text  # the kernel line
    np.testing.assert_array_equal(out, 0)  # nothing was read from row 0 and stored


@pytest.mark.parametrize("path", ALL_PATHS)
def test_the_wrapping_element_of_a_tile_is_named(path):
    # rows 0 and 65536 of a view whose rows lie 2^16 floats apart: row 0's offset fits, row 65536's wraps to 0
    base, x = _far_rows(65537, 65536, width=4)
    out = np.zeros((2, 4), np.float32)
    with pytest.raises(enceladus.LaunchError, match=OVERFLOW) as info:
        _path(tile_rows, path)[(1,)](x, out, 65536, 65536, BLOCK_M=2, BLOCK_N=4)
    text = str(info.value)
    assert "65536 * 65536 = 4294967296" in text
    assert "ptrs = x_ptr + rows[:, None] * stride + cols[None, :]" in text


@pytest.mark.parametrize("path", ALL_PATHS)
def test_shift_and_late_widening_are_reported(path):
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(16, np.float32)
    with pytest.raises(enceladus.LaunchError, match=OVERFLOW + r"(.|\n)*4096 << 19 = 2147483648"):
        _path(shifted_row, path)[(1,)](x, out, 4096, 19, BLOCK=16)
    with pytest.raises(enceladus.LaunchError, match=OVERFLOW + r"(.|\n)*65536 \* 65536 = 4294967296"):
        _path(widened_too_late, path)[(1,)](x, out, 65536, 65536, BLOCK=16)
    np.testing.assert_array_equal(out, 0)


@pytest.mark.parametrize("path", ALL_PATHS)
def test_int64_offsets_reach_the_right_element(path):
    # computed in int64 the offset is 2^32: not a wrap, and (for this small array) out of bounds
    x = np.arange(16, dtype=np.float32)
    with pytest.raises(enceladus.LaunchError, match=r"out-of-bounds") as info:
        _path(widened_first, path)[(1,)](x, np.zeros(16, np.float32), 65536, 65536, BLOCK=16)
    assert "int32 overflow" not in str(info.value)


def test_offsets_that_fit_still_run():
    run_on_all_paths(row_copy, (1,), make_args=lambda: (np.arange(64, dtype=np.float32), np.zeros(16, np.float32),
                                                        3, 16),
                     reference=lambda x, out, row, stride: {1: x[48:64]}, constexprs={"BLOCK": 16})
    # rows 0 and 3 of a (4, 4) matrix through the tile's offsets
    run_on_all_paths(tile_rows, (1,), make_args=lambda: (np.arange(16, dtype=np.float32).reshape(4, 4),
                                                         np.zeros((2, 4), np.float32), 3, 4),
                     reference=lambda x, out, rstep, stride: {1: x[[0, 3]]}, constexprs={"BLOCK_M": 2, "BLOCK_N": 4})
    run_on_all_paths(shifted_row, (1,), make_args=lambda: (np.arange(64, dtype=np.float32), np.zeros(16, np.float32),
                                                           1, 5),
                     reference=lambda x, out, row, shift: {1: x[32:48]}, constexprs={"BLOCK": 16})


def test_wrapping_values_that_are_not_offsets_are_fine():
    def reference(out, base):
        offs = np.arange(64, dtype=np.int64)
        return {0: ((offs * 1_000_003 + base + 2**31) % 2**32 - 2**31).astype(np.int32)}

    run_on_all_paths(wrapping_values, (1,), make_args=lambda: (np.zeros(64, np.int32), 2_100_000_000),
                     reference=reference, constexprs={"BLOCK": 64})


@pytest.mark.parametrize("path", ALL_PATHS)
def test_opt_out_keeps_compiled_semantics(path, monkeypatch):
    # ENCELADUS_CHECKS=0: the offset wraps as in Triton's compiled code, and row 65536 reads row 0
    monkeypatch.setenv("ENCELADUS_CHECKS", "0")
    base, x = _far_rows(65537, 65536)
    out = np.zeros(16, np.float32)
    _path(row_copy_unchecked, path)[(1,)](x, out, 65536, 65536, BLOCK=16)
    np.testing.assert_array_equal(out, base)
