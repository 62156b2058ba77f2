"""The Metal device: creation, compile options, MSL compilation to pipelines."""

from __future__ import annotations

import ctypes
import platform
import weakref
from dataclasses import dataclass
from typing import Any

from ...errors import CompilationError
from .objc import MTLSize, ObjCBridge, ObjCError

# Values from Apple's headers, checked against the extracted metadata in tests/backends/metal.
MTLLanguageVersion3_1 = 0x30001
MTLLanguageVersion3_2 = 0x30002
MTLLanguageVersion4_0 = 0x40000
MTLMathModeSafe = 0
MTLMathModeFast = 2
MTLMathFloatingPointFunctionsFast = 0
MTLMathFloatingPointFunctionsPrecise = 1
MTLResourceStorageModeShared = 0
MTLResourceHazardTrackingModeDefault = 0
MTLGPUFamilyApple7 = 1007  # M1
MTLGPUFamilyApple8 = 1008  # M2
MTLGPUFamilyApple9 = 1009  # M3
MTLGPUFamilyMac2 = 2002
MTLGPUFamilyMetal4 = 5002
MTLGPUFamilyApple10 = 1010  # taken as the M5 class (neural accelerators): unverified, docs/verification.md

LANGUAGE_NAMES = {MTLLanguageVersion3_1: "3.1", MTLLanguageVersion3_2: "3.2", MTLLanguageVersion4_0: "4.0"}

# A kernel that every supported MSL version accepts: building its pipeline confirms the version. MSL 4.0 is
# confirmed with a kernel that also includes <metal_tensor>, which exists only in the 4.0 library.
PROBE_MSL = """#include <metal_stdlib>
using namespace metal;
kernel void enceladus_probe(device uint* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { out[i] = i; }
"""
PROBE_MSL_4 = "#include <metal_tensor>\n" + PROBE_MSL
# Newest first. Chosen by compiling, never from the OS version: a Python linked against an SDK older than
# macOS 26 is told "16.0" on macOS 26 (MSL_AUDIT B4; CPython issue 135675).
LANGUAGE_PROBES = ((MTLLanguageVersion4_0, PROBE_MSL_4), (MTLLanguageVersion3_2, PROBE_MSL))


class MetalCompileError(CompilationError):
    """Metal's compiler refused the MSL text; the message is Metal's own compiler log."""


def macos_major(release: str | None = None) -> int:
    """The macOS major version (15, 26...), 0 when unknown or not macOS."""
    release = platform.mac_ver()[0] if release is None else release
    try:
        return int(release.split(".")[0])
    except ValueError:
        return 0


@dataclass
class Pipeline:
    """A compiled kernel: its pipeline state (owned) and the limits Metal reported for it."""

    handle: int
    name: str
    max_threads: int
    execution_width: int
    static_threadgroup_memory: int


