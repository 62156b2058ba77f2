"""Buffer storage modes on the recording stand-in: the host code needs Shared storage (host-visible memory
on unified-memory Macs). A Private buffer's contents are nil, as in Metal: reading it from the host fails.
A check of our host code against the stand-in's model, unverified on hardware."""

from __future__ import annotations

import numpy as np
import pytest

from enceladus.backends.metal import MetalBackend
from enceladus.backends.metal import device as metal_device

from .objc_recorder import RecordingObjCRuntime
from .test_host_code import launch_add

SHARED, MANAGED, PRIVATE, MEMORYLESS = 0 << 4, 1 << 4, 2 << 4, 3 << 4
UNTRACKED = 1 << 8


def test_the_host_code_allocates_shared_tracked_buffers(metal: MetalBackend, recorder: RecordingObjCRuntime) -> None:
    x = np.arange(1000, dtype=np.float32)
    out = np.zeros_like(x)
    launch_add(metal, x, x, out)  # no-copy wrapping of the NumPy arrays
    buf = metal.alloc(64)  # and an allocation of its own
    buf.numpy(np.float32)[:] = 3
    assert (buf.numpy(np.float32) == 3).all()
    options = [c[2][-1] for c in recorder.calls if c[1] == "newBufferWithLength:options:"]
    options += [c[2][2] for c in recorder.calls if c[1].startswith("newBufferWithBytesNoCopy")]
    assert len(options) >= 4
    assert {recorder.resource_options(o) for o in options} == {("DefaultCache", "Shared", "Default")}


def test_a_private_buffer_is_not_host_visible(recorder: RecordingObjCRuntime) -> None:
    backend = MetalBackend(runtime=recorder, macos=15)
    bridge = backend.device.bridge
    handle = bridge.send(backend.device.handle, "newBufferWithLength:options:", 64, PRIVATE)
    assert handle and recorder.violations == []  # allocating Private is legal in itself
    assert not bridge.send(handle, "contents")  # nil, as Metal answers for Private storage
    assert recorder.violations and "not host-visible" in recorder.violations[-1]


def test_allocating_private_where_shared_is_required_fails(recorder: RecordingObjCRuntime,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # the mutation the stand-in used to miss: every buffer allocated with Private storage
    monkeypatch.setattr(metal_device, "MTLResourceStorageModeShared", PRIVATE)
    backend = MetalBackend(runtime=recorder, macos=15)
    with pytest.raises(RuntimeError, match="no host address"):
        backend.alloc(256)
    x = np.arange(1000, dtype=np.float32)
    out = np.zeros_like(x)
    with pytest.raises(Exception):  # noqa: B017 (the copy path or the wrapping path, whichever comes first)
        launch_add(backend, x, x, out)
    assert any("not host-visible" in v or "needs Shared storage" in v for v in recorder.violations), \
        recorder.violations
    assert not np.array_equal(out, 2 * x)


@pytest.mark.parametrize("options,complaint", [
    (MANAGED, "Managed MTLBuffer"), (MEMORYLESS, "Memoryless MTLBuffer"), (SHARED | UNTRACKED, "untracked"),
    (1 << 12, "bits no MTLResourceOptions value defines")])
def test_other_storage_properties_the_host_code_cannot_use(recorder: RecordingObjCRuntime, options: int,
                                                           complaint: str) -> None:
    backend = MetalBackend(runtime=recorder, macos=15)
    assert not backend.device.bridge.send(backend.device.handle, "newBufferWithLength:options:", 64, options)
    assert complaint in recorder.violations[-1]


def test_wrapping_host_memory_needs_shared_storage(recorder: RecordingObjCRuntime) -> None:
    backend = MetalBackend(runtime=recorder, macos=15)
    page = np.zeros(2 * 16384, np.uint8)
    start = (-page.ctypes.data) % 16384
    address = page.ctypes.data + start
    send = backend.device.bridge.send
    assert send(backend.device.handle, "newBufferWithBytesNoCopy:length:options:deallocator:", address, 16384,
                SHARED, None)
    assert not send(backend.device.handle, "newBufferWithBytesNoCopy:length:options:deallocator:", address, 16384,
                    PRIVATE, None)
    assert "needs Shared storage" in recorder.violations[-1]
