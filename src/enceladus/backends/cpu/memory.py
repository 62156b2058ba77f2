"""Device memory of the cpu backend: page-aligned host allocations (16 KiB, like Apple-silicon pages)."""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable

import numpy as np

PAGE_ALIGNMENT = 16 * 1024

# The live allocations (address -> nbytes): a pointer a kernel makes from an integer address is checked against
# the one that holds it (checked.h address_owner). The runtime library, once loaded, is told of each (``track``).
LIVE: dict[int, int] = {}
_register: Callable[[int, int], None] | None = None
_unregister: Callable[[int], None] | None = None


def track(register: Callable[[int, int], None], unregister: Callable[[int], None]) -> None:
    """Forward the live allocations, and every later (un)registration, to the runtime library."""
    global _register, _unregister
    _register, _unregister = register, unregister
    for address, nbytes in list(LIVE.items()):
        register(address, nbytes)


def _forget(address: int) -> None:
    LIVE.pop(address, None)
    if _unregister is not None:
        _unregister(address)


class CpuAllocation:
    """``nbytes`` of host memory at ``address`` (16 KiB aligned); ``handle`` owns it (a NumPy byte array).

    The memory after ``nbytes`` (up to the next 16 KiB) is allocated too, so the 32-bit word holding the last
    16-bit element lies inside it (16-bit atomics rewrite that word). The Metal backend's allocation has the same
    three attributes (``handle`` is its ``MTLBuffer``),
    plus ``host_view()``: that is the whole interface enceladus.Tensor relies on.
    """

    __slots__ = ("address", "handle", "nbytes")

    def __init__(self, nbytes: int) -> None:
        if nbytes < 0:
            raise ValueError(f"cannot allocate {nbytes} bytes")
        # Over-allocate and start at the first aligned byte; the array keeps the memory alive.
        raw = np.empty(max(nbytes, 1) + PAGE_ALIGNMENT + 16, dtype=np.uint8)
        start = -raw.ctypes.data % PAGE_ALIGNMENT
        self.handle = raw[start : start + nbytes]
        self.address = raw.ctypes.data + start
        self.nbytes = nbytes
        LIVE[self.address] = nbytes
        if _register is not None:
            _register(self.address, nbytes)
        weakref.finalize(raw, _forget, self.address)  # the memory lives as long as the array

    def host_view(self) -> np.ndarray:
        """The allocation as a writable uint8 NumPy array (zero-copy)."""
        return self.handle

    def __repr__(self) -> str:
        return f"<CpuAllocation {self.nbytes} bytes at 0x{self.address:x}>"


def _pick_up_runtime() -> None:
    """Track with the runtime library if it was loaded before this module was imported (library._TRACKING)."""
    library = sys.modules.get(__package__ + ".library")
    tracking = getattr(library, "_TRACKING", None)
    if tracking:
        track(*tracking)


_pick_up_runtime()
