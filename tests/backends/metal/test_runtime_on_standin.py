"""The runtime (JIT launches, Tensor, streams, DLPack, compile_shader, do_bench) on the metal backend's host
code, against the recording stand-in for libobjc. A check of our host code, not of Metal: the stand-in
runs each dispatch on the cpu backend when its command buffer is waited for (see objc_recorder.py).
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import enceladus
from enceladus.backends.metal import MetalBackend
from enceladus.backends.metal import dlpack as metal_dlpack
from enceladus.backends.metal.memory import PAGE_SIZE
from enceladus.errors import LaunchError
from enceladus.runtime import probes
from enceladus.runtime.backend import use_backend
from enceladus.testing import do_bench

from . import kernels
from .objc_recorder import RecordingObjCRuntime

ROOT = Path(__file__).resolve().parents[3]
LAUNCH = ["setBuffers:offsets:withRange:", "setBytes:length:atIndex:", "dispatchThreadgroups:threadsPerThreadgroup:"]


@pytest.fixture
def on_metal(metal: MetalBackend, recorder: RecordingObjCRuntime) -> Iterator[MetalBackend]:
    # The device's first-contact probes launch kernels of their own once per process (or never, when the disk
    # cache holds their results): run them first and start the record after them, so the record holds only what
    # the test did, whichever test of this file a pytest worker runs first.
    probes.for_backend(metal).constraints()
    del recorder.calls[:], recorder.executed[:]
    with use_backend(metal):
        yield metal


def fresh(kernel):
    """A new JITFunction for the same Python function: no plans or programs of another backend."""
    return enceladus.jit(kernel.fn)


def sent_since(recorder: RecordingObjCRuntime, start: int) -> list[str]:
    return [c[1] for c in recorder.calls[start:]]


def test_jit_numpy_is_synchronous_and_wrapped_without_copy(on_metal, recorder) -> None:
    add = fresh(kernels.add_kernel)
    x = np.arange(4096, dtype=np.float32)[3:3003]  # not page aligned
    y = np.ones(3000, np.float32)
    out = np.zeros(3000, np.float32)
    for _ in range(2):  # slow path, then the fast path
        out[:] = 0
        add[(enceladus.cdiv(3000, 256),)](x, y, out, 3000, BLOCK=256)
        np.testing.assert_array_equal(out, x + 1)  # results are in the array on return
    # the wraps over these three arrays (the first use of a device may also run the D7/D11 probes, which wrap
    # memory of their own: how many depends on whether the probe results were cached, so they are not counted)
    spans = [(a.ctypes.data, a.ctypes.data + a.nbytes) for a in (x, y, out)]
    wraps = [c for c in recorder.calls if c[1] == "newBufferWithBytesNoCopy:length:options:deallocator:"
             and any(c[2][0] <= lo and hi <= c[2][0] + c[2][1] for lo, hi in spans)]
    assert len(wraps) == 6  # each of the three arrays, on each of the two launches
    assert all(c[2][0] % PAGE_SIZE == 0 and c[2][1] % PAGE_SIZE == 0 for c in wraps)
    assert recorder.bound_history[-1][0][1] == x.ctypes.data % PAGE_SIZE  # bound at an offset
    assert recorder.live("MTLBuffer") == [] and recorder.live("MTLCommandBuffer") == []


def test_jit_numpy_copy_path_and_torch_cpu(on_metal, recorder, monkeypatch) -> None:
    monkeypatch.setenv("ENCELADUS_METAL_HOST_COPY", "1")
    axpy = fresh(kernels.axpy_kernel)
    x = np.arange(1000, dtype=np.float32)
    out = np.ones(1000, np.float32)
    axpy[(4,)](x, out, 2.0, 1000, BLOCK=256)
    np.testing.assert_array_equal(out, 2 * x + 1)  # copied in and back out
    assert not any(c[1].startswith("newBufferWithBytesNoCopy") for c in recorder.calls)
    torch = pytest.importorskip("torch")
    tout = torch.ones(1000)
    axpy[(4,)](torch.arange(1000, dtype=torch.float32), tout, 2.0, 1000, BLOCK=256)
    np.testing.assert_array_equal(tout.numpy(), 2 * x + 1)


def test_read_only_output_is_refused_before_encoding(on_metal, recorder) -> None:
    add = fresh(kernels.add_kernel)
    x = np.ones(10, np.float32)
    out = np.zeros(10, np.float32)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="read-only array"):
        add[(1,)](x, x, out, 10, BLOCK=256)
    assert "dispatchThreadgroups:threadsPerThreadgroup:" not in recorder.selectors_sent()


def test_tensors_are_asynchronous_with_a_three_call_hot_path(on_metal, recorder) -> None:
    on_metal_queue = enceladus.runtime.stream.default_stream().queue
    on_metal_queue.stream.batch = 4
    axpy = fresh(kernels.axpy_kernel)
    x = enceladus.tensor(np.arange(1000, dtype=np.float32))
    out = enceladus.ones(1000)
    assert x.device == "metal" and x.allocation.handle
    axpy[(4,)](x, out, 2.0, 1000, BLOCK=256)  # slow path: compile, first encoder
    start = len(recorder.calls)
    axpy[(4,)](x, out, 2.0, 1000, BLOCK=256)
    assert sent_since(recorder, start) == LAUNCH  # one setBuffers, one setBytes, one dispatch
    for _ in range(6):
        axpy[(4,)](x, out, 2.0, 1000, BLOCK=256)
    assert recorder.selectors_sent().count("commit") == 2  # every 4 dispatches, nothing waited for
    assert recorder.executed.count("axpy_kernel") == 0
    np.testing.assert_array_equal(out.numpy(), 1 + 8 * 2 * np.arange(1000))  # numpy() synchronizes
    assert recorder.executed.count("axpy_kernel") == 8
    view = out.numpy()
    assert view.ctypes.data == out.allocation.address  # zero-copy view of the MTLBuffer's contents


def test_tensor_views_bind_at_their_offset(on_metal, recorder) -> None:
    add = fresh(kernels.add_kernel)
    base = enceladus.zeros(3000)
    x = enceladus.tensor(np.arange(3000, dtype=np.float32))
    add[(8,)](x[1000:], x[1000:], base[500:], 2000, BLOCK=256)
    enceladus.synchronize()
    handle, offset = recorder.bound_history[-1][2]
    assert handle == base.allocation.handle and offset == 2000
    np.testing.assert_array_equal(base.numpy()[500:2500], 2 * np.arange(1000, 3000))


def test_integer_addresses_are_gpu_addresses_made_resident(on_metal, recorder) -> None:
    # Triton tutorial 08's pattern on Metal: a table of Tensor.device_address() values (MTLBuffer gpuAddress +
    # offset); the buffers they point into are not arguments, so every launch makes them resident. On the
    # stand-in a GPU address is the host address (its dispatches run on the cpu backend); unverified on hardware.
    from tests.codegen import address_kernels as ak

    gather = fresh(ak.address_gather_kernel)
    blocks = [enceladus.tensor(np.arange(8, dtype=np.float32) + 10 * i) for i in range(3)]
    view = blocks[2][4:]  # a view: its address is the buffer's plus the byte offset
    table = enceladus.tensor(np.array([b.device_address() for b in (*blocks[:2], view)], np.int64))
    assert "gpuAddress" in recorder.selectors_sent()
    assert table.numpy()[2] == blocks[2].allocation.address + 16  # the stand-in's gpuAddress is the contents
    for _ in range(2):  # the slow path, then a launch that found its plan
        out = enceladus.zeros(3 * 4)
        gather[(3,)](table, out, N=4)
        np.testing.assert_array_equal(out.numpy(), 2 * np.concatenate([np.arange(4), np.arange(4) + 10,
                                                                        np.arange(4, 8) + 20]))
        resident = recorder.resident_history[-1]
        assert {b.allocation.handle for b in blocks} <= set(resident) and set(resident.values()) == {3}
    add = fresh(kernels.add_kernel)  # kernels that make no pointers from integers make nothing resident
    add[(1,)](blocks[0], blocks[1], out, 8, BLOCK=256)
    enceladus.synchronize()
    assert recorder.resident_history[-1] == {}


def test_integer_addresses_with_mps_tensors_are_refused(on_metal, monkeypatch) -> None:
    # PyTorch launches mps tensors itself and cannot make Enceladus's buffers resident (the check runs before any
    # PyTorch call, so an array marked as an mps tensor stands in for one)
    from tests.codegen import address_kernels as ak

    from enceladus.runtime import launch as runtime_launch

    out = np.zeros(4, np.float32)
    marked = runtime_launch.arguments.is_torch_mps
    monkeypatch.setattr(runtime_launch.arguments, "is_torch_mps", lambda v: v is out or marked(v))
    with pytest.raises(LaunchError, match="device_address"):
        fresh(ak.address_gather_kernel)[(1,)](np.zeros(1, np.int64), out, N=4)


def test_streams_have_their_own_command_queue(on_metal, recorder) -> None:
    axpy = fresh(kernels.axpy_kernel)
    x = enceladus.tensor(np.arange(256, dtype=np.float32))
    out = enceladus.zeros(256)
    queues = len(recorder.live("MTLCommandQueue"))
    s = enceladus.Stream()
    assert len(recorder.live("MTLCommandQueue")) == queues + 1
    with s:
        axpy[(1,)](x, out, 1.0, 256, BLOCK=256)
    assert not s.query()
    s.synchronize()
    assert s.query()
    np.testing.assert_array_equal(out.numpy(), np.arange(256))


def test_gpu_error_surfaces_with_the_kernel_name(recorder, monkeypatch) -> None:
    recorder.fail_status = True
    backend = MetalBackend(runtime=recorder, macos=15)
    with use_backend(backend):
        axpy = fresh(kernels.axpy_kernel)
        x, out = enceladus.zeros(256), enceladus.zeros(256)
        axpy[(1,)](x, out, 1.0, 256, BLOCK=256)
        with pytest.raises(LaunchError, match="kernel\\(s\\) axpy_kernel: Execution of the command buffer was "
                                              "aborted"):
            enceladus.synchronize()
        enceladus.synchronize()  # reported once; the stream stays usable
        with pytest.raises(LaunchError, match="axpy_kernel"):  # synchronous launches raise at once
            axpy[(1,)](np.zeros(256, np.float32), np.zeros(256, np.float32), 1.0, 256, BLOCK=256)
    assert recorder.violations == []


def _read_capsule(capsule) -> metal_dlpack.DLTensor:
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return metal_dlpack.DLManagedTensor.from_address(get(capsule, b"dltensor")).dl_tensor


def test_dlpack_native_kdlmetal_and_cpu_on_request(on_metal, recorder) -> None:
    t = enceladus.tensor(np.arange(60, dtype=np.float32).reshape(6, 10))
    v = t[2:, 1:7]
    assert v.__dlpack_device__() == (8, 0)
    live = metal_dlpack.sweep()
    cap = v.__dlpack__()
    dl = _read_capsule(cap)
    assert (dl.device.device_type, dl.device.device_id) == (8, 0)
    assert dl.data == t.allocation.handle and dl.byte_offset == (2 * 10 + 1) * 4
    assert [dl.shape[i] for i in range(2)] == [4, 6] and [dl.strides[i] for i in range(2)] == [10, 1]
    assert (dl.dtype.code, dl.dtype.bits, dl.dtype.lanes) == (2, 32, 1)
    del cap, dl
    assert metal_dlpack.sweep() == live  # an unconsumed capsule is freed
    with pytest.raises((RuntimeError, BufferError, TypeError)):
        np.from_dlpack(v)  # NumPy refuses kDLMetal
    host = np.from_dlpack(v, device="cpu")  # asks dl_device=(1, 0): the contents pointer
    np.testing.assert_array_equal(host, np.arange(60, dtype=np.float32).reshape(6, 10)[2:, 1:7])
    assert host.ctypes.data == t.allocation.address + (2 * 10 + 1) * 4
    back = enceladus.from_dlpack(np.arange(5, dtype=np.int32))
    assert back.device == "metal" and back.tolist() == [0, 1, 2, 3, 4]


def test_compile_shader_on_metal(on_metal, recorder) -> None:
    lib = enceladus.compile_shader("""#include <metal_stdlib>
