"""The metal backend's half of the launch protocol: ``program.launcher(...)`` -> ``pack`` / ``run``.

The runtime (runtime/launch.py, runtime/shader.py) hands every launch over as buffer *addresses*
plus scalar values. ``pack`` keeps the addresses and packs the scalars once; ``run`` turns each
address into (MTLBuffer, offset) -- one dict lookup when it is the start of a live allocation (a
Tensor's storage), a bisection otherwise -- and encodes: one ``setBuffers:offsets:withRange:`` per run
of consecutive slots (one for generated kernels), one ``setBytes:`` for the packed scalars, one
dispatch. Host memory (NumPy arrays, torch CPU tensors) only reaches ``run_host``, the synchronous
path, which wraps it without a copy (whole 16 KiB pages, bound at an offset) or copies it in and out.
"""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...compiler.metal_limits import MAX_GRID
from ...errors import LaunchError
from .memory import HostBinding, MetalBuffer, bind_host_array
from .objc import MTLSize, NSRange
from .stream import MAX_SET_BYTES, MetalQueue, Stream

if TYPE_CHECKING:
    from .backend import MetalBackend, MetalFunction

_U32 = MAX_GRID


class MetalLauncher:
    """One kernel bound to fixed buffer slots, threads per threadgroup and scalar layout (validated once)."""

    __slots__ = ("name", "backend", "pipeline", "nbuf", "slots", "runs", "scalars", "args_slot", "threads",
                 "tptg", "tg", "writes", "exact", "registry", "integer_addresses",
                 "extents_index")

    def __init__(self, function: MetalFunction, buffer_slots: Sequence[int], threads_per_threadgroup: Sequence[int],
                 args_slot: int | None = None, args_format: str = "",
                 threadgroup_memory: Mapping[int, int] | None = None) -> None:
        self.name = function.name
        self.backend: MetalBackend = function.library.backend
        slots = [int(s) for s in buffer_slots]
        if slots != sorted(slots):
            raise LaunchError(f"kernel '{self.name}': launcher buffer_slots must be ascending")
        wanted = set(function.slot_writes)
        given = set(slots) | ({args_slot} if args_slot is not None else set())
        if given != wanted:
            raise LaunchError(f"kernel '{self.name}' takes buffers at slots {sorted(wanted)}; "
                              f"missing {sorted(wanted - given)}, unknown {sorted(given - wanted)}")
        self.tptg = function.triple("threads_per_threadgroup", threads_per_threadgroup, 1)
        tg = dict(threadgroup_memory or {})
        if set(tg) != function.threadgroup_slots:
            raise LaunchError(f"kernel '{self.name}' takes threadgroup memory at slots "
                              f"{sorted(function.threadgroup_slots)}; got lengths for {sorted(tg)}")
        function.check_resources(self.tptg, tg)
        self.tg = tuple(((n + 15) // 16 * 16, slot) for slot, n in sorted(tg.items()))
        self.pipeline = function.pipeline.handle
        self.nbuf = len(slots)
        self.slots = tuple(slots)
        self.writes = tuple(function.slot_writes[s] for s in slots)
        # runs of consecutive slots: (first slot, first index, count, handles array type, offsets array type)
        runs: list[list[int]] = []
        for i, slot in enumerate(slots):
            if runs and runs[-1][0] + runs[-1][2] == slot:
                runs[-1][2] += 1
            else:
                runs.append([slot, i, 1])
        self.runs = tuple((first, start, n, ctypes.c_void_p * n, ctypes.c_uint64 * n) for first, start, n in runs)
        self.args_slot = args_slot
        self.scalars = struct.Struct("<" + args_format) if args_slot is not None else None
        if self.scalars is not None and self.scalars.size >= MAX_SET_BYTES:
            raise LaunchError(f"kernel '{self.name}': {self.scalars.size} bytes of scalar arguments exceed setBytes' "
                              f"{MAX_SET_BYTES}-byte limit")
        self.threads = MTLSize(*self.tptg)
        self.exact = self.backend.registry.exact
        self.registry = self.backend.registry
        # the kernel makes pointers from integers: every buffer whose gpuAddress was handed out is made resident
        self.integer_addresses = False
        # msl_bounds_checks (debug mode): the index among the buffers of the extents buffer, whose host byte spans
        # run_host rewrites as GPU addresses (see _gpu_extents)
        self.extents_index: int | None = None

    # -- the protocol ----------------------------------------------------------------------------
    def pack(self, groups: Sequence[int], gsize: Sequence[int], *values: Any) -> tuple[Any, ...]:
        """One launch: ``values`` are the buffer addresses (slot order), then the scalars.

        Raises ``struct.error`` (as the cpu backend does) for grids past 32-bit thread ids and scalars
        outside their packed type."""
        if gsize[0] > _U32 or gsize[1] > _U32 or gsize[2] > _U32:
            raise struct.error("grid overflows 32-bit thread ids")
        n = self.nbuf
        packed = self.scalars.pack(*values[n:]) if self.scalars is not None else None
        return groups, gsize, values[:n], packed

    def run(self, packet: tuple[Any, ...], stream: Stream | None = None, objects: Any = None) -> None:
        """Encode the launch on ``stream`` (default: the backend's default stream). Every address must lie in
        memory of this backend (Tensors); ``objects`` (parallel to the addresses) supplies host arrays for
        the others, which are copied into temporary buffers kept until the GPU is done."""
        groups, gsize, addresses, scalars = packet
        stream = stream or self.backend.default_stream
        handles, offsets, temps = self._resolve(addresses, objects)
        if temps:
            for t in temps:
                stream.hold(t)
        self._encode(stream, groups, gsize, handles, offsets, scalars, objects)

    def run_host(self, packet: tuple[Any, ...], objects: Sequence[Any], queue: MetalQueue | None = None) -> None:
        """The synchronous path: bind host arrays among ``objects`` (wrapped, else copied in and out), encode on
        ``queue``'s stream, wait, and copy results back. Raises the GPU's error, if any, here."""
        with self.backend.device.bridge.autorelease_pool():  # wrapping, waiting: see Stream.encode_prepared
            self._run_host(packet, objects, queue)

    def _run_host(self, packet: tuple[Any, ...], objects: Sequence[Any], queue: MetalQueue | None) -> None:
        groups, gsize, addresses, scalars = packet
        stream = queue.stream if queue is not None else self.backend.default_stream
        handles: list[int] = []
        offsets: list[int] = []
        host: list[HostBinding] = []
        try:
            for i, a in enumerate(addresses):
                if i == self.extents_index:  # every pointer argument is bound by now (they come first)
                    self._gpu_extents(objects[i], addresses[:i], handles, offsets)
                known = self._known(a)
                if known is not None:
                    handles.append(known[0])
                    offsets.append(known[1])
                    continue
                arr = self.backend.host_view(objects[i])
                hb = bind_host_array(self.backend.device, arr, self.writes[i], f"buffer({self.slots[i]})")
                host.append(hb)
                handles.append(hb.buffer.handle)
                offsets.append(hb.offset)
            if queue is not None:
                with queue.lock:
                    self._encode(stream, groups, gsize, handles, offsets, scalars, objects)
                    stream.synchronize()
            else:
                self._encode(stream, groups, gsize, handles, offsets, scalars, objects)
                stream.synchronize()
        finally:
            for hb in host:
                hb.finish()

    # -- helpers ---------------------------------------------------------------------------------
    def _gpu_extents(self, extents: Any, addresses: Sequence[int], handles: list[int], offsets: list[int]) -> None:
        """The MSL's bounds checks compare device pointers, which on Metal are GPU addresses: each pointer
        argument's host span ``[lo, hi)`` (the runtime filled it) becomes ``gpuAddress + offset + (lo - address)``
        of the buffer it is bound to. Unverified on Apple hardware."""
        ext = self.backend.host_view(extents)
        bridge = self.backend.device.bridge
        for k in range(len(ext) // 2):
            gpu = int(bridge.send(handles[k], "gpuAddress") or 0) + offsets[k]
            ext[2 * k] = gpu + (int(ext[2 * k]) - addresses[k])
            ext[2 * k + 1] = gpu + (int(ext[2 * k + 1]) - addresses[k])

    def _known(self, address: int) -> tuple[int, int] | None:
        """(MTLBuffer handle, byte offset) of an address inside memory this backend allocated, else None."""
        buf = self.exact.get(address)
        if buf is not None:
            return buf.handle, 0
        found = self.registry.find(address)
        return (found[0].handle, found[1]) if found is not None else None

    def _resolve(self, addresses: Sequence[int], objects: Any) -> tuple[list[int], list[int], list[MetalBuffer]]:
        handles: list[int] = []
        offsets: list[int] = []
        temps: list[MetalBuffer] = []
        for i, a in enumerate(addresses):
            known = self._known(a)
            if known is not None:
                handles.append(known[0])
                offsets.append(known[1])
                continue
            if isinstance(objects, list) and len(objects) == len(addresses) and not self.writes[i]:
                temp = _copy_to_device(self.backend, self.backend.host_view(objects[i]))
                temps.append(temp)
                handles.append(temp.handle)
                offsets.append(0)
                continue
            raise LaunchError(f"kernel '{self.name}': buffer({self.slots[i]}) is the address {a:#x}, which is not "
                              "inside memory allocated by the metal backend; pass the NumPy array itself (it is "
                              "then wrapped or copied) or an enceladus.Tensor")
        return handles, offsets, temps

    def _encode(self, stream: Stream, groups: Sequence[int], gsize: Sequence[int], handles: list[int],
                offsets: list[int], scalars: bytes | None, keep: Any) -> None:
        runs = [(ht(*handles[s:s + n]), ot(*offsets[s:s + n]), NSRange(first, n))
                for first, s, n, ht, ot in self.runs]
        full = gsize[0] == groups[0] * self.tptg[0] and gsize[1] == groups[1] * self.tptg[1] \
            and gsize[2] == groups[2] * self.tptg[2]
        size = MTLSize(*groups) if full else MTLSize(*gsize)  # partial edge threadgroups: dispatchThreads
        backend = self.backend
        resident = tuple(backend.device.addressed) if self.integer_addresses else ()
        if backend.capture_requested:
            path = backend.take_capture_request()
            if path:
                stream.capture(path, lambda: stream.encode_prepared(
                    self.pipeline, self.name, runs, scalars, self.args_slot, self.tg, size, self.threads, not full,
                    keep, resident))
                return
        stream.encode_prepared(self.pipeline, self.name, runs, scalars, self.args_slot, self.tg, size, self.threads,
                               not full, keep, resident)


def _copy_to_device(backend: MetalBackend, arr: Any) -> MetalBuffer:
    """A temporary shared buffer holding a copy of a (small, read-only-bound) host array."""
    from .memory import byte_extent

    start, nbytes = byte_extent(arr)
    buf = MetalBuffer.allocate(backend.device, nbytes)
    if nbytes:
        ctypes.memmove(buf.address, start, nbytes)
    return buf
