"""enceladus.Tensor: allocation, dtypes, views, NumPy/DLPack interop, and kernels on Tensors."""

import numpy as np
import pytest

import enceladus

from . import launch_kernels as lk


def test_allocation_is_page_aligned_and_zero_copy():
    t = enceladus.zeros((3, 5), dtype=np.float32)
    assert t.data_ptr() % 16384 == 0 and t.shape == (3, 5) and t.strides == (20, 4) and t.stride() == (5, 1)
    assert t.dtype == np.float32 and t.device == "cpu" and t.nbytes == 60 and t.ndim == 2 and len(t) == 3
    a = t.numpy()
    a[1, 2] = 7
    assert t.numpy()[1, 2] == 7 and a.__array_interface__["data"][0] == t.data_ptr()


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.uint16, np.int64, np.bool_, "bfloat16"])
def test_dtypes_round_trip(dtype):
    ref = (np.arange(12) % 3).reshape(3, 4)
    t = enceladus.tensor(ref, dtype=dtype)
    assert t.numpy().dtype.name == np.dtype(dtype if dtype != "bfloat16" else t.dtype).name
    np.testing.assert_array_equal(t.numpy().astype(np.float32), ref.astype(np.dtype(dtype)).astype(np.float32)
                                  if dtype != "bfloat16" else ref.astype(np.float32))


def test_constructors():
    assert enceladus.empty(4).shape == (4,)
    np.testing.assert_array_equal(enceladus.ones((2, 2), np.int32).numpy(), np.ones((2, 2), np.int32))
    np.testing.assert_array_equal(enceladus.full(3, 2.5).numpy(), [2.5, 2.5, 2.5])
    assert enceladus.tensor([1.0, 2.0]).dtype == np.float32  # Python floats: float32
    assert enceladus.tensor([1, 2]).dtype == np.int32
    x = np.arange(6, dtype=np.float16)
    t = enceladus.from_numpy(x)
    x[0] = 100  # from_numpy copies into device memory
    assert t.numpy()[0] == 0 and t.dtype == np.float16
    assert enceladus.zeros_like(t).dtype == np.float16 and enceladus.empty_like(t, np.int32).dtype == np.int32
    assert enceladus.tensor(t).data_ptr() != t.data_ptr()


def test_bad_input_is_refused_clearly():
    with pytest.raises(TypeError, match="no float64"):
        enceladus.empty(3, np.float64)
    with pytest.raises(TypeError, match="not a dtype"):
        enceladus.empty(3, "floaty")
    with pytest.raises(ValueError, match="negative dimension"):
        enceladus.empty((2, -1))
    with pytest.raises(TypeError, match="numpy.ndarray"):
        enceladus.from_numpy([1, 2])
    t = enceladus.zeros(8)
    with pytest.raises(IndexError, match="basic indexing"):
        t[np.array([1, 2])]
    with pytest.raises(IndexError, match="negative steps"):
        t[::-1]
    with pytest.raises(ValueError, match="without a copy"):
        enceladus.zeros((4, 4)).T.reshape(16)


def test_views_share_memory():
    t = enceladus.tensor(np.arange(20, dtype=np.float32).reshape(4, 5))
    row = t[1]
    assert row.shape == (5,) and row.data_ptr() == t.data_ptr() + 20 and row.byte_offset == 20
    col = t[:, 2]
    assert col.strides == (20,)
    np.testing.assert_array_equal(col.numpy(), [2, 7, 12, 17])
    t[0, 0] = 42
    assert t.reshape(20).numpy()[0] == 42 and t.T.shape == (5, 4) and t[2, 3].item() == 13


def test_dlpack_round_trips():
    t = enceladus.tensor(np.arange(6, dtype=np.int32))
    assert t.__dlpack_device__() == (1, 0)
    a = np.from_dlpack(t)
    assert a.__array_interface__["data"][0] == t.data_ptr()
    a2 = np.from_dlpack(t, device="cpu")
    np.testing.assert_array_equal(a2, np.arange(6))
    src = np.arange(5, dtype=np.float32)
    u = enceladus.from_dlpack(src)  # host memory is shared on the cpu backend
    assert u.data_ptr() == src.ctypes.data
    c = enceladus.from_dlpack(src, copy=True)
    assert c.data_ptr() != src.ctypes.data and c.data_ptr() % 16384 == 0
    torch = pytest.importorskip("torch")
    tt = torch.from_dlpack(t)
    assert tt.data_ptr() == t.data_ptr() and tt.tolist() == list(range(6))
    back = enceladus.from_dlpack(torch.arange(4, dtype=torch.float32))
    np.testing.assert_array_equal(back.numpy(), np.arange(4, dtype=np.float32))


def test_kernel_on_tensors_is_asynchronous_then_correct():
    x = enceladus.tensor(np.arange(1000, dtype=np.float32))
    out = enceladus.zeros(1000)
    lk.scale_kernel[(enceladus.cdiv(1000, 128),)](x, out, 1000, 2.0)
    np.testing.assert_allclose(out.numpy(), 2 * np.arange(1000, dtype=np.float32))  # numpy() synchronizes


def test_kernel_on_tensor_views_and_mixed_arguments():
    base = enceladus.tensor(np.arange(64 * 40, dtype=np.float32).reshape(64, 40))
    view = base.T  # (40, 64) strided
    out = np.zeros((40, 64), np.float32)  # a NumPy argument: the launch is synchronous
    sm, sn = view.stride()
    lk.strided_scale[(enceladus.cdiv(40, 16),)](view, out, 40, 64, sm, sn, BLOCK_M=16, BLOCK_N=64)
    np.testing.assert_allclose(out, base.numpy().T + 1)
