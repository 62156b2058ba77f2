"""Bounds-checked loads and stores: whole-allocation bounds, masks, views, read-only and torch arrays."""

import numpy as np
import pytest

from enceladus.interpreter import OutOfBoundsError
from paths import on_path

from .kernels import add_kernel, offset_load_kernel, store_kernel, unmasked_store_kernel

add = on_path(add_kernel, "interpreter")
store = on_path(store_kernel, "interpreter")


def test_out_of_bounds_load_names_everything() -> None:
    x = np.zeros(100, np.float32)
    y = np.zeros(2048, np.float32)
    with pytest.raises(OutOfBoundsError) as info:
        add[(2,)](x, y, np.zeros(2048, np.float32), 2000, BLOCK=1024)
    msg = str(info.value)
    for part in ("kernel 'add_kernel'", "program (0, 0, 0)", "argument 'x_ptr'", "element offset 100",
                 "tile index (100,)", "has 100 elements", "kernels.py:", "x = tl.load(x_ptr + offs, mask=mask)"):
        assert part in msg, (part, msg)


def test_out_of_bounds_store_reports_program() -> None:
    x = np.zeros(300, np.int32)
    with pytest.raises(OutOfBoundsError, match=r"store in kernel 'unmasked_store_kernel', program \(2, 0, 0\).*"
                                               r"element offset 300 \(tile index \(44,\)\)"):
        on_path(unmasked_store_kernel, "interpreter")[(3,)](x, BLOCK=128)


def test_negative_offsets_are_caught() -> None:
    x = np.arange(16, dtype=np.float32)
    with pytest.raises(OutOfBoundsError, match="element offset -1"):
        on_path(offset_load_kernel, "interpreter")[(1,)](x, np.zeros(16, np.float32), -1, BLOCK=16)


def test_masked_lanes_never_touch_memory() -> None:
    out = np.full(1000, -1.0, np.float32)
    store[(8,)](out, 1000, BLOCK=128)  # 24 masked lanes past the end
    np.testing.assert_array_equal(out, np.arange(1000, dtype=np.float32))
    empty = np.zeros(0, np.float32)
    store[(1,)](empty, 0, BLOCK=16)  # everything masked: even an empty array is fine


def test_view_may_reach_into_its_base_array() -> None:
    base = np.arange(64, dtype=np.float32)
    view = base[16:32]
    out = np.zeros(16, np.float32)
    on_path(offset_load_kernel, "interpreter")[(1,)](view, out, -16, BLOCK=16)  # legal: inside the allocation
    np.testing.assert_array_equal(out, base[:16])
    with pytest.raises(OutOfBoundsError, match="allocation allows offsets -16..47"):
        on_path(offset_load_kernel, "interpreter")[(1,)](view, out, 40, BLOCK=16)


def test_writes_land_in_strided_views() -> None:
    base = np.zeros((4, 64), np.float32)
    col = base[:, 5]  # strided view: the kernel sees element offsets, as on the GPU
    row = base[2]
    store[(1,)](row, 64, BLOCK=64)
    np.testing.assert_array_equal(base[2], np.arange(64, dtype=np.float32))
    assert col.base is base


def test_read_only_array_refused() -> None:
    x = np.zeros(16, np.float32)
    x.flags.writeable = False
    with pytest.raises(ValueError, match="read-only array"):
        store[(1,)](x, 16, BLOCK=16)
    assert (x == 0).all()


def test_launch_argument_errors_match_compiled_launch() -> None:
    with pytest.raises(TypeError, match="complex128"):
        store[(1,)](np.zeros(16, np.complex128), 16, BLOCK=16)
    with pytest.raises(TypeError, match="missing argument 'n'"):
        store[(1,)](np.zeros(16, np.float32), BLOCK=16)
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        store[(1,)](np.zeros(16, np.float32), 16, BLOCK=16, bogus=1)
    with pytest.raises(ValueError, match="num_warps must be a power of two"):
        store[(1,)](np.zeros(16, np.float32), 16, BLOCK=16, num_warps=3)
    with pytest.raises(ValueError, match="arange's range must be a power of 2"):
        store[(1,)](np.zeros(16, np.float32), 16, BLOCK=12)


def test_torch_cpu_tensors() -> None:
    torch = pytest.importorskip("torch")
    x = torch.arange(100, dtype=torch.float32)
    y = torch.ones(100)
    out = torch.zeros(100)
    add[(1,)](x, y, out, 100, BLOCK=128)
    assert torch.equal(out, x + 1)
    big = torch.zeros(200)
    view = big[50:150]
    on_path(offset_load_kernel, "interpreter")[(1,)](view, out[:16], -50, BLOCK=16)  # inside the storage
    with pytest.raises(OutOfBoundsError):
        on_path(offset_load_kernel, "interpreter")[(1,)](view, out[:16], 150, BLOCK=16)