class MetalDevice:
    """``MTLCreateSystemDefaultDevice()`` and MSL compilation through ``newLibraryWithSource``."""

    def __init__(self, bridge: ObjCBridge, macos: int | None = None) -> None:
        self.bridge = bridge
        handle = bridge.c("MTLCreateSystemDefaultDevice")()
        if not handle:
            raise ObjCError("MTLCreateSystemDefaultDevice() returned nil: this Mac has no Metal device")
        self.handle = int(handle)  # +1 (NS_RETURNS_RETAINED); kept for the life of the process
        # buffers whose gpuAddress was handed out (MetalBuffer.gpu_address): made resident (useResources:) on every
        # launch of a kernel that makes pointers from integers; a released buffer drops out
        self.addressed: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()
        with bridge.autorelease_pool():
            self.name = bridge.string(bridge.send(self.handle, "name"))
        self.max_threadgroup_memory = int(bridge.send(self.handle, "maxThreadgroupMemoryLength"))
        self.unified_memory = bool(bridge.send(self.handle, "hasUnifiedMemory"))
        self.apple7 = bool(bridge.send(self.handle, "supportsFamily:", MTLGPUFamilyApple7))
        self.metal4 = bool(bridge.send(self.handle, "supportsFamily:", MTLGPUFamilyMetal4))
        self.apple10 = bool(bridge.send(self.handle, "supportsFamily:", MTLGPUFamilyApple10))
        # 64-bit atomic_max/min_explicit on atomic_ulong: Apple9, or Apple8 with Mac2 (MSL specification, 64-bit
        # atomics; unverified on hardware)
        family = [bool(bridge.send(self.handle, "supportsFamily:", f))
                  for f in (MTLGPUFamilyApple9, MTLGPUFamilyApple8, MTLGPUFamilyMac2)]
        self.atomic_u64_minmax = family[0] or (family[1] and family[2])
        self.macos = macos_major() if macos is None else macos  # reported only: the MSL version is probed
        self.language_version = self._confirm_language_version()

    @property
    def language_name(self) -> str:
        """The MSL version kernels are compiled with, e.g. '3.2'."""
        return LANGUAGE_NAMES.get(self.language_version, hex(self.language_version))

    def _confirm_language_version(self) -> int:
        """The newest MSL version (4.0, then 3.2) that really builds a pipeline, whatever the OS says it is."""
        errors = []
        self.language_probes: dict[str, str] = {}  # version -> "ok" or the compiler's refusal (the doctor report)
        for version, probe in LANGUAGE_PROBES:
            try:
                lib = self.new_library(probe, language_version=version)
                pipe = self.new_pipeline(lib, "enceladus_probe")
                self.bridge.release(pipe.handle)
                self.bridge.release(lib)
                self.language_probes[LANGUAGE_NAMES[version]] = "ok"
                return version
            except CompilationError as e:
                errors.append(f"MSL {LANGUAGE_NAMES[version]}: {e.message}")
                self.language_probes[LANGUAGE_NAMES[version]] = e.message.splitlines()[-1][:200]
        raise ObjCError("neither MSL 4.0 nor 3.2 builds a probe kernel on this Mac (Enceladus needs macOS 15 or "
                        "later):\n" + "\n".join(errors))

    def compile_options(self, language_version: int, fast_math: bool = False,
                        required_threads: tuple[int, int, int] | None = None) -> int:
        """An owned ``MTLCompileOptions`` with every setting we rely on set explicitly.

        ``required_threads``: the threadgroup size, which pipelines that use cooperative tensors (Metal 4 tensor
        ops) must declare when they are compiled."""
        b = self.bridge
        opts = b.new("MTLCompileOptions")
        b.send(opts, "setLanguageVersion:", language_version)
        if required_threads is not None:
            b.send(opts, "setRequiredThreadsPerThreadgroup:", MTLSize(*required_threads))
        b.send(opts, "setMathMode:", MTLMathModeFast if fast_math else MTLMathModeSafe)
        b.send(opts, "setMathFloatingPointFunctions:",
               MTLMathFloatingPointFunctionsFast if fast_math else MTLMathFloatingPointFunctionsPrecise)
        return opts

    def new_library(self, msl: str, *, fast_math: bool = False, language_version: int | None = None,
                    required_threads: tuple[int, int, int] | None = None) -> int:
        """``newLibraryWithSource:options:error:`` -> an owned MTLLibrary, or MetalCompileError with Metal's log."""
        b = self.bridge
        opts = self.compile_options(language_version or self.language_version, fast_math, required_threads)
        source = b.nsstring(msl)
        err = ctypes.c_void_p()
        try:
            with b.autorelease_pool():
                lib = b.send(self.handle, "newLibraryWithSource:options:error:", source, opts, ctypes.byref(err))
                if not lib:
                    raise MetalCompileError(
                        "Metal's compiler refused the MSL:\n" + b.error_text(err.value),
                        fix="this is a bug in Enceladus's code generator unless the MSL was written by hand; "
                            "ENCELADUS_DUMP=dir writes the MSL out")
            # A library can come back together with warnings in `err`; they need no release (+0).
            return int(lib)
        finally:
            b.release(source)
            b.release(opts)

    def new_pipeline(self, library: int, name: str) -> Pipeline:
        """``newFunctionWithName:`` + ``newComputePipelineStateWithFunction:error:`` and the pipeline's limits."""
        b = self.bridge
        fname = b.nsstring(name)
        try:
            function = b.send(library, "newFunctionWithName:", fname)
        finally:
            b.release(fname)
        if not function:
            raise MetalCompileError(f"the MSL library has no kernel named '{name}'", kernel=name)
        err = ctypes.c_void_p()
        try:
            with b.autorelease_pool():
                pso = b.send(self.handle, "newComputePipelineStateWithFunction:error:", function, ctypes.byref(err))
                if not pso:
                    raise MetalCompileError(f"Metal could not build a pipeline for kernel '{name}':\n"
                                            + b.error_text(err.value), kernel=name)
        finally:
            b.release(function)
        return Pipeline(
            handle=int(pso), name=name,
            max_threads=int(b.send(pso, "maxTotalThreadsPerThreadgroup")),
            execution_width=int(b.send(pso, "threadExecutionWidth")),
            static_threadgroup_memory=int(b.send(pso, "staticThreadgroupMemoryLength")),
        )

    def new_buffer(self, nbytes: int) -> int:
        """An owned shared-storage MTLBuffer of ``nbytes`` rounded up to whole 16-byte units (at least 16): the
        32-bit word that holds a buffer's last 16-bit element is then inside it (16-bit atomics rewrite it)."""
        with self.bridge.autorelease_pool():
            buf = self.bridge.send(self.handle, "newBufferWithLength:options:", max(16, (int(nbytes) + 15) // 16 * 16),
                                   MTLResourceStorageModeShared | MTLResourceHazardTrackingModeDefault)
        if not buf:
            raise MemoryError(f"Metal could not allocate a {nbytes}-byte buffer")
        return int(buf)

    def wrap_memory(self, address: int, nbytes: int) -> int | None:
        """An owned MTLBuffer over existing page-aligned host memory (no copy), or None if Metal refuses."""
        with self.bridge.autorelease_pool():
            buf = self.bridge.send(self.handle, "newBufferWithBytesNoCopy:length:options:deallocator:", address,
                                   nbytes, MTLResourceStorageModeShared, None)
        return int(buf) if buf else None
