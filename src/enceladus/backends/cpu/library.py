"""CpuBackend / CpuLibrary / CpuFunction: build MSL into a shared library and launch its kernels."""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from .errors import CpuBackendError, KernelLaunchError
from .signature import KernelSignature, parse_kernels
from .toolchain import (
    KERNEL_FLAGS,
    RUNTIME_FLAGS,
    RUNTIME_SOURCE,
    CompilerInfo,
    build_shared_library,
    find_compiler,
)
from .translate import needs_fibers, translation_unit

ABI_VERSION = 3
MAX_BUFFERS = 31
MAX_THREADS_PER_THREADGROUP = 1024
THREADGROUP_MEMORY_LIMIT = 32 * 1024
_U32 = (1 << 32) - 1

_Triple = ctypes.c_uint * 3


class _EncLaunch(ctypes.Structure):
    """Mirror of ``EncLaunch`` in include/enceladus/abi.h."""

    _fields_ = [
        ("fn", ctypes.c_void_p),
        ("kernel_name", ctypes.c_char_p),
        ("groups", _Triple),
        ("tptg", _Triple),
        ("gsize", _Triple),
        ("use_fibers", ctypes.c_int),
        ("n_tg_params", ctypes.c_uint),
        ("buffers", ctypes.POINTER(ctypes.c_void_p)),
        ("tg_param_sizes", ctypes.c_ulong * MAX_BUFFERS),
        ("tg_limit", ctypes.c_ulong),
        ("error", ctypes.c_char_p),
        ("error_cap", ctypes.c_ulong),
    ]


class _Runtime:
    """The thread pool / fiber runtime library, built once per compiler and loaded once per process."""

    _lock = threading.Lock()
    _instance: _Runtime | None = None

    def __init__(self, compiler: CompilerInfo) -> None:
        source = RUNTIME_SOURCE.read_text()
        path, _ = build_shared_library(
            source, compiler, RUNTIME_FLAGS, "runtime", "the cpu runtime (runtime.cpp)"
        )
        self.lib = ctypes.CDLL(str(path))
        if self.lib.enc_abi_version() != ABI_VERSION:
            raise CpuBackendError(
                "cpu runtime ABI mismatch; clear the cache directory ~/.cache/enceladus/cpu"
            )
        self.lib.enc_runtime_api.restype = ctypes.c_void_p
        self.lib.enc_launch.argtypes = [ctypes.POINTER(_EncLaunch)]
        self.lib.enc_launch.restype = ctypes.c_int
        self.lib.enc_measure_switch_ns.argtypes = [ctypes.c_uint]
        self.lib.enc_measure_switch_ns.restype = ctypes.c_double
        self.lib.enc_runtime_init.argtypes = [ctypes.c_uint, ctypes.c_ulong]
        threads = int(os.environ.get("ENCELADUS_CPU_THREADS") or os.cpu_count() or 1)
        stack = int(os.environ.get("ENCELADUS_CPU_FIBER_STACK") or 0)
        self.lib.enc_runtime_init(max(1, threads), stack)
        self.api = self.lib.enc_runtime_api()

    @classmethod
    def get(cls, compiler: CompilerInfo) -> _Runtime:
        with cls._lock:
            if cls._instance is None:
                cls._instance = _Runtime(compiler)
            return cls._instance


