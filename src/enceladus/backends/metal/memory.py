"""Device memory on Metal: shared-storage MTLBuffers, and binding host (NumPy) memory to kernels.

The arithmetic here (page rounding, address lookup) is plain Python with no Objective-C, tested
directly on Linux; only ``MetalDevice.new_buffer`` / ``wrap_memory`` touch Metal.
"""

from __future__ import annotations

import bisect
import contextlib
import ctypes
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .device import MetalDevice

PAGE_SIZE = 16 * 1024  # Apple silicon's page size (a multiple of 4 KiB pages elsewhere)
KDL_METAL = 8


@dataclass(frozen=True)
class PageSpan:
    """Host memory rounded out to whole pages: wrap [base, base + length), bind at ``offset``."""

    base: int
    length: int
    offset: int


def page_span(address: int, nbytes: int, page: int = PAGE_SIZE) -> PageSpan:
    """The whole pages covering ``nbytes`` at ``address`` (how PyTorch wraps host memory for Metal)."""
    if address <= 0 or nbytes < 0:
        raise ValueError(f"bad host range: address {address:#x}, {nbytes} bytes")
    base = address - address % page
    end = address + max(nbytes, 1)
    end += -end % page
    return PageSpan(base, end - base, address - base)


def byte_extent(arr: np.ndarray) -> tuple[int, int]:
    """(lowest address, number of bytes) an array's elements span, for any non-negative strides."""
    if arr.size == 0:
        return arr.ctypes.data, 0
    last = sum((n - 1) * s for n, s in zip(arr.shape, arr.strides))
    return arr.ctypes.data, last + arr.itemsize


class _HostMemory:
    """Exposes a buffer's contents to NumPy (``__array_interface__``) and keeps the buffer alive."""

    __slots__ = ("__array_interface__", "owner")

    def __init__(self, owner: MetalBuffer) -> None:
        self.owner = owner
        self.__array_interface__ = {"data": (owner.address, False), "shape": (owner.nbytes,), "typestr": "|u1",
                                    "version": 3}