using namespace metal;
kernel void scale(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                  constant float& a [[buffer(2)]], constant uint& n [[buffer(3)]],
                  uint i [[thread_position_in_grid]]) {
    if (i < n) y[i] = a * x[i];
}
""")
    x = np.arange(1000, dtype=np.float32)
    y = np.zeros_like(x)
    lib.scale(x, y, 3.0, 1000, threads=(1000,))  # dispatchThreads: a partial edge threadgroup
    np.testing.assert_array_equal(y, 3 * x)
    assert "dispatchThreads:threadsPerThreadgroup:" in recorder.selectors_sent()
    tx, ty = enceladus.tensor(x), enceladus.zeros(1000)
    lib.scale(tx, ty, 0.5, 1000, threadgroups=(4,), threads_per_threadgroup=(256,))  # queued
    np.testing.assert_array_equal(ty.numpy(), 0.5 * x)


def test_do_bench_reads_gpu_timestamps(on_metal, recorder) -> None:
    axpy = fresh(kernels.axpy_kernel)
    x, out = enceladus.zeros(256), enceladus.zeros(256)
    ms = do_bench(lambda: axpy[(1,)](x, out, 1.0, 256, BLOCK=256), warmup=1, rep=5, return_mode="all")
    # the stand-in reports 1 us of GPU time per dispatch in a command buffer
    assert ms and all(t == pytest.approx(1e-3) for t in ms)
    assert "GPUStartTime" in recorder.selectors_sent()


def test_debug_mode_compiles_bounds_checks_into_the_msl(on_metal, recorder, monkeypatch) -> None:
    # ENCELADUS_DEBUG=1 on Metal: the kernel is compiled with msl_bounds_checks and dispatched on the GPU (here the
    # stand-in), with the extents buffer bound after the log; the host reads the log back and raises the error the
    # cpu backend would. On the stand-in a GPU address is the host address; unverified on Apple hardware.
    from enceladus.runtime.devicelog import DeviceBoundsError

    monkeypatch.setenv("ENCELADUS_DEBUG", "1")
    add = fresh(kernels.add_kernel)
    x = enceladus.tensor(np.arange(300, dtype=np.float32))
    out = enceladus.zeros(300)
    add[(2,)](x, x, out, 300, BLOCK=256)
    np.testing.assert_array_equal(out.numpy(), 2 * np.arange(300))
    assert recorder.executed.count("add_kernel") == 1  # on the GPU, not on the cpu twin
    sources = [o.data["source"] for o in recorder.objects.values() if o.data.get("source") and "add_kernel" in
               o.data["source"]]
    assert sources and all("enc_inb(" in text and "enc_ext [[buffer(4)]]" in text for text in sources)
    assert sorted(recorder.bound_history[-1]) == [0, 1, 2, 3, 4]  # x, y, out, the log, the extents
    assert "gpuAddress" in recorder.selectors_sent()  # the extents are GPU addresses
    short = enceladus.tensor(np.arange(200, dtype=np.float32))
    out2 = np.zeros(300, np.float32)
    with pytest.raises(DeviceBoundsError, match=r"kernel 'add_kernel', program \(0,0,0\), thread \d+: out-of-bounds "
                                                r"read of \d+ bytes through argument 'y_ptr' at element index 200 "
                                                r"\('y_ptr' has 200 elements\); found by the MSL's bounds checks"
                                                r"(.|\n)*at line 11 of .*kernels.py"):
        add[(2,)](x, short[:200], out2, 300, BLOCK=256)
    expected = np.arange(300, dtype=np.float32)
    expected[:200] *= 2  # x + y where y is in bounds; the skipped reads of y yield 0 (the load's `other`)
    np.testing.assert_array_equal(out2, expected)


def test_import_selects_and_never_loads_objc_when_forced_cpu() -> None:
    code = ("import sys, enceladus; from enceladus.runtime.backend import get_backend; "
            "print(get_backend().name, 'enceladus.backends.metal' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "ENCELADUS_BACKEND": "cpu"})
    assert r.stdout.split() == ["cpu", "False"], r.stderr


@pytest.mark.parametrize("example", sorted((ROOT / "examples").glob("[0-9]*.py")), ids=lambda p: p.stem)
def test_examples_through_the_metal_host_code(example: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ENCELADUS_CACHE_DIR"}  # the shared cache, as test_examples
    r = subprocess.run([sys.executable, str(ROOT / "tests/backends/metal/standin_runner.py"), str(example)],
                       capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "OK" in r.stdout and "on the 'metal' backend" in r.stdout
    summary = r.stdout.split("STANDIN ")[-1]
    assert '"violations": []' in summary and '"live_command_buffers": 0' in summary
