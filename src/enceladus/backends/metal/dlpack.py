"""DLPack export of Metal-backed ``enceladus.Tensor``s: kDLMetal natively, kDLCPU when asked.

The native answer (``dl_device`` None or ``(8, 0)``) is a ``kDLMetal`` tensor whose ``data`` is the
``id<MTLBuffer>`` handle and whose ``byte_offset`` locates the view, as PyTorch and MLX export Metal
memory. Asked for ``dl_device=(1, 0)`` (what ``np.from_dlpack(t, device="cpu")`` does) we answer
``kDLCPU`` with the buffer's ``contents()`` pointer, which NumPy builds itself. Both synchronize every
stream first, because a consumer cannot order its work after our queues.

The capsule is built with ctypes (``PyCapsule_New``): plain C structs laid out as in ``dlpack.h``,
kept alive in ``_LIVE`` until the consumer calls the deleter. The capsule has no C destructor (a
ctypes callback cannot run while the consumer's refusal exception is pending, which is exactly when
an unconsumed capsule dies); instead each export sweeps entries whose capsule nobody else holds
and that were never consumed (still named ``dltensor``).
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any

import numpy as np

KDL_CPU, KDL_METAL = 1, 8
READ_ONLY, IS_COPIED = 1, 2  # DLPACK_FLAG_BITMASK_*
_DTYPE_CODES = {"i": 0, "u": 1, "f": 2, "b": 6}  # kDLInt, kDLUInt, kDLFloat, kDLBool
KDL_BFLOAT = 4


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


_LIVE: dict[int, list[Any]] = {}  # managed struct address -> [struct, shape, strides, keep, capsule, name]


def _release(address: int) -> None:
    _LIVE.pop(int(address or 0), None)


_DELETER = _Deleter(_release)
_NAMES = {False: b"dltensor", True: b"dltensor_versioned"}


def _capsule_api() -> tuple[Any, Any]:
    api = ctypes.pythonapi
    new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)(
        ("PyCapsule_New", api))
    valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_IsValid", api))
    return new, valid


_new_capsule, _capsule_valid = _capsule_api()


def sweep() -> int:
    """Free exports whose capsule was dropped without being consumed; returns how many are still live."""
    for address, entry in list(_LIVE.items()):
        capsule = entry[4]
        # references: the entry list, the local name, getrefcount's argument
        if sys.getrefcount(capsule) <= 3 and _capsule_valid(capsule, entry[5]):
            _LIVE.pop(address, None)
        del capsule
    return len(_LIVE)


def dl_dtype(dtype: np.dtype) -> DLDataType:
    """The DLPack data type of a NumPy dtype (bfloat16 from ml_dtypes included)."""
    if dtype.name == "bfloat16":
        return DLDataType(KDL_BFLOAT, 16, 1)
    if dtype.kind not in _DTYPE_CODES:
        raise BufferError(f"DLPack has no type for {dtype}")
    return DLDataType(_DTYPE_CODES[dtype.kind], 8 * dtype.itemsize, 1)


def metal_capsule(handle: int, byte_offset: int, view: np.ndarray, keep: Any, versioned: bool,
                  read_only: bool = False) -> Any:
    """A DLPack capsule for ``view``'s shape/strides/dtype located at ``handle`` (an id<MTLBuffer>) +
    ``byte_offset`` on kDLMetal device 0; ``keep`` lives until the consumer is done."""
    ndim = view.ndim
    shape = (ctypes.c_int64 * max(ndim, 1))(*view.shape)
    strides = (ctypes.c_int64 * max(ndim, 1))(*(s // view.itemsize for s in view.strides))
    tensor = DLTensor(handle, DLDevice(KDL_METAL, 0), ndim, dl_dtype(view.dtype), shape, strides, byte_offset)
    if versioned:
        managed: Any = DLManagedTensorVersioned(DLPackVersion(1, 0), None, _DELETER, READ_ONLY if read_only else 0,
                                                tensor)
    else:
        managed = DLManagedTensor(tensor, None, _DELETER)
    address = ctypes.addressof(managed)
    sweep()
    capsule = _new_capsule(address, _NAMES[versioned], None)
    _LIVE[address] = [managed, shape, strides, keep, capsule, _NAMES[versioned]]
    return capsule


def export_tensor(buffer: Any, tensor: Any, *, max_version: tuple[int, int] | None = None,
                  dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
    """``__dlpack__`` of a Tensor stored in the MetalBuffer ``buffer`` (see the module docstring). The runtime
    has synchronized every stream first, and for ``copy=True`` to kDLMetal passes a fresh copy of the tensor."""
    device = None if dl_device is None else tuple(int(v) for v in dl_device)
    if device not in (None, (KDL_METAL, 0), (KDL_CPU, 0)):
        raise BufferError(f"a Metal tensor can be exported to kDLMetal (8, 0) or kDLCPU (1, 0), not {device}")
    view = tensor._view
    if device == (KDL_CPU, 0):  # shared storage: the contents pointer is host memory
        if view.dtype.name == "bfloat16":
            raise BufferError("NumPy's DLPack export has no bfloat16; use t.numpy() (ml_dtypes.bfloat16) instead")
        kwargs: dict[str, Any] = {}
        if max_version is not None:
            kwargs["max_version"] = max_version
        if copy is not None:
            kwargs["copy"] = copy
        return view.__dlpack__(**kwargs)
    versioned = max_version is not None and int(max_version[0]) >= 1
    return metal_capsule(buffer.handle, tensor.byte_offset, view, (buffer, tensor), versioned)