class MetalBuffer:
    """A shared-storage MTLBuffer we own: ``address`` (its ``contents()``), ``handle``, ``nbytes``.

    This is the object ``MetalBackend.alloc`` returns for ``enceladus.Tensor`` storage (``host_view``,
    ``device``, ``dlpack_device``, ``dlpack``). Its memory is CPU-visible (Apple silicon unified
    memory); reading it while a kernel may still write it needs ``synchronize()`` first.
    """

    device = "metal"  # what enceladus.Tensor.device reports

    def __init__(self, metal: MetalDevice, handle: int, nbytes: int, address: int,
                 registry: AllocationRegistry | None = None, owner: object = None) -> None:
        self.metal = metal
        self.handle = handle
        self.nbytes = nbytes
        self.address = address
        self._registry = registry
        self._owner = owner  # host memory a no-copy buffer wraps: kept alive as long as the buffer
        if registry is not None:
            registry.add(self)

    @classmethod
    def allocate(cls, metal: MetalDevice, nbytes: int, registry: AllocationRegistry | None = None) -> MetalBuffer:
        """A new zero-length-safe shared buffer of ``nbytes``."""
        handle = metal.new_buffer(nbytes)
        address = int(metal.bridge.send(handle, "contents") or 0)
        if not address:  # a buffer whose storage is not host-visible (Private) has nil contents
            metal.bridge.release(handle)
            raise RuntimeError(f"Metal gave a new {nbytes}-byte buffer no host address (contents is nil): "
                               "Enceladus needs Shared storage, which every Apple-silicon Mac provides")
        return cls(metal, handle, int(nbytes), address, registry)

    def gpu_address(self) -> int:
        """The buffer's ``gpuAddress`` (Metal 3): what a kernel that makes pointers from integers
        (``x.to(tl.pointer_type(...))``) must be given. The buffer is then made resident (``useResources:``) on every
        launch of such a kernel while it lives (docs/memory.md, integer addresses; unverified on hardware)."""
        address = int(self.metal.bridge.send(self.handle, "gpuAddress") or 0)
        if not address:
            raise RuntimeError("Metal gave this buffer no GPU address (gpuAddress is 0): integer addresses need "
                               "Metal 3 (macOS 13 or later on Apple silicon)")
        self.metal.addressed[self.handle] = self
        return address

    def host_view(self) -> np.ndarray:
        """The whole buffer as a writable uint8 NumPy array (zero-copy; the array keeps the buffer alive)."""
        return np.asarray(_HostMemory(self))

    def numpy(self, dtype: np.dtype | str = np.uint8) -> np.ndarray:
        """A zero-copy NumPy view of the whole buffer as ``dtype``."""
        return self.host_view().view(dtype)

    def dlpack_device(self) -> tuple[int, int]:
        """``(kDLMetal, 0)``: the native DLPack device of Metal memory."""
        return (KDL_METAL, 0)

    def dlpack(self, tensor: Any, *, stream: Any = None, max_version: tuple[int, int] | None = None,
               dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        """``tensor.__dlpack__``: kDLMetal (buffer handle + byte offset) natively, kDLCPU (the contents
        pointer) when asked for ``dl_device=(1, 0)``; both after synchronizing every stream."""
        from .dlpack import export_tensor

        return export_tensor(self, tensor, max_version=max_version, dl_device=dl_device, copy=copy)

    def release(self) -> None:
        """Give the MTLBuffer back (idempotent). Do not call while a kernel still uses it."""
        if self.handle:
            if self._registry is not None:
                self._registry.remove(self)
            self.metal.bridge.release(self.handle)
            self.handle = 0
            self._owner = None

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # interpreter shutdown
            self.release()

    def __repr__(self) -> str:
        return f"<MetalBuffer {self.nbytes} bytes at {self.address:#x}>"


class AllocationRegistry:
    """Live MetalBuffers by address, so a raw ``data_ptr`` can be bound as (buffer, offset)."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._buffers: list[MetalBuffer] = []
        self.exact: dict[int, MetalBuffer] = {}  # start address -> buffer: the launch path's one dict lookup

    def add(self, buf: MetalBuffer) -> None:
        """Register a live buffer."""
        i = bisect.bisect_left(self._starts, buf.address)
        self._starts.insert(i, buf.address)
        self._buffers.insert(i, buf)
        self.exact.setdefault(buf.address, buf)

    def remove(self, buf: MetalBuffer) -> None:
        """Forget a buffer (it is being released)."""
        for i in range(bisect.bisect_left(self._starts, buf.address), len(self._starts)):
            if self._buffers[i] is buf:
                del self._starts[i], self._buffers[i]
                break
        if self.exact.get(buf.address) is buf:
            del self.exact[buf.address]
            j = bisect.bisect_left(self._starts, buf.address)
            if j < len(self._starts) and self._starts[j] == buf.address:
                self.exact[buf.address] = self._buffers[j]

    def find(self, address: int) -> tuple[MetalBuffer, int] | None:
        """(buffer, offset) of the live buffer containing ``address``, or None."""
        i = bisect.bisect_right(self._starts, address) - 1
        if i >= 0:
            buf = self._buffers[i]
            if address < buf.address + max(buf.nbytes, 1):
                return buf, address - buf.address
        return None

    def __len__(self) -> int:
        return len(self._buffers)


@dataclass
class HostBinding:
    """One NumPy array bound to a kernel slot for one synchronous launch."""

    buffer: MetalBuffer
    offset: int
    array: np.ndarray
    copy_back: bool  # a copied (not wrapped) array the kernel may write: copy out after the launch

    def finish(self) -> None:
        """After the GPU is done: copy results out if needed and give the temporary buffer back."""
        if self.copy_back:
            start, nbytes = byte_extent(self.array)
            ctypes.memmove(start, self.buffer.address + self.offset, nbytes)
        self.buffer.release()


def bind_host_array(device: MetalDevice, arr: np.ndarray, writes: bool, name: str) -> HostBinding:
    """Bind ``arr``'s memory: wrapped without a copy when Metal accepts it, else copied in (and out).

    ``ENCELADUS_METAL_HOST_COPY=1`` always copies (to rule the no-copy path out when debugging).
    """
    if writes and not arr.flags.writeable:
        raise ValueError(f"argument '{name}' is a read-only array, but the kernel stores through it; "
                         "pass a writeable array (e.g. arr.copy())")
    start, nbytes = byte_extent(arr)
    if nbytes and os.environ.get("ENCELADUS_METAL_HOST_COPY", "0") in ("", "0"):
        span = page_span(start, nbytes)
        handle = device.wrap_memory(span.base, span.length)
        if handle is not None:
            buf = MetalBuffer(device, handle, span.length, span.base, owner=arr)
            return HostBinding(buf, span.offset, arr, copy_back=False)
    buf = MetalBuffer.allocate(device, nbytes)
    if nbytes:
        ctypes.memmove(buf.address, start, nbytes)
    return HostBinding(buf, 0, arr, copy_back=writes and nbytes > 0)
