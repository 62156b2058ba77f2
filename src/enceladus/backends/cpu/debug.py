"""Debug launches: every buffer is copied into memory fenced by PROT_NONE guard pages.

An access past either end of a buffer faults; the runtime's SIGSEGV handler jumps back into the
worker, which reports kernel, buffer (argument name) and threadgroup, abandons the threadgroup and
the launch fails with KernelLaunchError — the process keeps running. Buffers that overlap in memory
(the same array passed twice, views of one array) share one guarded copy so that aliasing is kept.

The data ends as close to the trailing guard page as its alignment allows: the data start keeps the
original address modulo 16 (specializations may rely on 16-byte alignment), so up to 15 bytes past
the end, and bytes before the start within the same page, are not caught.
"""

from __future__ import annotations

import ctypes
import mmap
import struct
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from .errors import KernelLaunchError

if TYPE_CHECKING:
    from .library import CpuFunction

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_PAGE = mmap.PAGESIZE
_PROT_NONE = 0  # POSIX value on Linux and macOS
_MAP_FAILED = ctypes.c_void_p(-1).value


class _Guard(ctypes.Structure):
    _fields_ = [("region_lo", ctypes.c_ulong), ("region_hi", ctypes.c_ulong), ("data_lo", ctypes.c_ulong),
                ("data_hi", ctypes.c_ulong), ("name", ctypes.c_char_p)]


class _Debug(ctypes.Structure):
    _fields_ = [("n_guards", ctypes.c_uint), ("race_check", ctypes.c_int), ("guards", ctypes.POINTER(_Guard))]


class _Region:
    """One guarded copy of the bytes [lo, hi) of host memory."""

    def __init__(self, lo: int, hi: int, name: str) -> None:
        self.lo, self.hi, self.name = lo, hi, name
        size = hi - lo
        skew = lo % 16
        span = (size + skew + 15) // 16 * 16
        data_pages = max(1, -(-span // _PAGE)) * _PAGE
        self.total = data_pages + 2 * _PAGE
        base = _libc.mmap(None, self.total, mmap.PROT_READ | mmap.PROT_WRITE,
                          mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
        if base in (None, _MAP_FAILED):
            raise KernelLaunchError(f"debug mode: cannot map {self.total} bytes for buffer '{name}'")
        self.base = base
        _libc.mprotect(base, _PAGE, _PROT_NONE)
        _libc.mprotect(base + _PAGE + data_pages, _PAGE, _PROT_NONE)
        self.data = base + _PAGE + data_pages - span + skew
        ctypes.memmove(self.data, lo, size)

    def address_of(self, addr: int) -> int:
        return self.data + (addr - self.lo)

    def copy_back(self) -> None:
        size = self.hi - self.lo
        new = np.ctypeslib.as_array((ctypes.c_ubyte * size).from_address(self.data))
        old = np.ctypeslib.as_array((ctypes.c_ubyte * size).from_address(self.lo))
        if not np.array_equal(new, old):  # never write to memory the kernel did not change (may be read-only)
            ctypes.memmove(self.lo, self.data, size)

    def free(self) -> None:
        _libc.munmap(self.base, self.total)


def debug_dispatch(fn: CpuFunction, groups: tuple[int, ...], tptg: tuple[int, ...], grid: tuple[int, ...],
                   buffers: Mapping[int, int], threadgroup_memory: Mapping[int, int] | None,
                   buffer_sizes: Mapping[int, int] | None) -> None:
    """Run one launch of ``fn`` with guarded buffer copies and (when it builds) race checking."""
    from .library import _GROUPS, MAX_BUFFERS

    names = {p.index: p.name for p in fn.signature.buffer_params}
    sizes = dict(buffer_sizes or {})
    missing = [f"'{names[s]}' [[buffer({s})]]" for s in buffers if s not in sizes]
    if missing:
        raise KernelLaunchError(f"kernel '{fn.name}': debug mode needs the size of every buffer; pass buffer_sizes= "
                                f"for {', '.join(missing)}")
    # Merge overlapping byte ranges so that aliased arguments stay aliased in the copies.
    spans = sorted((buffers[s], buffers[s] + max(int(sizes[s]), 1), s) for s in buffers)
    groups_of: list[list[tuple[int, int, int]]] = []
    for span in spans:
        if groups_of and span[0] < max(h for _, h, _ in groups_of[-1]):
            groups_of[-1].append(span)
        else:
            groups_of.append([span])
    regions: list[_Region] = []
    addresses: dict[int, int] = {}
    try:
        for members in groups_of:
            lo, hi = members[0][0], max(h for _, h, _ in members)
            label = " / ".join(names[s] for _, _, s in members)
            region = _Region(lo, hi, label)
            regions.append(region)
            for start, _, s in members:
                addresses[s] = region.address_of(start)
        guards = (_Guard * len(regions))(*[
            _Guard(r.base, r.base + r.total, r.data, r.data + (r.hi - r.lo), r.name.encode()) for r in regions])
        target = fn._library.race_checked_function(fn.name)
        info = _Debug(len(regions), 1 if target is not None else 0, guards)
        runner = target or fn
        head = runner._head(tptg, threadgroup_memory, None, 0, ctypes.addressof(info))
        table = [addresses.get(s, 0) for s in range(MAX_BUFFERS)]
        runner._run(head + struct.pack("<" + _GROUPS + f"{MAX_BUFFERS}Q", *groups, *grid, *table))
        for r in regions:
            r.copy_back()
    finally:
        for r in regions:
            r.free()


def warn_no_race_check(kernels: str, reason: str) -> None:
    """Tell the user once per library that race checking is off for it, and why."""
    first = reason.strip().splitlines()[0] if reason.strip() else "unknown reason"
    warnings.warn(f"ENCELADUS_DEBUG: threadgroup-memory race checking is unavailable for {kernels}: the "
                  f"instrumented build failed ({first}); out-of-bounds checks still run", RuntimeWarning,
                  stacklevel=4)
