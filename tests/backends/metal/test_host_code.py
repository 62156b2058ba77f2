"""The metal backend's host code against the recording stand-in: call sequence, widths, ownership.

A check of our call sequence, not of Metal: see objc_recorder.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import enceladus
from enceladus.backends.metal import MetalBackend, MetalCompileError
from enceladus.backends.metal.device import MTLLanguageVersion3_2, MTLLanguageVersion4_0
from enceladus.backends.metal.memory import PAGE_SIZE
from enceladus.errors import LaunchError, OutOfResources
from enceladus.runtime.launch import pack_scalars

from . import kernels
from .objc_recorder import RecordingObjCRuntime

BLOCK = 256


def compiled(fn=kernels.add_kernel, sig="*fp32,*fp32,*fp32,i32"):
    return enceladus.compile(fn, sig, {"BLOCK": BLOCK})


def launch_add(metal: MetalBackend, x, y, out, **kw):
    ck = compiled()
    fn = metal.compile(ck.asm["msl"]).function(ck.abi.kernel_name)
    grid = (enceladus.cdiv(x.size, BLOCK), 1, 1)
    buffers = {0: x, 1: y, 2: out, ck.abi.args_slot: pack_scalars(ck, {"n": x.size})}
    fn.launch(grid, (ck.abi.threads_per_threadgroup, 1, 1), buffers, **kw)
    return fn


def test_device_setup_sequence(metal: MetalBackend, recorder: RecordingObjCRuntime) -> None:
    sent = recorder.selectors_sent()
    assert sent[:2] == ["name", "UTF8String"]
    # the language version is confirmed by building a probe pipeline
    i = sent.index("newLibraryWithSource:options:error:")
    assert sent[i - 5:i] == ["setLanguageVersion:", "setMathMode:", "setMathFloatingPointFunctions:", "alloc",
                             "initWithBytes:length:encoding:"]
    assert "newComputePipelineStateWithFunction:error:" in sent
    assert metal.device.language_version == MTLLanguageVersion3_2
    assert metal.device_name == "Recording stand-in (not a GPU)"
    assert sent[-1] == "newCommandQueue"


def test_language_version_is_probed_newest_first_never_read_from_the_os(cpu) -> None:
    # macOS 26 seen as "16" by a Python linked against an older SDK (MSL_AUDIT B4): the probe still finds 4.0
    rec = RecordingObjCRuntime(cpu_backend=cpu, msl_versions=(0x30002, 0x40000))
    backend = MetalBackend(runtime=rec, macos=16)
    assert backend.device.language_version == MTLLanguageVersion4_0
    assert backend.device.language_name == "4.0" and backend.device.language_probes == {"4.0": "ok"}
    # an OS that compiles only 3.2, whatever it claims to be: 4.0 is tried first, refused, then 3.2
    rec = RecordingObjCRuntime(cpu_backend=cpu)
    backend = MetalBackend(runtime=rec, macos=26)
    assert backend.device.language_version == MTLLanguageVersion3_2
    versions = [o.data["options"]["languageVersion"] for o in rec.objects.values() if o.kind == "MTLLibrary"]
    assert versions == [0x30002]
    assert backend.device.language_probes["4.0"].startswith("Unsupported language version")
    assert rec.violations == [] and rec.unpooled == []


def test_compile_options_are_explicit(metal: MetalBackend, recorder: RecordingObjCRuntime) -> None:
    ck = compiled()
    metal.compile(ck.asm["msl"])
    metal.compile(ck.asm["msl"], fast_math=True)
    libs = [o for o in recorder.objects.values() if o.kind == "MTLLibrary" and "add_kernel" in o.data["source"]]
    assert [lib.data["options"] for lib in libs] == [
        {"languageVersion": 0x30002, "mathMode": 0, "mathFloatingPointFunctions": 1},
        {"languageVersion": 0x30002, "mathMode": 2, "mathFloatingPointFunctions": 0},
    ]


def test_compile_error_carries_metal_log(metal: MetalBackend) -> None:
    with pytest.raises(MetalCompileError, match="error: bad token here"):
        metal.compile("#error bad token here\nkernel void k(device float* p [[buffer(0)]]) {}\n")


def test_vector_add_end_to_end_through_host_code(metal: MetalBackend, recorder: RecordingObjCRuntime) -> None:
    x = np.random.default_rng(0).standard_normal(5000).astype(np.float32)
    y = np.ones_like(x)
    out = np.zeros_like(x)
    launch_add(metal, x, y, out)
    np.testing.assert_allclose(out, x + y)
    assert recorder.executed[-1] == "add_kernel"
    sent = recorder.selectors_sent()
    launch = sent[sent.index("commandBuffer"):]
    assert launch[:4] == ["commandBuffer", "retain", "computeCommandEncoder", "retain"]
    assert launch.count("setBuffers:offsets:withRange:") == 1
    assert launch.count("setBytes:length:atIndex:") == 1
    assert launch.index("endEncoding") < launch.index("commit") < launch.index("waitUntilCompleted")


def test_numpy_wrapped_without_copy_and_bound_with_offset(metal: MetalBackend,
                                                          recorder: RecordingObjCRuntime) -> None:
    x = np.arange(4096, dtype=np.float32)[1:3001]  # not page aligned
    y = np.ones(3000, dtype=np.float32)
    out = np.zeros(3000, dtype=np.float32)
    launch_add(metal, x, y, out)
    np.testing.assert_allclose(out, x + 1)
    nocopy = [c for c in recorder.calls if c[1] == "newBufferWithBytesNoCopy:length:options:deallocator:"]
    assert len(nocopy) == 3
    bound = recorder.bound_history[-1]
    assert sorted(bound) == [0, 1, 2]
    assert bound[0][1] == x.ctypes.data % PAGE_SIZE  # bound at an offset into whole 16 KiB pages


def test_numpy_copy_path(metal: MetalBackend, recorder: RecordingObjCRuntime, monkeypatch) -> None:
    monkeypatch.setenv("ENCELADUS_METAL_HOST_COPY", "1")
    x = np.linspace(0, 1, 1000, dtype=np.float32)
    out = np.zeros_like(x)
    launch_add(metal, x, x, out)
    np.testing.assert_allclose(out, 2 * x)
    assert not any(c[1].startswith("newBufferWithBytesNoCopy") for c in recorder.calls)


def test_strided_view_is_bound_in_place(metal: MetalBackend) -> None:
    base = np.zeros(2000, dtype=np.float32)
    out = base[::2]  # strided output: the kernel itself indexes contiguously, so pass a contiguous view
    x = np.ones(1000, dtype=np.float32)
    launch_add(metal, x, x, base[:1000])
    assert (base[:1000] == 2).all() and (out[500:] == 0).all()


def test_read_only_output_is_refused(metal: MetalBackend) -> None:
    x = np.ones(10, dtype=np.float32)
    out = np.zeros(10, dtype=np.float32)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="read-only array"):
        launch_add(metal, x, x, out)


def test_out_of_resources(recorder: RecordingObjCRuntime) -> None:
    recorder.max_threads = 64
    backend = MetalBackend(runtime=recorder, macos=15)
    x = np.ones(10, dtype=np.float32)
    with pytest.raises(OutOfResources, match="needs 128 threads per threadgroup, but its Metal pipeline allows 64"):
        launch_add(backend, x, x, np.zeros_like(x))


def test_command_buffer_error_names_kernel(recorder: RecordingObjCRuntime) -> None:
    recorder.fail_status = True
    backend = MetalBackend(runtime=recorder, macos=15)
    x = np.ones(10, dtype=np.float32)
    with pytest.raises(LaunchError, match="kernel\\(s\\) add_kernel: Execution of the command buffer was aborted"):
        launch_add(backend, x, x, np.zeros_like(x))
    assert recorder.violations == []


def device_launch(metal: MetalBackend, n: int = 1000):
    ck = compiled(kernels.axpy_kernel, "*fp32,*fp32,fp32,i32")
    fn = metal.compile(ck.asm["msl"]).function(ck.abi.kernel_name)
    x, out = metal.alloc(4 * n), metal.alloc(4 * n)
    x.numpy(np.float32)[:] = np.arange(n)
    out.numpy(np.float32)[:] = 1
    args = pack_scalars(ck, {"a": 2.0, "n": n})
    grid = (enceladus.cdiv(n, BLOCK), 1, 1)
    tptg = (ck.abi.threads_per_threadgroup, 1, 1)
    return lambda: fn.launch(grid, tptg, {0: x, 1: out.address, ck.abi.args_slot: args}), x, out


def test_async_launches_batch_and_hot_path(metal: MetalBackend, recorder: RecordingObjCRuntime) -> None:
    metal.default_stream.batch = 4
    go, x, out = device_launch(metal)
    go()
    start = len(recorder.calls)
    go()
    # a launch into the open encoder: three Objective-C calls
    assert [c[1] for c in recorder.calls[start:]] == ["setBuffers:offsets:withRange:", "setBytes:length:atIndex:",
                                                     "dispatchThreadgroups:threadsPerThreadgroup:"]
    assert recorder.executed.count("axpy_kernel") == 0  # nothing waited for yet
    for _ in range(6):
        go()
    assert recorder.selectors_sent().count("commit") == 2  # every 4 dispatches
    metal.synchronize()
    assert recorder.executed.count("axpy_kernel") == 8
    np.testing.assert_allclose(out.numpy(np.float32), 1 + 8 * 2 * np.arange(1000))


def test_widths_of_dispatch_arguments(metal: MetalBackend, recorder: RecordingObjCRuntime) -> None:
    go, _, _ = device_launch(metal)
    go()
    metal.synchronize()
    (kind, sel, args), = [c for c in recorder.calls if c[1].startswith("dispatchThreadgroups")]
    assert (args[0].width, args[0].height, args[0].depth) == (4, 1, 1)
    assert (args[1].width, args[1].height, args[1].depth) == (128, 1, 1)
    (_, _, (ptr, length, index)), = [c for c in recorder.calls if c[1] == "setBytes:length:atIndex:"]
    assert (length, index) == (8, 2)


def test_gpu_timer(metal: MetalBackend) -> None:
    go, _, _ = device_launch(metal)
    with metal.timed() as t:
        for _ in range(50):
            go()
    assert t.dispatches == 50
    assert t.seconds == pytest.approx(50e-6)


def test_capture(recorder: RecordingObjCRuntime, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("ENCELADUS_CAPTURE", str(tmp_path / "k.gputrace"))
    monkeypatch.setenv("MTL_CAPTURE_ENABLED", "1")
    backend = MetalBackend(runtime=recorder, macos=15)
    x = np.ones(10, dtype=np.float32)
    launch_add(backend, x, x, np.zeros_like(x))
    assert recorder.capture == {"object": "MTLDevice", "destination": 2, "url": str(tmp_path / "k.gputrace")}
    sent = recorder.selectors_sent()
    assert sent.index("startCaptureWithDescriptor:error:") < sent.index("dispatchThreadgroups:threadsPerThreadgroup:") \
        < sent.index("stopCapture")
    launch_add(backend, x, x, np.zeros_like(x))  # only the next launch is captured
    assert sent.count("startCaptureWithDescriptor:error:") == 1
    assert recorder.violations == []


def test_capture_needs_env(recorder: RecordingObjCRuntime, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("ENCELADUS_CAPTURE", str(tmp_path / "k.gputrace"))
    monkeypatch.delenv("MTL_CAPTURE_ENABLED", raising=False)
    backend = MetalBackend(runtime=recorder, macos=15)
    x = np.ones(10, dtype=np.float32)
    with pytest.raises(LaunchError, match="MTL_CAPTURE_ENABLED=1"):
        launch_add(backend, x, x, np.zeros_like(x))


def test_retain_release_balance(metal: MetalBackend, recorder: RecordingObjCRuntime) -> None:
    x = np.ones(3000, dtype=np.float32)
    launch_add(metal, x, x, np.zeros_like(x))
    go, xb, outb = device_launch(metal)
    for _ in range(5):
        go()
    with metal.timed():
        go()
    metal.synchronize()
    xb.release()
    outb.release()
    metal.close()
    leftover = [o.kind for o in recorder.live()]
    assert leftover == ["MTLDevice"]  # the device is kept for the life of the process
    assert recorder._pools == []


def test_unknown_address_is_refused(metal: MetalBackend) -> None:
    ck = compiled(kernels.axpy_kernel, "*fp32,*fp32,fp32,i32")
    fn = metal.compile(ck.asm["msl"]).function(ck.abi.kernel_name)
    x = np.ones(10, dtype=np.float32)
    with pytest.raises(LaunchError, match="not inside memory allocated by the metal backend"):
        fn.launch((1,), (128,), {0: x, 1: x.ctypes.data, 2: pack_scalars(ck, {"a": 1.0, "n": 10})})


def test_missing_buffer_is_refused(metal: MetalBackend) -> None:
    ck = compiled()
    fn = metal.compile(ck.asm["msl"]).function(ck.abi.kernel_name)
    with pytest.raises(LaunchError, match="missing \\[2, 3\\]"):
        fn.launch((1,), (128,), {0: np.ones(4, np.float32), 1: np.ones(4, np.float32)})
