"""``enceladus.Tensor``: an n-dimensional array in device memory of the current backend.

    import numpy as np, enceladus
    x = enceladus.tensor(np.arange(1024, dtype=np.float32))   # copy into device memory
    out = enceladus.empty_like(x)
    add_kernel[(4,)](x, x, out, 1024, BLOCK=256)                # asynchronous: queued on the stream
    print(out.numpy()[:4])                                      # synchronizes, then a zero-copy view

The storage comes from ``backend.alloc(nbytes)``, which returns an allocation with ``address``,
``handle``, ``nbytes`` and ``host_view()`` (a uint8 NumPy array over the memory): aligned host memory
on ``cpu``, a shared-storage ``MTLBuffer`` on Metal. Everything else here is backend-neutral.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..language import dtypes as D
from . import arguments

DTypeLike = Any  # np.dtype, a NumPy scalar type, "float32"/"bfloat16", or an enceladus.language dtype


def as_dtype(dtype: DTypeLike) -> np.dtype:
    """A NumPy dtype for any dtype spelling Enceladus accepts, refusing those kernels cannot take."""
    if isinstance(dtype, D.dtype):
        result = dtype.to_numpy()
    elif isinstance(dtype, str) and dtype in ("bfloat16", "bf16"):
        result = D.bfloat16_numpy()
    else:
        try:
            result = np.dtype(dtype)
        except TypeError as exc:
            raise TypeError(f"{dtype!r} is not a dtype (use e.g. np.float32, 'float16', 'bfloat16')") from exc
    ty = D.from_numpy(result)
    if ty is None or ty.is_fp64():
        hint = " Apple GPUs have no float64: use float32." if result == np.float64 else ""
        raise TypeError(f"enceladus.Tensor cannot hold dtype {result}.{hint} Supported: bool, int8-64, uint8-64, "
                        "float16, bfloat16, float32, and the fp8 types (tl.float8e5 etc.: their codes).")
    return result


def _shape(shape: int | Sequence[int]) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        out = tuple(int(s) for s in shape)
    except TypeError:
        raise TypeError(f"shape must be an int or a sequence of ints, got {shape!r}") from None
    if any(s < 0 for s in out):
        raise ValueError(f"shape {out} has a negative dimension")
    return out


class Tensor:
    """An array in device memory: ``shape``, ``strides`` (bytes, as NumPy), ``dtype`` (a NumPy dtype).

    Kernel launches whose array arguments are all Tensors are asynchronous and ordered on the current
    stream; ``numpy()``, ``__array__``, ``__dlpack__``, ``tolist()`` and item access synchronize first.
    Basic indexing (ints, slices with positive steps, ``...``, ``None``) and ``reshape`` give views
    sharing the memory.
    """

    __slots__ = ("_alloc", "_view", "_address", "_key", "_extent", "__weakref__")

    def __init__(self, allocation: Any, view: np.ndarray) -> None:
        # Use enceladus.empty / zeros / tensor / from_numpy / from_dlpack rather than this constructor.
        self._alloc = allocation
        self._view = view
        self._address = int(view.__array_interface__["data"][0]) if view.size else int(allocation.address)
        ty = D.from_numpy(view.dtype)
        # The JIT's specialization key for this argument (see runtime/jit.py); None sends it to the slow path.
        ok = ty is not None and view.size <= arguments.MAX_ELEMENTS and all(s >= 0 for s in view.strides)
        self._key = ("T", ty.name, self._address % 16 == 0) if ok and ty is not None else None
        self._extent = arguments.extent(view)  # what a kernel may touch through it (cpu access checks)

    # --- metadata -------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._view.shape

    @property
    def strides(self) -> tuple[int, ...]:
        """Byte strides, as ``numpy.ndarray.strides``."""
        return self._view.strides

    def stride(self, dim: int | None = None) -> Any:
        """Strides in elements, as ``torch.Tensor.stride()``."""
        s = tuple(x // self.itemsize for x in self._view.strides)
        return s if dim is None else s[dim]

    @property
    def dtype(self) -> np.dtype:
        return self._view.dtype

    @property
    def ndim(self) -> int:
        return self._view.ndim

    @property
    def size(self) -> int:
        return self._view.size

    @property
    def itemsize(self) -> int:
        return self._view.itemsize

    @property
    def nbytes(self) -> int:
        return self._view.nbytes

    @property
    def device(self) -> str:
        """The backend whose memory holds the tensor: ``"cpu"`` or ``"metal"``."""
        return getattr(self._alloc, "device", "cpu")

    @property
    def allocation(self) -> Any:
        """The backend allocation (``address``, ``handle``, ``nbytes``) this tensor views."""
        return self._alloc

    @property
    def byte_offset(self) -> int:
        """Offset of the first element from the start of the allocation, in bytes."""
        return self._address - int(self._alloc.address)

    def data_ptr(self) -> int:
        """Address of the first element (host address on ``cpu``; contents pointer on Metal)."""
        return self._address

    def device_address(self) -> int:
        """The address of the first element as kernels see it, for kernels that make pointers from integers
        (``x.to(tl.pointer_type(tl.float16))``, Triton tutorial 08's table of ``data_ptr()`` values): the host address on
        ``cpu`` (``data_ptr()``), the buffer's ``gpuAddress`` plus the byte offset on Metal, where ``data_ptr()``
        is a CPU address the GPU cannot use. On Metal the allocation is then made resident at every launch of
        such a kernel while the tensor lives (unverified on Apple hardware)."""
        gpu_address = getattr(self._alloc, "gpu_address", None)
        return self._address if gpu_address is None else gpu_address() + self.byte_offset

    def is_contiguous(self) -> bool:
        return bool(self._view.flags.c_contiguous)

    def __len__(self) -> int:
        return len(self._view)

    def __repr__(self) -> str:
        return f"enceladus.Tensor(shape={self.shape}, dtype={self.dtype}, device='{self.device}')"

    # --- host access (synchronizing) ----------------------------------------------------------------
    def numpy(self) -> np.ndarray:
        """A zero-copy NumPy view of the tensor, after waiting for queued work (``enceladus.synchronize()``)."""
        from .stream import synchronize

        synchronize()
        return self._view

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        arr = self.numpy()
        if dtype is not None and np.dtype(dtype) != arr.dtype:
            return arr.astype(dtype)
        return arr.copy() if copy else arr

    def tolist(self) -> Any:
        return self.numpy().tolist()

    def item(self) -> Any:
        return self.numpy().item()

    def __enceladus_array__(self) -> np.ndarray:
        # For argument binding: the view without synchronizing (the launch orders itself).
        return self._view

    # --- DLPack --------------------------------------------------------------------------------------
    def __dlpack_device__(self) -> tuple[int, int]:
        dev = getattr(self._alloc, "dlpack_device", None)
        return dev() if callable(dev) else (1, 0)  # kDLCPU on the cpu backend

    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        """Export through DLPack after synchronizing (kDLCPU on the cpu backend)."""
        export = getattr(self._alloc, "dlpack", None)
        if callable(export):  # a backend with its own device type (Metal) answers itself, once every stream is done
            from .stream import synchronize

            synchronize()
            if copy and (dl_device is None or tuple(dl_device) == self.__dlpack_device__()):
                fresh = tensor(self)  # exported instead of the original (the backend never imports the runtime)
                return fresh._alloc.dlpack(fresh, stream=stream, max_version=max_version, dl_device=dl_device,
                                           copy=copy)
            return export(self, stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)
        if dl_device is not None and tuple(dl_device) != (1, 0):
            raise BufferError(f"an enceladus cpu Tensor lives in host memory (kDLCPU); cannot export to {dl_device}")
        arr = self.numpy()
        if arr.dtype.name == "bfloat16":
            raise BufferError("NumPy's DLPack export has no bfloat16; use t.numpy() (ml_dtypes.bfloat16) instead")
        kwargs: dict[str, Any] = {"stream": stream}
        if max_version is not None:
            kwargs["max_version"] = max_version
        if copy is not None:
            kwargs["copy"] = copy
        return arr.__dlpack__(**kwargs)

    # --- views ---------------------------------------------------------------------------------------
    def __getitem__(self, index: Any) -> Tensor:
        if not _is_basic_index(index):
            raise IndexError(
                "enceladus.Tensor supports basic indexing only (ints, slices, ..., None), which gives a view; "
                "for a gather use t.numpy()[index] (a host copy)"
            )
        view = self._view[index]
        if not isinstance(view, np.ndarray):  # a single element: a 0-d view of it
            view = self._view[(index,) if not isinstance(index, tuple) else index + (Ellipsis,)]
        if any(s < 0 for s in view.strides):
            raise IndexError("slices with negative steps are not supported by kernels; use t.numpy()[::-1].copy()")
        return Tensor(self._alloc, view)

    def __setitem__(self, index: Any, value: Any) -> None:
        self.numpy()[index] = np.asarray(value)

    def reshape(self, *shape: Any) -> Tensor:
        """A view with a new shape (only when no copy is needed, else ValueError)."""
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = tuple(shape[0])
        view = self._view.view()
        try:
            view.shape = shape  # assigning .shape never copies: it raises instead
        except AttributeError as exc:
            raise ValueError(f"cannot reshape a non-contiguous Tensor of shape {self.shape} to {shape} without a "
                             "copy; make a contiguous copy first (enceladus.tensor(t))") from exc
        return Tensor(self._alloc, view)

    @property
    def T(self) -> Tensor:
        return Tensor(self._alloc, self._view.T)


def _is_basic_index(index: Any) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return all(isinstance(i, (int, np.integer, slice)) or i is Ellipsis or i is None for i in items
               if not isinstance(i, bool))


def _new(shape: tuple[int, ...], dtype: np.dtype) -> Tensor:
    from .backend import get_backend

    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    alloc = get_backend().alloc(nbytes)
    host = alloc.host_view()
    view = np.ndarray(shape, dtype=dtype, buffer=host, offset=0) if nbytes else np.empty(shape, dtype)
    return Tensor(alloc, view)


def empty(shape: int | Sequence[int], dtype: DTypeLike = np.float32) -> Tensor:
    """An uninitialized Tensor: ``enceladus.empty((M, N), dtype=np.float16)``."""
    return _new(_shape(shape), as_dtype(dtype))


def zeros(shape: int | Sequence[int], dtype: DTypeLike = np.float32) -> Tensor:
    """A Tensor of zeros."""
    t = empty(shape, dtype)
    t._view[...] = 0  # fresh memory: no queued work can touch it yet
    return t


def ones(shape: int | Sequence[int], dtype: DTypeLike = np.float32) -> Tensor:
    """A Tensor of ones."""
    t = empty(shape, dtype)
    t._view[...] = 1
    return t


def full(shape: int | Sequence[int], fill_value: Any, dtype: DTypeLike = np.float32) -> Tensor:
    """A Tensor filled with ``fill_value``."""
    t = empty(shape, dtype)
    t._view[...] = fill_value
    return t


def empty_like(t: Any, dtype: DTypeLike | None = None) -> Tensor:
    """An uninitialized Tensor with the shape (and dtype, unless given) of ``t``."""
    return empty(t.shape, t.dtype if dtype is None else dtype)


def zeros_like(t: Any, dtype: DTypeLike | None = None) -> Tensor:
    """A Tensor of zeros with the shape (and dtype, unless given) of ``t``."""
    return zeros(t.shape, t.dtype if dtype is None else dtype)


def tensor(data: Any, dtype: DTypeLike | None = None) -> Tensor:
    """A new Tensor holding a copy of ``data`` (array, nested lists, scalar, Tensor)."""
    if isinstance(data, Tensor):
        data = data.numpy()
    arr = np.asarray(data)
    if dtype is None and arr.dtype == np.float64 and not isinstance(data, np.ndarray):
        dtype = np.float32  # Python floats: float32, as torch does (there is no float64 on the GPU)
    if dtype is None and arr.dtype == np.int64 and not isinstance(data, np.ndarray):
        dtype = np.int32 if arr.size == 0 or (np.abs(arr).max() < 2**31) else np.int64
    target = as_dtype(arr.dtype if dtype is None else dtype)
    t = _new(arr.shape, target)
    t._view[...] = arr.astype(target, copy=False)
    return t


def from_numpy(arr: np.ndarray) -> Tensor:
    """A Tensor with a copy of ``arr`` (same shape and dtype, C-contiguous). Device memory is always owned
    by the Tensor, so later changes to ``arr`` are not seen (and vice versa)."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"from_numpy expects a numpy.ndarray, got {type(arr).__name__}; use enceladus.tensor(data)")
    return tensor(arr, arr.dtype)


class _ExternalHostAllocation:
    """Host memory owned by another library (DLPack producer), kept alive by ``handle``."""

    __slots__ = ("address", "handle", "nbytes")

    def __init__(self, arr: np.ndarray) -> None:
        self.handle = arr
        self.address = int(arr.__array_interface__["data"][0])
        self.nbytes = arr.nbytes

    def host_view(self) -> np.ndarray:
        return self.handle


def from_dlpack(obj: Any, *, copy: bool | None = None) -> Tensor:
    """A Tensor from any DLPack producer (``__dlpack__``). On the ``cpu`` backend host memory is shared
    (zero-copy) unless ``copy=True``; memory the backend cannot use directly is copied."""
    from .backend import get_backend

    if isinstance(obj, Tensor):
        return tensor(obj) if copy else obj
    if not hasattr(obj, "__dlpack__"):
        raise TypeError(f"{type(obj).__name__} does not support DLPack (__dlpack__); use enceladus.tensor(data)")
    arr = np.from_dlpack(obj, device="cpu") if _dlpack_device(obj) != (1, 0) else np.from_dlpack(obj)
    if copy or get_backend().name != "cpu":
        return tensor(arr, arr.dtype)
    as_dtype(arr.dtype)  # refuses float64 & co with the usual message
    if any(s < 0 for s in arr.strides):
        return tensor(arr, arr.dtype)
    return Tensor(_ExternalHostAllocation(arr), arr)


def _dlpack_device(obj: Any) -> tuple[int, int]:
    dev = getattr(obj, "__dlpack_device__", None)
    return tuple(dev()) if callable(dev) else (1, 0)  # type: ignore[return-value]
