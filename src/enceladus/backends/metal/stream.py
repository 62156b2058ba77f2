"""Streams: one command queue, one open compute encoder, commits at sync points or every N dispatches."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ...errors import LaunchError
from .device import MetalDevice
from .objc import MTLSize, NSRange

MTLCommandBufferStatusError = 5
MTLCaptureDestinationGPUTraceDocument = 2
MAX_SET_BYTES = 4096  # setBytes:length:atIndex: is documented for data below 4 KB
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


class Stream:
    """An in-order queue of kernel launches on one device (``MTLCommandQueue``).

    Launches are encoded into one open compute encoder; the command buffer is committed when
    ``synchronize()`` is called, or after ``batch`` dispatches so the GPU starts early.
    """

    def __init__(self, device: MetalDevice, batch: int = DEFAULT_BATCH) -> None:
        self.device = device
        self.bridge = device.bridge
        self.batch = max(1, batch)
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
        self._timing = False
        b = self.bridge
        # Hot-path senders bound once: a launch is these few calls and nothing else.
        self._set_pipeline = b.method("setComputePipelineState:")
        self._set_buffers = b.method("setBuffers:offsets:withRange:")
        self._set_bytes = b.method("setBytes:length:atIndex:")
        self._dispatch = b.method("dispatchThreadgroups:threadsPerThreadgroup:")

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
        enc = self._encoder or self._open()
        if pipeline != self._pipeline:
            fn, sel = self._set_pipeline
            fn(enc, sel, pipeline)
            self._pipeline = pipeline
        for first_slot, handles, offsets in buffer_runs:
            n = len(handles)
            fn, sel = self._set_buffers
            fn(enc, sel, (ctypes.c_void_p * n)(*handles), (ctypes.c_uint64 * n)(*offsets), NSRange(first_slot, n))
        if scalars is not None and scalar_slot is not None:
            if len(scalars) >= MAX_SET_BYTES:
                raise LaunchError(f"kernel '{kernel}': {len(scalars)} bytes of scalar arguments exceed setBytes' "
                                  f"{MAX_SET_BYTES}-byte limit")
            fn, sel = self._set_bytes
            fn(enc, sel, scalars, len(scalars), scalar_slot)
        for slot, nbytes in threadgroup_memory.items():
            self.bridge.send(enc, "setThreadgroupMemoryLength:atIndex:", (nbytes + 15) // 16 * 16, slot)
        fn, sel = self._dispatch
        fn(enc, sel, MTLSize(*groups), MTLSize(*threads))
        self._kernels.append(kernel)
        if keep_alive:
            self._keep.extend(keep_alive)
        if not self._timing and len(self._kernels) >= self.batch:
            self.flush()

    def flush(self) -> None:
        """End the open encoder and commit its command buffer (does not wait)."""
        if not self._encoder:
            return
        b = self.bridge
        b.send(self._encoder, "endEncoding")
        b.release(self._encoder)
        b.send(self._cb, "commit")
        self._submitted.append(_Submitted(self._cb, self._kernels, self._keep))
        self._cb = self._encoder = self._pipeline = 0
        self._kernels, self._keep = [], []

    def synchronize(self) -> None:
        """Commit pending work and wait for all of it; raise LaunchError naming the kernels if the GPU failed."""
        self.flush()
        failures = []
        b = self.bridge
        submitted, self._submitted = self._submitted, []
        for item in submitted:
            b.send(item.handle, "waitUntilCompleted")
            if int(b.send(item.handle, "status")) == MTLCommandBufferStatusError:
                with b.autorelease_pool():
                    text = b.error_text(b.send(item.handle, "error"))
                failures.append(f"kernel(s) {', '.join(dict.fromkeys(item.kernels))}: {text}")
            b.release(item.handle)
            item.keep_alive.clear()
        if failures:
            raise LaunchError("a Metal command buffer failed:\n" + "\n".join(failures))

    # -- timing and capture ----------------------------------------------------------------------
    @contextmanager
    def timed(self) -> Iterator[GPUTimer]:
        """Everything launched inside the block goes into one command buffer, timed with GPUStartTime/EndTime.

        On exit the buffer is committed and waited for; ``timer.seconds`` is the GPU time of the whole
        block (divide by the number of launches for a per-launch time: Apple GPUs sample timestamps
        only at command-buffer boundaries).
        """
        self.synchronize()
        timer = GPUTimer()
        self._timing = True
        try:
            yield timer
        finally:
            self._timing = False
        if not self._encoder:
            return
        cb = self._cb
        timer.dispatches = len(self._kernels)
        self.bridge.retain(cb)  # keep it past synchronize() to read its timestamps
        try:
            self.synchronize()
            timer.seconds = float(self.bridge.send(cb, "GPUEndTime")) - float(self.bridge.send(cb, "GPUStartTime"))
        finally:
            self.bridge.release(cb)

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
