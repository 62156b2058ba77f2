"""Streams: one command queue, one open compute encoder, commits at sync points or every N dispatches."""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ...compiler.metal_limits import MAX_SET_BYTES
from ...errors import LaunchError
from .device import MetalDevice
from .objc import MTLSize, NSRange

MTLCommandBufferStatusCompleted = 4
MTLCommandBufferStatusError = 5
MTLCaptureDestinationGPUTraceDocument = 2
DEFAULT_BATCH = int(os.environ.get("ENCELADUS_METAL_BATCH", "32") or 32)

BufferRun = tuple[int, Sequence[int], Sequence[int]]  # (first slot, MTLBuffer handles, byte offsets)


def buffer_runs(bound: dict[int, tuple[int, int]]) -> list[BufferRun]:
    """Group {slot: (handle, offset)} into runs of consecutive slots, one setBuffers call each."""
    runs: list[BufferRun] = []
    for slot in sorted(bound):
        handle, offset = bound[slot]
        if runs and runs[-1][0] + len(runs[-1][1]) == slot:
            runs[-1][1].append(handle)  # type: ignore[attr-defined]
            runs[-1][2].append(offset)  # type: ignore[attr-defined]
        else:
            runs.append((slot, [handle], [offset]))
    return runs


@dataclass
class _Submitted:
    """A committed command buffer (retained) and what must outlive it."""

    handle: int
    kernels: list[str]
    keep_alive: list[Any] = field(default_factory=list)


@dataclass
class GPUTimer:
    """Filled in when a ``Stream.timed()`` block ends: GPU seconds for everything encoded in it."""

    seconds: float = 0.0
    dispatches: int = 0
    command_buffers: int = 0
    _handles: list[int] = field(default_factory=list)

# A prepared run of consecutive buffer slots: (handles array, offsets array, NSRange) for one setBuffers call.
PreparedRun = tuple[Any, Any, NSRange]