class CpuFunction:
    """One kernel of a CpuLibrary, launchable on the CPU."""

    def __init__(self, library: CpuLibrary, signature: KernelSignature, address: int) -> None:
        self.name = signature.name
        self.signature = signature
        self._library = library
        self._address = address
        self._name_bytes = signature.name.encode()

    def __repr__(self) -> str:
        return f"<CpuFunction {self.signature}>"

    def launch(
        self,
        threadgroups: Sequence[int],
        threads_per_threadgroup: Sequence[int],
        buffers: Mapping[int, int],
        *,
        threadgroup_memory: Mapping[int, int] | None = None,
    ) -> None:
        """Run the kernel like ``dispatchThreadgroups``: ``buffers`` maps ``[[buffer(i)]]`` slots to addresses,
        ``threadgroup_memory`` maps ``[[threadgroup(i)]]`` slots to byte lengths. Synchronous."""
        groups = self._triple("threadgroups", threadgroups, allow_zero=True)
        tptg = self._triple("threads_per_threadgroup", threads_per_threadgroup)
        self._dispatch(groups, tptg, tuple(g * t for g, t in zip(groups, tptg)), buffers, threadgroup_memory)

    def dispatch_threads(
        self,
        threads: Sequence[int],
        threads_per_threadgroup: Sequence[int],
        buffers: Mapping[int, int],
        *,
        threadgroup_memory: Mapping[int, int] | None = None,
    ) -> None:
        """Run the kernel like ``dispatchThreads``: ``threads`` is the grid size in threads; edge threadgroups
        are partial (their ``threads_per_threadgroup`` builtin reports the partial size)."""
        grid = self._triple("threads", threads, allow_zero=True)
        tptg = self._triple("threads_per_threadgroup", threads_per_threadgroup)
        groups = tuple(-(-g // t) for g, t in zip(grid, tptg))
        self._dispatch(groups, tptg, grid, buffers, threadgroup_memory)

    # -- helpers ---------------------------------------------------------------------------------
    def _triple(self, what: str, value: Sequence[int], allow_zero: bool = False) -> tuple[int, int, int]:
        try:
            vals = tuple(int(v) for v in value)
        except (TypeError, ValueError):
            raise KernelLaunchError(
                f"kernel '{self.name}': {what} must be up to 3 ints, got {value!r}"
            ) from None
        if not 1 <= len(vals) <= 3:
            raise KernelLaunchError(f"kernel '{self.name}': {what} must have 1 to 3 entries, got {value!r}")
        vals = vals + (1,) * (3 - len(vals))
        low = 0 if allow_zero else 1
        if any(v < low or v > _U32 for v in vals):
            raise KernelLaunchError(f"kernel '{self.name}': {what}={value!r} must be in [{low}, 2^32)")
        return vals  # type: ignore[return-value]

    def _dispatch(
        self,
        groups: tuple[int, ...],
        tptg: tuple[int, ...],
        grid: tuple[int, ...],
        buffers: Mapping[int, int],
        threadgroup_memory: Mapping[int, int] | None,
    ) -> None:
        n = tptg[0] * tptg[1] * tptg[2]
        if n > MAX_THREADS_PER_THREADGROUP:
            raise KernelLaunchError(
                f"kernel '{self.name}': {n} threads per threadgroup {tptg} exceeds Metal's limit of "
                f"{MAX_THREADS_PER_THREADGROUP}"
            )
        if any(g * t > _U32 for g, t in zip(groups, tptg)):
            raise KernelLaunchError(
                f"kernel '{self.name}': grid {groups} x {tptg} overflows 32-bit thread ids"
            )
        table = (ctypes.c_void_p * MAX_BUFFERS)()
        wanted = {p.index: p for p in self.signature.buffer_params}
        for slot in buffers:
            if slot not in wanted:
                raise KernelLaunchError(
                    f"kernel '{self.name}' has no [[buffer({slot})]] parameter; it takes buffers "
                    f"{sorted(wanted)}"
                )
        for slot, p in wanted.items():
            if slot not in buffers:
                raise KernelLaunchError(
                    f"kernel '{self.name}': no address for parameter '{p.name}' [[buffer({slot})]] "
                    f"({p.msl_type}); pass buffers={{{slot}: array.ctypes.data, ...}}"
                )
            addr = buffers[slot]
            if not isinstance(addr, int) or addr <= 0:
                raise KernelLaunchError(
                    f"kernel '{self.name}': parameter '{p.name}' [[buffer({slot})]] needs a non-null host "
                    f"address (int), got {addr!r}"
                )
            table[slot] = addr
        launch = _EncLaunch()
        tg_params = {p.index: p for p in self.signature.threadgroup_params}
        sizes = dict(threadgroup_memory or {})
        for slot in sizes:
            if slot not in tg_params:
                raise KernelLaunchError(f"kernel '{self.name}' has no [[threadgroup({slot})]] parameter")
        total = 0
        for slot, p in tg_params.items():
            if slot not in sizes:
                raise KernelLaunchError(
                    f"kernel '{self.name}': parameter '{p.name}' [[threadgroup({slot})]] needs a length: "
                    f"pass threadgroup_memory={{{slot}: nbytes}}"
                )
            size = int(sizes[slot])
            if size < 0:
                raise KernelLaunchError(f"kernel '{self.name}': threadgroup_memory[{slot}] must be >= 0")
            launch.tg_param_sizes[slot] = size
            total += (size + 15) // 16 * 16
        if total > THREADGROUP_MEMORY_LIMIT:
            raise KernelLaunchError(
                f"kernel '{self.name}': threadgroup parameters need {total} bytes, more than the "
                f"{THREADGROUP_MEMORY_LIMIT}-byte threadgroup memory limit"
            )
        launch.n_tg_params = max(tg_params) + 1 if tg_params else 0
        launch.fn = self._address
        launch.kernel_name = self._name_bytes
        launch.groups = _Triple(*groups)
        launch.tptg = _Triple(*tptg)
        launch.gsize = _Triple(*grid)
        launch.use_fibers = 1 if self._library.uses_fibers else 0
        launch.buffers = table
        launch.tg_limit = THREADGROUP_MEMORY_LIMIT
        err = ctypes.create_string_buffer(2048)
        launch.error = ctypes.cast(err, ctypes.c_char_p)
        launch.error_cap = len(err)
        if self._library._runtime.lib.enc_launch(ctypes.byref(launch)) != 0:
            raise KernelLaunchError(err.value.decode(errors="replace"))


class CpuLibrary:
    """MSL text compiled for the CPU: its kernels' signatures and the generated C++."""

    def __init__(self, msl: str, compiler: CompilerInfo) -> None:
        self.msl = msl
        self.kernels: dict[str, KernelSignature] = parse_kernels(msl)
        if not self.kernels:
            raise CpuBackendError("the MSL text declares no `kernel void NAME(...)` function")
        self.cpp = translation_unit(msl, self.kernels)
        self.uses_fibers = needs_fibers(msl)
        self.compiler = compiler
        self._runtime = _Runtime.get(compiler)
        names = ", ".join(self.kernels)
        self.path, self.built = build_shared_library(
            self.cpp, compiler, KERNEL_FLAGS + compiler.warning_flags, "kernel", f"MSL library ({names})"
        )
        self._lib = self._load(self.path)
        self._functions: dict[str, CpuFunction] = {}

    def _load(self, path: Path) -> ctypes.CDLL:
        lib = ctypes.CDLL(str(path))
        lib.enceladus_bind.argtypes = [ctypes.c_void_p]
        lib.enceladus_bind.restype = ctypes.c_uint
        if lib.enceladus_bind(self._runtime.api) != ABI_VERSION:
            raise CpuBackendError(f"kernel library {path} was built for another runtime ABI; delete it")
        return lib

    def function(self, name: str) -> CpuFunction:
        """The kernel ``name``; raises KeyError listing the available kernels."""
        fn = self._functions.get(name)
        if fn is None:
            if name not in self.kernels:
                raise KeyError(
                    f"no kernel named '{name}' in this library; available: {', '.join(self.kernels)}"
                )
            address = ctypes.cast(getattr(self._lib, f"enceladus_thread_{name}"), ctypes.c_void_p).value
            fn = self._functions[name] = CpuFunction(self, self.kernels[name], int(address or 0))
        return fn

    def __repr__(self) -> str:
        return f"<CpuLibrary kernels={list(self.kernels)} at {self.path}>"


class CpuBackend:
    """Compiles MSL text for the CPU with a host C++ compiler (see docs/cpu_backend.md)."""

    name = "cpu"

    def __init__(self, cxx: str | None = None) -> None:
        self.compiler = find_compiler(cxx)

    def compile(self, msl: str) -> CpuLibrary:
        """Build (or load from the cache) a shared library for this MSL text."""
        return CpuLibrary(msl, self.compiler)

    def fiber_switch_ns(self, iterations: int = 1_000_000) -> float:
        """Measured cost of one fiber context switch, in nanoseconds."""
        return float(_Runtime.get(self.compiler).lib.enc_measure_switch_ns(iterations))
