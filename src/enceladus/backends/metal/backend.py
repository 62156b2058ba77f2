"""MetalBackend / MetalLibrary / MetalFunction: the same interface as the cpu backend, on an Apple GPU."""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ...compiler.metal_limits import MAX_GRID
from ...compiler.msl_signature import KernelSignature, parse_kernels
from ...errors import CompilationError, LaunchError, OutOfResources
from .device import MetalDevice, MTLLanguageVersion4_0, Pipeline
from .launcher import MetalLauncher
from .memory import AllocationRegistry, HostBinding, MetalBuffer, bind_host_array
from .objc import ObjCBridge, ObjCError, ObjCRuntime
from .stream import GPUTimer, MetalQueue, Stream, buffer_runs

_U32 = MAX_GRID


def _host_view(value: Any) -> np.ndarray:
    """A host array as NumPy without the runtime: arrays, and objects with ``__enceladus_array__`` (Tensors).
    The runtime installs its full view (torch and MLX arrays too) as ``MetalBackend.host_view``."""
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__enceladus_array__"):
        return value.__enceladus_array__()
    return np.asarray(value)
Binding = Any  # np.ndarray | MetalBuffer | tuple[MetalBuffer, int] | int (address in a MetalBuffer) | bytes


class MetalFunction:
    """One kernel's compute pipeline; ``launch`` mirrors ``CpuFunction.launch``."""

    def __init__(self, library: MetalLibrary, signature: KernelSignature, pipeline: Pipeline) -> None:
        self.name = signature.name
        self.signature = signature
        self.library = library
        self.pipeline = pipeline
        self._backend = library.backend
        self._writes = {p.index: "const" not in p.msl_type.split() and p.address_space == "device"
                        for p in signature.buffer_params}
        self._constant_slots = {p.index for p in signature.buffer_params if p.address_space == "constant"}
        self._tg_slots = {p.index for p in signature.threadgroup_params}
        self._cpu_twin: Any = None

    @property
    def slot_writes(self) -> dict[int, bool]:
        """``[[buffer(i)]]`` slot -> whether the kernel may store through it (``device`` without ``const``)."""
        return self._writes

    @property
    def threadgroup_slots(self) -> set[int]:
        """The ``[[threadgroup(i)]]`` slots whose length the host sets."""
        return self._tg_slots

    def launcher(self, buffer_slots: Sequence[int], threads_per_threadgroup: Sequence[int],
                 args_slot: int | None = None, args_format: str = "",
                 threadgroup_memory: Mapping[int, int] | None = None) -> MetalLauncher:
        """The launch protocol shared with the cpu backend (see launcher.py): ``pack`` / ``run`` / ``run_host``."""
        return MetalLauncher(self, buffer_slots, threads_per_threadgroup, args_slot, args_format, threadgroup_memory)

    def cpu_twin(self) -> Any:
        """The same MSL kernel on the cpu backend: debug mode (``ENCELADUS_DEBUG=1``) runs there, with its
        out-of-bounds and race checks, on the Tensors' shared memory."""
        if self._cpu_twin is None:
            make = self._backend.cpu_twin_backend
            if make is None:
                raise LaunchError(f"kernel '{self.name}': debug mode runs on the cpu backend, and none was given to "
                                  "this metal backend; launch through enceladus (its runtime supplies one) or set "
                                  "backend.cpu_twin_backend")
            self._cpu_twin = make().compile(self.library.msl).function(self.name)
        return self._cpu_twin

    def dispatch_threads(self, threads: Sequence[int], threads_per_threadgroup: Sequence[int],
                         buffers: Mapping[int, int], *, threadgroup_memory: Mapping[int, int] | None = None,
                         debug: bool = False, buffer_sizes: Mapping[int, int] | None = None,
                         extents: Mapping[int, tuple] | None = None, timeout: float | None = None) -> None:
        """Debug-mode ``dispatchThreads`` (on the cpu twin; the normal path is ``launcher``)."""
        if not debug:
            raise LaunchError(f"kernel '{self.name}': use launcher(...) for dispatchThreads launches on Metal")
        self._backend.synchronize_all()
        self.cpu_twin().dispatch_threads(threads, threads_per_threadgroup, buffers,
                                         threadgroup_memory=threadgroup_memory, debug=True, buffer_sizes=buffer_sizes,
                                         extents=extents, timeout=timeout)

    @property
    def max_threads_per_threadgroup(self) -> int:
        """What Metal allows for this pipeline (can be below 1024 under register pressure)."""
        return self.pipeline.max_threads

    @property
    def thread_execution_width(self) -> int:
        """The SIMD-group width Metal reports for this pipeline (32 on Apple GPUs)."""
        return self.pipeline.execution_width

    def check_resources(self, threads: tuple[int, int, int], threadgroup_memory: Mapping[int, int]) -> None:
        """Raise OutOfResources when a launch needs more threads or threadgroup memory than Metal allows."""
        n = threads[0] * threads[1] * threads[2]
        if n > self.pipeline.max_threads:
            raise OutOfResources(
                f"kernel '{self.name}' needs {n} threads per threadgroup, but its Metal pipeline allows "
                f"{self.pipeline.max_threads} on {self._backend.device.name} (the kernel uses many registers)",
                kernel=self.name, fix="use a smaller num_warps or a smaller BLOCK size")
        tg = self.pipeline.static_threadgroup_memory + sum((v + 15) // 16 * 16 for v in threadgroup_memory.values())
        if tg > self._backend.device.max_threadgroup_memory:
            raise OutOfResources(
                f"kernel '{self.name}' needs {tg} bytes of threadgroup memory; this GPU allows "
                f"{self._backend.device.max_threadgroup_memory}", kernel=self.name,
                fix="use smaller tiles (BLOCK sizes) or fewer stages")

    def triple(self, what: str, value: Sequence[int], low: int) -> tuple[int, int, int]:
        """Validate 1 to 3 ints in [low, 2^32) and pad with ones."""
        vals = tuple(int(v) for v in value)
        if not 1 <= len(vals) <= 3:
            raise LaunchError(f"kernel '{self.name}': {what} must have 1 to 3 entries, got {value!r}")
        vals = vals + (1,) * (3 - len(vals))
        if any(v < low or v > _U32 for v in vals):
            raise LaunchError(f"kernel '{self.name}': {what}={value!r} must be in [{low}, 2^32)")
        return vals  # type: ignore[return-value]

    def launch(self, threadgroups: Sequence[int], threads_per_threadgroup: Sequence[int],
               buffers: Mapping[int, Binding], *, threadgroup_memory: Mapping[int, int] | None = None,
               stream: Stream | None = None, debug: bool = False,
               buffer_sizes: Mapping[int, int] | None = None, extents: Mapping[int, tuple] | None = None,
               timeout: float | None = None) -> None:
        """Run the kernel like ``dispatchThreadgroups``.

        ``buffers`` maps each ``[[buffer(i)]]`` slot to a NumPy array (bound without a copy when
        possible; the launch is then synchronous), a MetalBuffer or ``(MetalBuffer, byte_offset)``
        (asynchronous), an int address inside a live MetalBuffer, or ``bytes`` for a ``constant``
        parameter (the packed scalar struct, sent with ``setBytes``).

        ``debug=True`` (host addresses in ``buffers``, sizes in ``buffer_sizes``) runs the same MSL on the cpu
        backend with its access and race checks (``extents``, ``timeout``: see the cpu backend), after waiting
        for the GPU.
        """
        if debug:
            self._backend.synchronize_all()
            self.cpu_twin().launch(threadgroups, threads_per_threadgroup, buffers, threadgroup_memory=threadgroup_memory,
                                   debug=True, buffer_sizes=buffer_sizes, extents=extents, timeout=timeout)
            return
        groups = self.triple("threadgroups", threadgroups, 0)
        threads = self.triple("threads_per_threadgroup", threads_per_threadgroup, 1)
        if 0 in groups:
            return
        if any(g * t > _U32 for g, t in zip(groups, threads)):
            raise LaunchError(f"kernel '{self.name}': grid {groups} x {threads} overflows 32-bit thread ids")
        tg_mem = dict(threadgroup_memory or {})
        if set(tg_mem) != self._tg_slots:
            raise LaunchError(f"kernel '{self.name}' takes threadgroup memory at slots {sorted(self._tg_slots)}; "
                              f"got lengths for {sorted(tg_mem)}")
        self.check_resources(threads, tg_mem)
        unknown = set(buffers) - set(self._writes)
        missing = set(self._writes) - set(buffers)
        if unknown or missing:
            raise LaunchError(f"kernel '{self.name}' takes buffers at slots {sorted(self._writes)}; "
                              f"missing {sorted(missing)}, unknown {sorted(unknown)}")
        backend = self._backend
        bound: dict[int, tuple[int, int]] = {}
        host: list[HostBinding] = []
        keep: list[Any] = []
        scalars: bytes | None = None
        scalar_slot: int | None = None
        try:
            for slot, value in buffers.items():
                if isinstance(value, (bytes, bytearray, memoryview)) and slot in self._constant_slots \
                        and scalars is None:
                    scalars, scalar_slot = bytes(value), slot
                elif isinstance(value, np.ndarray):
                    hb = bind_host_array(backend.device, value, self._writes[slot], self._param_name(slot))
                    host.append(hb)
                    bound[slot] = (hb.buffer.handle, hb.offset)
                else:
                    buf, offset = backend.resolve(value, self.name, self._param_name(slot))
                    bound[slot] = (buf.handle, offset)
                    keep.append(buf)
            run = lambda: backend.stream_for(stream).encode(  # noqa: E731
                self.pipeline.handle, self.name, buffer_runs(bound), scalars, scalar_slot, tg_mem, groups, threads,
                keep)
            capture = backend.take_capture_request()
            if capture:
                backend.stream_for(stream).capture(capture, run)
            else:
                run()
            if host:  # NumPy arguments: synchronous, results are in the arrays on return
                backend.stream_for(stream).synchronize()
        finally:
            for hb in host:
                hb.finish()

    def _param_name(self, slot: int) -> str:
        return next((p.name for p in self.signature.buffer_params if p.index == slot), f"buffer({slot})")

    def __repr__(self) -> str:
        return f"<MetalFunction {self.signature}>"


def tensor_ops_options(device: Any, msl: str) -> dict[str, Any]:
    """Compile settings for MSL that uses Metal 4 tensor ops: MSL 4.0 and the declared threadgroup size
    (cooperative tensors need ``requiredThreadsPerThreadgroup``), taken from ``execution_simdgroups<N>``."""
    if "#include <metal_tensor>" not in msl:
        return {}
    if device.language_version < MTLLanguageVersion4_0:
        raise CompilationError(
            f"this MSL uses Metal 4 tensor ops (matmul2d), which need MSL 4.0 (macOS 26); this Mac compiles MSL "
            f"{device.language_name}", fix="launch with dot_backend='simdgroup' (simdgroup_matrix runs on every "
            "Apple GPU)")
    groups = {int(g) for g in re.findall(r"execution_simdgroups<(\d+)>", msl)}
    if len(groups) > 1:
        raise CompilationError(f"kernels of one library use different execution_simdgroups {sorted(groups)}",
                               fix="compile them separately: the threadgroup size is set per library")
    threads = 32 * groups.pop() if groups else None
    return {"language_version": MTLLanguageVersion4_0,
            "required_threads": (threads, 1, 1) if threads else None}


PROBE_WIDTH_MSL = """#include <metal_stdlib>
using namespace metal;
kernel void enceladus_probe_width(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                                  uint i [[thread_position_in_grid]]) { y[i] = x[i] + 1.0f; }
"""

MATMUL2D_PROBE = """#include <metal_stdlib>
#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;
using namespace mpp::tensor_ops;
kernel void enceladus_matmul2d_probe(device half* a [[buffer(0)]], device half* b [[buffer(1)]],
                                     device float* c [[buffer(2)]]) {
    using TA = tensor<device half, dextents<int32_t, 2>, tensor_inline>;
    using TC = tensor<device float, dextents<int32_t, 2>, tensor_inline>;
    constexpr auto desc = matmul2d_descriptor(16, 16, 32, false, false, false,
                                              matmul2d_descriptor::mode::multiply_accumulate);
    matmul2d<desc, execution_simdgroups<1>> op;
    TA ta(a, dextents<int32_t, 2>(32, 16)); TA tb(b, dextents<int32_t, 2>(16, 32)); TC tc(c, dextents<int32_t, 2>(16, 16));
    op.run(ta, tb, tc);
}
"""


SIMD_WIDTH = 32  # what generated kernels are laid out for (lanes of a SIMD group)


def check_simd_width(signature: KernelSignature, pipeline: Pipeline, device: Any) -> None:
    """Generated kernels (their builtins are named ``enc_*``) lay tiles out over SIMD groups of 32 lanes; a pipeline
    whose ``threadExecutionWidth`` differs would compute wrong results, so it is refused (and released)."""
    if pipeline.execution_width == SIMD_WIDTH:
        return
    if not any(p.name.startswith("enc_") and p.attribute in ("thread_index_in_simdgroup",
                                                             "simdgroup_index_in_threadgroup")
               for p in signature.params):
        return  # a hand-written kernel (compile_shader): its own business; MetalFunction.thread_execution_width
    device.bridge.release(pipeline.handle)
    raise CompilationError(
        f"kernel '{signature.name}': Metal reports SIMD groups of {pipeline.execution_width} threads on "
        f"{device.name} (threadExecutionWidth); Enceladus lays tiles out for {SIMD_WIDTH}-lane SIMD groups, so this "
        "kernel would compute wrong results here", kernel=signature.name,
        fix="please report this GPU with the output of `enceladus doctor --probe`; meanwhile use "
            "ENCELADUS_BACKEND=cpu")


class MetalLibrary:
    """MSL text compiled by Metal (``newLibraryWithSource``); kernels become pipelines on first use."""

    def __init__(self, backend: MetalBackend, msl: str, fast_math: bool = False) -> None:
        self.backend = backend
        self.msl = msl
        self.kernels = parse_kernels(msl)
        self.handle = backend.device.new_library(msl, fast_math=fast_math, **tensor_ops_options(backend.device, msl))
        self._functions: dict[str, MetalFunction] = {}

    def function(self, name: str) -> MetalFunction:
        """The kernel ``name`` with its pipeline; KeyError lists the available kernels."""
        fn = self._functions.get(name)
        if fn is None:
            if name not in self.kernels:
                raise KeyError(f"no kernel named '{name}' in this library; available: {', '.join(self.kernels)}")
            with self.backend.lock:
                fn = self._functions.get(name)
                if fn is None:
                    pipeline = self.backend.device.new_pipeline(self.handle, name)
                    check_simd_width(self.kernels[name], pipeline, self.backend.device)
                    fn = self._functions[name] = MetalFunction(self, self.kernels[name], pipeline)
        return fn

    def release(self) -> None:
        """Release the pipelines and the library (after their last launch has completed)."""
        for fn in self._functions.values():
            self.backend.device.bridge.release(fn.pipeline.handle)
        self._functions.clear()
        self.backend.device.bridge.release(self.handle)
        self.handle = 0


class MetalBackend:
    """Runs MSL kernels on the Mac's GPU through Metal (see docs/metal.md)."""

    name = "metal"
    probe_on_compile = True  # the device probes (runtime/probes.py) run before the first kernel is compiled

    def probe_identity(self) -> str:
        """What probe results are cached under: the GPU, the OS build and the MSL version chosen."""
        import platform

        return f"metal\n{self.device.name}\n{platform.mac_ver()[0]} {os.uname().release} {os.uname().version}\n" \
               f"{self.device.language_name}"

    def host_probes(self, probes: Any) -> list[Any]:
        """The probes only the metal host code can run (doctor --probe): B4, D5, D7, D11 and tensor ops."""
        ProbeResult = probes.result  # noqa: N806  (the runtime's record type, passed down)

        d = self.device
        out = [ProbeResult("msl_version", "B4", "the newest MSL version that builds a probe kernel is used (never "
                           "read from the OS version)", "ok", f"MSL {d.language_name} ({d.language_probes})",
                           "MSL 3.2 without tensor ops when 4.0 does not build")]
        try:
            lib = self.compile(PROBE_WIDTH_MSL)
            width = lib.function("enceladus_probe_width").thread_execution_width
            out.append(ProbeResult("simd_width", "D5", "SIMD groups have 32 lanes (threadExecutionWidth)",
                                   "ok" if width == SIMD_WIDTH else "failed", f"threadExecutionWidth = {width}",
                                   "generated kernels are refused at pipeline creation (never a wrong answer)"))
        except Exception as exc:  # noqa: BLE001 - reported, not raised: the doctor shows every probe
            out.append(ProbeResult("simd_width", "D5", "SIMD groups have 32 lanes", "error", str(exc)[:300]))
        page = np.zeros(2 * 16384 // 4, np.float32)
        start = (-page.ctypes.data) % 16384 // 4
        view = page[start:start + 16384 // 4]
        buf = d.wrap_memory(view.ctypes.data, 16384)
        if buf:
            d.bridge.release(buf)
        out.append(ProbeResult("nocopy_wrap", "D7", "newBufferWithBytesNoCopy wraps page-aligned NumPy memory",
                               "ok" if buf else "failed", "" if buf else "Metal returned nil",
                               "NumPy arguments are copied in and out (slower, correct)"))
        try:
            x = np.arange(64, dtype=np.float32)
            y = np.zeros(64, np.float32)
            self.compile(PROBE_WIDTH_MSL).function("enceladus_probe_width").launch((2,), (32,), {0: x, 1: y})
            ok = np.array_equal(y, x + 1)
            out.append(ProbeResult("host_encodings", "D11", "MTLSize by value, NSRange in registers, the command "
                                   "buffer status: a launch round trip", "ok" if ok else "failed",
                                   "" if ok else f"got {y[:4].tolist()}...", "none: report it"))
        except Exception as exc:  # noqa: BLE001
            out.append(ProbeResult("host_encodings", "D11", "a launch round trip", "error", str(exc)[:300]))
        out.append(ProbeResult("matmul2d", "D1/D2", "Metal 4 tensor ops are preferred for tl.dot (auto)",
                               "ok" if self.prefers_matmul2d() else "n/a",
                               "preferred" if self.prefers_matmul2d() else "simdgroup_matrix is used",
                               "each (tile, operand types) is probed on first use; refused ones use simdgroup_matrix"))
        return out

    def __init__(self, runtime: ObjCRuntime | None = None, *, macos: int | None = None) -> None:
        if runtime is None:
            from .objc import SystemRuntime

            runtime = SystemRuntime()
        self.bridge = ObjCBridge(runtime)
        # supplied by the runtime (backends never import each other or the runtime): a factory of the cpu
        # backend that debug mode runs kernels on, and the view of host arrays (Tensors, torch, MLX) as NumPy
        self.cpu_twin_backend: Callable[[], Any] | None = None
        self.host_view: Callable[[Any], np.ndarray] = _host_view
        self.device = MetalDevice(self.bridge, macos=macos)
        self._matmul2d: bool | None = None
        self.registry = AllocationRegistry()
        self.default_stream = Stream(self.device)
        self.lock = threading.RLock()  # compiles may come from the autotuner's threads
        self._libraries: dict[tuple[str, bool], MetalLibrary] = {}
        self._queues: list[MetalQueue] = []
        self._capture_path = os.environ.get("ENCELADUS_CAPTURE") or None
        self.capture_requested = self._capture_path is not None

    @property
    def device_name(self) -> str:
        """The GPU's name as Metal reports it (e.g. 'Apple M2 Pro')."""
        return self.device.name

    def prefers_matmul2d(self) -> bool:
        """Whether tl.dot should use Metal 4 tensor ops (``dot_backend="auto"``): only on GPUs with neural
        accelerators (taken as MTLGPUFamilyApple10, the M5 class) where a probe matmul2d kernel builds."""
        if self._matmul2d is None:
            d = self.device
            ok = bool(d.metal4 and d.apple10 and d.language_version >= MTLLanguageVersion4_0)
            if ok:
                try:
                    lib = self.compile(MATMUL2D_PROBE)
                    lib.function("enceladus_matmul2d_probe")
                except (CompilationError, ObjCError):
                    ok = False
            self._matmul2d = ok
        return self._matmul2d

    def compile(self, msl: str, *, fast_math: bool = False) -> MetalLibrary:
        """Compile MSL text (cached per text in this process; the OS caches compiled shaders across processes)."""
        key = (msl, fast_math)
        lib = self._libraries.get(key)
        if lib is None:
            with self.lock:
                lib = self._libraries.get(key)
                if lib is None:
                    lib = self._libraries[key] = MetalLibrary(self, msl, fast_math)
        return lib

    def alloc(self, nbytes: int) -> MetalBuffer:
        """Shared-storage device memory for ``enceladus.Tensor``: ``.address``, ``.handle``, ``.nbytes``,
        ``host_view()``, ``dlpack()``; registered so its addresses can be bound."""
        if nbytes < 0:
            raise ValueError(f"cannot allocate {nbytes} bytes")
        with self.lock:
            return MetalBuffer.allocate(self.device, nbytes, self.registry)

    def new_queue(self) -> MetalQueue:
        """A new in-order queue (its own MTLCommandQueue): the backend half of ``enceladus.Stream``."""
        q = MetalQueue(Stream(self.device))
        self._queues.append(q)
        return q

    def synchronize_all(self) -> None:
        """Wait for the default stream and every queue (errors of queues stay pending in ``queue.error``)."""
        self.default_stream.synchronize()
        for q in self._queues:
            q.synchronize()

    def new_stream(self) -> Stream:
        """Another in-order queue of launches (its own MTLCommandQueue)."""
        return Stream(self.device)

    def stream_for(self, stream: Stream | None) -> Stream:
        """``stream`` or the default stream."""
        return stream or self.default_stream

    def synchronize(self, stream: Stream | None = None) -> None:
        """Wait for every launch on ``stream`` (default: the default stream)."""
        self.stream_for(stream).synchronize()

    def resolve(self, value: Binding, kernel: str, param: str) -> tuple[MetalBuffer, int]:
        """(MetalBuffer, byte offset) for a MetalBuffer, a (buffer, offset) pair or an address inside one."""
        if isinstance(value, MetalBuffer):
            return value, 0
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], MetalBuffer):
            return value[0], int(value[1])
        if isinstance(value, int):
            found = self.registry.find(value)
            if found is not None:
                return found
            raise LaunchError(f"kernel '{kernel}': argument '{param}' is the address {value:#x}, which is not inside "
                              "memory allocated by the metal backend; pass the NumPy array itself (it is then "
                              "wrapped or copied) or an enceladus.Tensor")
        raise LaunchError(f"kernel '{kernel}': argument '{param}' of type {type(value).__name__} cannot be bound "
                          "to a Metal buffer")

    def take_capture_request(self) -> str | None:
        """ENCELADUS_CAPTURE=path.gputrace: the path, once (the next launch is captured)."""
        path, self._capture_path = self._capture_path, None
        self.capture_requested = False
        return path

    def timed(self, stream: Stream | None = None) -> Any:
        """Context manager timing the launches in its block with GPU timestamps (see ``Stream.timed``)."""
        return self.stream_for(stream).timed()

    def close(self) -> None:
        """Wait for all work and release every Metal object this backend created (except the device)."""
        self.default_stream.close()
        for q in self._queues:
            q.stream.close()
        self._queues.clear()
        for lib in self._libraries.values():
            lib.release()
        self._libraries.clear()


__all__ = ["GPUTimer", "MetalBackend", "MetalFunction", "MetalLibrary", "MetalQueue"]