class Stream:
    """An in-order queue of kernel launches on one device (``MTLCommandQueue``).

    Launches are encoded into one open compute encoder; the command buffer is committed when
    ``synchronize()`` is called, or after ``batch`` dispatches so the GPU starts early.
    """

    def __init__(self, device: MetalDevice, batch: int = DEFAULT_BATCH) -> None:
        self.device = device
        self.bridge = device.bridge
        self.batch = max(1, batch)
        with self.bridge.autorelease_pool():  # Metal may autorelease internally: a Python thread has no pool
            queue = self.bridge.send(device.handle, "newCommandQueue")
        if not queue:
            raise LaunchError("Metal could not create a command queue")
        self.queue = int(queue)  # +1
        self._cb = 0
        self._encoder = 0
        self._pipeline = 0
        self._kernels: list[str] = []
        self._keep: list[Any] = []
        self._submitted: list[_Submitted] = []
        self._failures: list[str] = []
        self._timer: GPUTimer | None = None
        b = self.bridge
        # Hot-path senders bound once: a launch is these few calls and nothing else.
        self._set_pipeline = b.method("setComputePipelineState:")
        self._set_buffers = b.method("setBuffers:offsets:withRange:")
        self._set_bytes = b.method("setBytes:length:atIndex:")
        self._dispatch = b.method("dispatchThreadgroups:threadsPerThreadgroup:")
        self._dispatch_threads = b.method("dispatchThreads:threadsPerThreadgroup:")
        self._pool_push = b.c("objc_autoreleasePoolPush")
        self._pool_pop = b.c("objc_autoreleasePoolPop")

    # -- encoding --------------------------------------------------------------------------------
    def _open(self) -> int:
        b = self.bridge
        with b.autorelease_pool():
            cb = b.send(self.queue, "commandBuffer")
            if not cb:
                raise LaunchError("Metal returned no command buffer")
            b.retain(cb)  # +0 from the queue; ours until it completes
            enc = b.send(cb, "computeCommandEncoder")
            if not enc:
                b.release(cb)
                raise LaunchError("Metal returned no compute command encoder")
            b.retain(enc)
        self._cb, self._encoder, self._pipeline = int(cb), int(enc), 0
        return self._encoder

    def encode(self, pipeline: int, kernel: str, buffer_runs: Sequence[BufferRun], scalars: bytes | None,
               scalar_slot: int | None, threadgroup_memory: dict[int, int], groups: tuple[int, int, int],
               threads: tuple[int, int, int], keep_alive: Sequence[Any] = ()) -> None:
        """Encode one ``dispatchThreadgroups``: one ``setBuffers`` per run of consecutive slots (one in
        generated kernels), one ``setBytes`` for the packed scalars."""
        runs = [((ctypes.c_void_p * len(h))(*h), (ctypes.c_uint64 * len(h))(*o), NSRange(first, len(h)))
                for first, h, o in buffer_runs]
        if scalars is not None and scalar_slot is not None and len(scalars) >= MAX_SET_BYTES:
            raise LaunchError(f"kernel '{kernel}': {len(scalars)} bytes of scalar arguments exceed setBytes' "
                              f"{MAX_SET_BYTES}-byte limit")
        tg = tuple(((nbytes + 15) // 16 * 16, slot) for slot, nbytes in threadgroup_memory.items())
        self.encode_prepared(pipeline, kernel, runs, scalars, scalar_slot if scalars is not None else None, tg,
                             MTLSize(*groups), MTLSize(*threads), False, keep_alive)

    def encode_prepared(self, pipeline: int, kernel: str, runs: Sequence[PreparedRun], scalars: bytes | None,
                        scalar_slot: int | None, threadgroup_memory: Sequence[tuple[int, int]], size: MTLSize,
                        threads: MTLSize, dispatch_threads: bool, keep_alive: Any = None,
                        resident: Sequence[int] = ()) -> None:
        """The hot path: ``setBuffers`` per prepared run, ``setBytes`` for scalars, one dispatch (``size`` is
        threadgroups, or threads with ``dispatch_threads``); ``keep_alive`` lives until the GPU is done.
        ``resident``: handles of buffers the kernel reaches through integer addresses (``useResources:``).

        Inside an autorelease pool (MSL_AUDIT D8): a Python thread has none, so anything Metal autoreleases
        internally would otherwise leak for the life of the process (a push and a pop cost nanoseconds)."""
        pool = self._pool_push()
        try:
            self._encode_prepared(pipeline, kernel, runs, scalars, scalar_slot, threadgroup_memory, size, threads,
                                  dispatch_threads, keep_alive, resident)
        finally:
            self._pool_pop(pool)

    def _encode_prepared(self, pipeline: int, kernel: str, runs: Sequence[PreparedRun], scalars: bytes | None,
                         scalar_slot: int | None, threadgroup_memory: Sequence[tuple[int, int]], size: MTLSize,
                         threads: MTLSize, dispatch_threads: bool, keep_alive: Any = None,
                         resident: Sequence[int] = ()) -> None:
        enc = self._encoder or self._open()
        if pipeline != self._pipeline:
            fn, sel = self._set_pipeline
            fn(enc, sel, pipeline)
            self._pipeline = pipeline
        fn, sel = self._set_buffers
        for handles, offsets, rng in runs:
            fn(enc, sel, handles, offsets, rng)
        if scalar_slot is not None:
            fn, sel = self._set_bytes
            fn(enc, sel, scalars, len(scalars), scalar_slot)  # type: ignore[arg-type]
        for nbytes, slot in threadgroup_memory:
            self.bridge.send(enc, "setThreadgroupMemoryLength:atIndex:", nbytes, slot)
        if resident:  # read and written through integer addresses: MTLResourceUsageRead | MTLResourceUsageWrite
            self.bridge.send(enc, "useResources:count:usage:", (ctypes.c_void_p * len(resident))(*resident),
                             len(resident), 3)
        fn, sel = self._dispatch_threads if dispatch_threads else self._dispatch
        fn(enc, sel, size, threads)
        self._kernels.append(kernel)
        if keep_alive is not None:
            self._keep.append(keep_alive)
        if self._timer is not None:
            self._timer.dispatches += 1
        elif len(self._kernels) >= self.batch:
            self.flush()

    def hold(self, obj: Any) -> None:
        """Keep ``obj`` alive until the work encoded so far has completed."""
        self._keep.append(obj)

    def flush(self) -> None:
        """End the open encoder and commit its command buffer (does not wait); inside an autorelease pool."""
        if not self._encoder:
            return
        with self.bridge.autorelease_pool():
            self._flush()

    def _flush(self) -> None:
        b = self.bridge
        b.send(self._encoder, "endEncoding")
        b.release(self._encoder)
        b.send(self._cb, "commit")
        if self._timer is not None:
            self._timer._handles.append(b.retain(self._cb))  # read its timestamps when the block ends
        self._submitted.append(_Submitted(self._cb, self._kernels, self._keep))
        self._cb = self._encoder = self._pipeline = 0
        self._kernels, self._keep = [], []
        self._retire(wait=False)

    def _retire(self, wait: bool) -> None:
        """Release finished command buffers (oldest first), recording failures; ``wait`` waits for all (inside an
        autorelease pool: waitUntilCompleted and status may autorelease internally)."""
        if not self._submitted:
            return
        with self.bridge.autorelease_pool():
            self._retire_in_pool(wait)

    def _retire_in_pool(self, wait: bool) -> None:
        b = self.bridge
        while self._submitted:
            item = self._submitted[0]
            if wait:
                b.send(item.handle, "waitUntilCompleted")
            status = int(b.send(item.handle, "status"))
            if status < MTLCommandBufferStatusCompleted:
                if not wait:
                    return
                raise LaunchError(f"a Metal command buffer ended waitUntilCompleted with status {status}")
            if status == MTLCommandBufferStatusError:
                text = b.error_text(b.send(item.handle, "error"))
                self._failures.append(f"kernel(s) {', '.join(dict.fromkeys(item.kernels))}: {text}")
            self._submitted.pop(0)
            b.release(item.handle)
            item.keep_alive.clear()

    @property
    def idle(self) -> bool:
        """True when nothing is encoded or in flight (finished command buffers are retired)."""
        if self._kernels:
            return False
        self._retire(wait=False)
        return not self._submitted

    def synchronize(self) -> None:
        """Commit pending work and wait for all of it; raise LaunchError naming the kernels if the GPU failed."""
        self.flush()
        self._retire(wait=True)
        if self._failures:
            failures, self._failures = self._failures, []
            raise LaunchError("a Metal command buffer failed:\n" + "\n".join(failures))

    # -- timing and capture ----------------------------------------------------------------------
    @contextmanager
    def timed(self) -> Iterator[GPUTimer]:
        """Time the launches of the block with GPU timestamps (``GPUEndTime - GPUStartTime``).

        Asynchronous launches inside the block go into one command buffer (no intermediate commits);
        synchronous ones (NumPy arguments) commit their own. On exit everything is committed and
        waited for; ``timer.seconds`` is the sum over the block's command buffers (divide by the
        number of launches for a per-launch time: Apple GPUs sample timestamps only at command-buffer
        boundaries).
        """
        self.synchronize()
        timer = GPUTimer()
        self._timer = timer
        try:
            yield timer
            self.flush()
        finally:
            self._timer = None
            b = self.bridge
            try:
                self.synchronize()
                for cb in timer._handles:
                    timer.seconds += float(b.send(cb, "GPUEndTime")) - float(b.send(cb, "GPUStartTime"))
                timer.command_buffers = len(timer._handles)
            finally:
                for cb in timer._handles:
                    b.release(cb)
                timer._handles.clear()

    def capture(self, path: str, body: Callable[[], None]) -> None:
        """Record a GPU capture (``.gputrace``) of the work ``body`` encodes; needs MTL_CAPTURE_ENABLED=1."""
        if os.environ.get("MTL_CAPTURE_ENABLED") != "1":
            raise LaunchError("ENCELADUS_CAPTURE needs MTL_CAPTURE_ENABLED=1 in the environment before the process "
                              "starts (Metal reads it when the device is created)")
        b = self.bridge
        self.synchronize()
        with b.autorelease_pool():
            manager = b.send(b.cls("MTLCaptureManager"), "sharedCaptureManager")
            if not b.send(manager, "supportsDestination:", MTLCaptureDestinationGPUTraceDocument):
                raise LaunchError("this Mac cannot write .gputrace capture documents")
            desc = b.new("MTLCaptureDescriptor")
            url_path = b.nsstring(os.path.abspath(path))
            try:
                b.send(desc, "setCaptureObject:", self.device.handle)
                b.send(desc, "setDestination:", MTLCaptureDestinationGPUTraceDocument)
                b.send(desc, "setOutputURL:", b.send(b.cls("NSURL"), "fileURLWithPath:", url_path))
                err = ctypes.c_void_p()
                if not b.send(manager, "startCaptureWithDescriptor:error:", desc, ctypes.byref(err)):
                    raise LaunchError(f"GPU capture to {path} failed to start: {b.error_text(err.value)}")
            finally:
                b.release(url_path)
                b.release(desc)
            try:
                body()
                self.synchronize()
            finally:
                b.send(manager, "stopCapture")

    def close(self) -> None:
        """Wait for outstanding work and release the queue."""
        if self.queue:
            self.synchronize()
            self.bridge.release(self.queue)
            self.queue = 0


class MetalQueue:
    """A ``Stream`` behind the backend-neutral queue interface of ``enceladus.Stream``.

    ``submit(run, packet, keepalive)`` encodes at once (``run(packet, stream, keepalive)``) into the
    open encoder; ``synchronize`` commits and waits, keeping a GPU failure in ``error`` for
    ``take_error`` (as the cpu backend's queue does).
    """

    def __init__(self, stream: Stream) -> None:
        self.stream = stream
        self.error: BaseException | None = None
        self.lock = threading.RLock()  # several threads may launch on one stream

    def submit(self, run: Callable[..., None], packet: Any, keepalive: Any = None) -> None:
        """Encode ``packet`` now; ``keepalive`` lives until its command buffer has completed."""
        with self.lock:
            run(packet, self.stream, keepalive)

    @property
    def idle(self) -> bool:
        """True when every launch submitted so far has finished."""
        with self.lock:
            return self.stream.idle

    def synchronize(self) -> None:
        """Commit and wait; a failure stays in ``error``."""
        with self.lock:
            try:
                self.stream.synchronize()
            except LaunchError as exc:
                if self.error is None:
                    self.error = exc

    def take_error(self) -> BaseException | None:
        """The first error since the last call, cleared."""
        with self.lock:
            err, self.error = self.error, None
        return err

    def timed(self) -> Any:
        """``Stream.timed()`` of this queue's stream (used by ``enceladus.testing.do_bench``)."""
        return self.stream.timed()
