"""CpuBackend / CpuLibrary / CpuFunction: build MSL into a shared library and launch its kernels."""

from __future__ import annotations

import ctypes
import os
import struct
import sys
import threading
from collections.abc import Mapping, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any

from ...cachedir import dumps_plain
from ...compiler.kernel import (  # (not .signature nor msl_signature: no parser loaded)
    KernelParam,
    KernelSignature,
)
from ...compiler.metal_limits import MAX_GRID, MAX_THREADGROUP_MEMORY, MAX_THREADS_PER_THREADGROUP
from . import CpuBackendError, KernelLaunchError, KernelTimeoutError
from .toolchain import (
    RUNTIME_FLAGS,
    RUNTIME_SOURCE,
    CompilerInfo,
    find_compiler,
    kernel_flags,
    library_index_path,
    read_library_index,
    runtime_library_key,
    verified_library,
)

if TYPE_CHECKING:
    from .memory import CpuAllocation
    from .queue import CpuQueue

ABI_VERSION = 10
MAX_BUFFERS = 31
THREADGROUP_MEMORY_LIMIT = MAX_THREADGROUP_MEMORY
_U32 = MAX_GRID

# The EncLaunch struct of include/enceladus/abi.h, packed with `struct` (no ctypes objects on the hot
# path): a constant head per kernel, then the per-launch part, then the packed scalar bytes.
_HEAD = struct.Struct("<QQ3IiIIQ31QQQQQQ")  # fn .. debug, names, tg_names, timeout_ms
_GROUPS = "3I3I"  # groups, gsize
LAUNCH_STRUCT_SIZE = _HEAD.size + 24 + 8 * MAX_BUFFERS + 24 * MAX_BUFFERS
NO_ARGS_SLOT = 0xFFFFFFFF
ERROR_CAPACITY = 2048
MAX_DIMS = 8
_LAYOUT = struct.Struct(f"<II{MAX_DIMS}q{MAX_DIMS}q")  # EncLayout
ANYWHERE = (0, (1 << 64) - 1, 0)  # the extent of a buffer whose size is not known: not checked


def timeout_from_env() -> float | None:
    """``ENCELADUS_TIMEOUT`` (seconds; unset, empty or 0: none): the default limit of every cpu launch."""
    raw = os.environ.get("ENCELADUS_TIMEOUT", "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise CpuBackendError(f"ENCELADUS_TIMEOUT={raw!r} is not a number of seconds; unset it or set e.g. 30") \
            from None
    return value if value > 0 else None


def _count_from_env(name: str, default: int, low: int, high: int, what: str) -> int:
    """A whole number from ``name`` in [low, high] (unset or empty: ``default``), else a CpuBackendError saying so."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = low - 1
    if not low <= value <= high:
        raise CpuBackendError(f"{name}={raw!r}: expected {what}, a whole number from {low} to {high}; "
                              f"unset it for the default ({default})")
    return value


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, as set by taskset or a container), else os.cpu_count()."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # (no sched_getaffinity on macOS)
        return os.cpu_count() or 1


def pool_threads() -> int:
    """The cpu runtime's thread pool size: ``ENCELADUS_CPU_THREADS``, else one thread per usable CPU."""
    return _count_from_env("ENCELADUS_CPU_THREADS", usable_cpus(), 1, 1024, "the thread pool's size")


def _timeout_ms(timeout: float | None) -> int:
    if timeout is None:
        return 0
    if not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    return max(1, int(timeout * 1000))


def extent_fields(extents: Sequence[tuple] | None, count: int, tail: int) -> tuple[list[int], bytes]:
    """The packed ``EncExtent`` fields of ``count`` buffers and the layout blobs that follow the packet.

    Each extent is ``(lo, hi, itemsize)`` for an argument whose elements fill ``[lo, hi)``, or
    ``(lo, hi, itemsize, shape, strides)`` for a strided view (byte strides >= 0 from ``lo``, largest first).
    ``tail`` is the packet's size before the blobs (their offsets are relative to the packet start)."""
    if extents is None:
        return list(ANYWHERE) * count, b""
    fields: list[int] = []
    blobs = bytearray()
    start = (tail + 7) // 8 * 8
    for e in extents:
        if len(e) == 3:
            fields += e
            continue
        lo, hi, itemsize, shape, strides = e
        if len(shape) > MAX_DIMS:  # more dimensions than the runtime checks: only the span is checked
            fields += (lo, hi, itemsize)
            continue
        offset = start + len(blobs)
        pad = [0] * (MAX_DIMS - len(shape))
        blobs += _LAYOUT.pack(len(shape), itemsize, *shape, *pad, *strides, *pad)
        fields += (lo, hi, itemsize | (offset << 16))
    return fields, (b"\0" * (start - tail) + bytes(blobs)) if blobs else b""


def _error(name: str, rc: int, err: ctypes.Array, line_table: Mapping[int, str] | None,
           timeout_ms: int) -> BaseException:
    """The exception for a failed enc_launch (return code ``rc``; ``err``: line word, reserved word, message)."""
    if rc == 2:
        if threading.current_thread() is threading.main_thread():
            return KeyboardInterrupt(f"kernel '{name}' was interrupted (SIGINT); the process is usable")
        return KernelLaunchError(f"kernel '{name}' was interrupted (SIGINT) while running on a stream")
    if rc == 3:
        return KernelTimeoutError(f"kernel '{name}' ran past its timeout of {timeout_ms / 1000:g} s and was "
                                  "stopped (its outputs may be partly written); raise timeout= or "
                                  "ENCELADUS_TIMEOUT, or look for a loop that never ends")
    raw = err.raw
    line = int.from_bytes(raw[:4], "little")
    message = raw[8:].split(b"\0", 1)[0].decode(errors="replace") or f"kernel '{name}' failed"
    if line:
        message += f" (MSL line {line})"
    if line_table is not None and hasattr(line_table, "annotate"):  # the runtime's LineTable: name kernel lines
        message = line_table.annotate(message)
    elif line and line_table and line_table.get(line):
        message = message.replace(f" (MSL line {line})", f"\n  at {line_table.get(line)} (MSL line {line})")
    return KernelLaunchError(message)


# One error buffer per thread for FastLauncher.run (the stream worker runs every queued launch): filled by
# enc_launch only on failure, read into the exception, then zeroed again.
_ERR = threading.local()


def checks_enabled() -> bool:
    """Whether cpu-backend kernels are built with access checks: yes unless ``ENCELADUS_CHECKS=0``."""
    return os.environ.get("ENCELADUS_CHECKS", "1").strip().lower() not in ("0", "false", "no", "off")


class _Runtime:
    """The thread pool / fiber runtime library, built once per compiler and loaded once per process."""

    _lock = threading.Lock()
    _instance: _Runtime | None = None

    def __init__(self, compiler: CompilerInfo) -> None:
        key = runtime_library_key(compiler)
        path = verified_library(key)  # cached: runtime.cpp is not read
        if path is None:
            from .build import build_shared_library

            with open(RUNTIME_SOURCE) as f:
                source = f.read()
            path, _ = build_shared_library(source, compiler, RUNTIME_FLAGS, "runtime", "the cpu runtime (runtime.cpp)",
                                           key=key)
        self.lib = _open_library(path)
        if self.lib.enc_abi_version() != ABI_VERSION:
            raise CpuBackendError(
                "cpu runtime ABI mismatch; clear the cache directory ~/.cache/enceladus/cpu"
            )
        self.lib.enc_runtime_api.restype = ctypes.c_void_p
        self.lib.enc_launch_struct_size.restype = ctypes.c_ulong
        if self.lib.enc_launch_struct_size() != LAUNCH_STRUCT_SIZE:
            raise CpuBackendError("cpu runtime: EncLaunch layout mismatch between abi.h and library.py")
        self.lib.enc_launch.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong]
        self.lib.enc_launch.restype = ctypes.c_int
        self.enc_launch = self.lib.enc_launch
        self.lib.enc_runtime_init.argtypes = [ctypes.c_uint, ctypes.c_ulong]
        threads = pool_threads()
        stack = _count_from_env("ENCELADUS_CPU_FIBER_STACK", 0, 0, 1 << 30, "bytes per fiber stack (0: 256 KiB)")
        self.lib.enc_runtime_init(threads, stack)
        self.api = self.lib.enc_runtime_api()
        self.lib.enc_register_allocation.argtypes = [ctypes.c_ulong, ctypes.c_ulong]
        self.lib.enc_unregister_allocation.argtypes = [ctypes.c_ulong]
        # The allocations made before the runtime was loaded. A process that has allocated nothing has not imported
        # the memory module: it picks _TRACKING up when imported (memory._pick_up_runtime). Set first, then looked
        # for: of a load and an import running at once, at least one sees the other (tracking twice is harmless).
        _TRACKING[:] = [self.lib.enc_register_allocation, self.lib.enc_unregister_allocation]
        track = getattr(sys.modules.get(__package__ + ".memory"), "track", None)
        if track is not None:
            track(*_TRACKING)

    def measure_switch_ns(self, iterations: int) -> float:
        fn = self.lib.enc_measure_switch_ns
        fn.argtypes = [ctypes.c_uint]
        fn.restype = ctypes.c_double
        return float(fn(iterations))

    @classmethod
    def get(cls, compiler: CompilerInfo) -> _Runtime:
        with cls._lock:
            if cls._instance is None:
                cls._instance = _Runtime(compiler)
            return cls._instance


# The runtime library's (register, unregister) allocation functions once it is loaded (memory.track forwards the
# live allocations to them).
_TRACKING: list = []


def _open_library(path: str) -> ctypes.CDLL:
    """dlopen a library that matched its cache record; a CpuBackendError (not a bare OSError) if it still fails."""
    try:
        return ctypes.CDLL(path)
    except (OSError, MemoryError) as e:
        limit = _map_limit()
        if limit is not None and limit[0] >= limit[1] - 64:
            raise CpuBackendError(
                f"cannot load kernel library {path}: this process holds {limit[0]} memory mappings, the operating "
                f"system's limit (vm.max_map_count = {limit[1]}); each loaded kernel specialization takes about "
                "two. Use fewer specializations in one process (do_not_specialize=..., fewer distinct constexpr "
                "values), or raise the limit (sysctl vm.max_map_count)") from None
        raise CpuBackendError(f"cannot load the cached library {path}: {e or type(e).__name__}. Remove the cpu "
                              "backend's cache (`enceladus cache clear --kind cpu`) and run again") from None


def _map_limit() -> tuple[int, int] | None:
    """(memory mappings this process holds, the system's limit), where the system says (Linux)."""
    try:
        with open("/proc/sys/vm/max_map_count") as f:
            limit = int(f.read())
        with open("/proc/self/maps", "rb") as f:
            return sum(1 for _ in f), limit
    except (OSError, ValueError):
        return None


class FastLauncher:
    """A kernel bound to fixed buffer slots, threads per threadgroup and scalar layout.

    ``pack(groups, gsize, *values)`` turns one launch into a self-contained bytes packet (the
    EncLaunch struct plus the packed scalars) and ``run(packet)`` executes it synchronously, raising
    KernelLaunchError. The JIT's hot path and the stream worker use only these two calls.
    """

    __slots__ = ("name", "head", "body", "_enc_launch", "nbuf", "line_table", "timeout_ms", "_function", "_head_args")

    def __init__(self, function: CpuFunction, head: bytes, body: struct.Struct, nbuf: int,
                 head_args: tuple = ()) -> None:
        self.name = function.name
        self._function = function
        self._head_args = head_args
        self.head = head
        self.body = body
        self.nbuf = nbuf
        self._enc_launch = function._library._runtime.enc_launch
        self.line_table: Mapping[int, str] | None = None  # MSL line -> where in the kernel's source
        self.timeout_ms = _timeout_ms(timeout_from_env())

    def with_timeout(self, timeout: float | None) -> FastLauncher:
        """The same launcher with another time limit (seconds; None: none)."""
        ms = _timeout_ms(timeout)
        fl = FastLauncher(self._function, self._function._head(*self._head_args, timeout_ms=ms), self.body, self.nbuf,
                          self._head_args)
        fl.line_table = self.line_table
        fl.timeout_ms = ms
        return fl

    def pack(self, groups: Sequence[int], gsize: Sequence[int], *values: object,
             extents: Sequence[tuple] | None = None) -> bytes:
        """The packet for one launch: ``values`` are the buffer addresses (slot order) then the scalars;
        ``extents`` what each buffer may touch (see :func:`extent_fields`; None: not checked)."""
        n = self.nbuf
        fields, blobs = extent_fields(extents, n, len(self.head) + self.body.size)
        packet = self.head + self.body.pack(*groups, *gsize, *values[:n], *fields, *values[n:])
        return packet + blobs if blobs else packet

    def pack_parts(self, groups: Sequence[int], gsize: Sequence[int], addresses: Sequence[int],
                   scalars: Sequence[object], extents: Sequence[tuple]) -> bytes:
        """``pack`` with the addresses, scalars and extents as lists (the launch fast path): plain extents
        ``(lo, hi, itemsize)`` are flattened in place; a strided one takes ``pack``."""
        fields = list(chain.from_iterable(extents))  # (in C; a strided extent has 5 items and takes pack)
        if len(fields) != 3 * len(extents):
            return self.pack(groups, gsize, *addresses, *scalars, extents=extents)
        return self.head + self.body.pack(*groups, *gsize, *addresses, *fields, *scalars)

    def flat_packer(self) -> tuple[bytes, Any]:
        """``(head, pack)``: the packet of ``pack_parts`` is ``head + pack(*groups, *gsize, *addresses, *fields,
        *scalars)`` with ``fields`` each plain extent's ``lo, hi, itemsize`` in turn (for callers that compile
        their own packing, e.g. the runtime's launch plans)."""
        return self.head, self.body.pack

    def run(self, packet: bytes) -> None:
        """Execute one packet to completion on the calling thread."""
        err = getattr(_ERR, "buf", None)  # this thread's error buffer: all zeros between launches
        if err is None:
            err = _ERR.buf = ctypes.create_string_buffer(ERROR_CAPACITY)
        rc = self._enc_launch(packet, err, ERROR_CAPACITY)
        if rc != 0:
            exc = _error(self.name, rc, err, self.line_table, self.timeout_ms)
            ctypes.memset(err, 0, ERROR_CAPACITY)
            raise exc


class CpuFunction:
    """One kernel of a CpuLibrary, launchable on the CPU."""

    takes_extents = True  # launches carry what each buffer may touch (the access checks)

    def __init__(self, library: CpuLibrary, signature: KernelSignature, address: int) -> None:
        self.name = signature.name
        self.signature = signature
        self._library = library
        self.take_unknown_address_line = library.take_unknown_address_line
        self._address = address
        self._name_buf = ctypes.create_string_buffer(signature.name.encode())
        names = [None] * MAX_BUFFERS
        for p in signature.buffer_params:
            names[p.index] = p.name.encode()
        self._names = (ctypes.c_char_p * MAX_BUFFERS)(*names)
        tg_names = [None] * MAX_BUFFERS
        for p in signature.threadgroup_params:
            tg_names[p.index] = p.name.encode()
        self._tg_names = (ctypes.c_char_p * MAX_BUFFERS)(*tg_names)

    def __repr__(self) -> str:
        return f"<CpuFunction {self.signature}>"

    def launch(
        self,
        threadgroups: Sequence[int],
        threads_per_threadgroup: Sequence[int],
        buffers: Mapping[int, int],
        *,
        threadgroup_memory: Mapping[int, int] | None = None,
        debug: bool = False,
        buffer_sizes: Mapping[int, int] | None = None,
        extents: Mapping[int, tuple] | None = None,
        timeout: float | None = None,
    ) -> None:
        """Run the kernel like ``dispatchThreadgroups``: ``buffers`` maps ``[[buffer(i)]]`` slots to addresses,
        ``threadgroup_memory`` maps ``[[threadgroup(i)]]`` slots to byte lengths. Synchronous.

        Checked builds check every access of a buffer against ``extents[slot]`` (see :func:`extent_fields`)
        or, failing that, ``buffer_sizes[slot]`` bytes from its address; a buffer with neither is not
        checked. ``debug=True`` adds threadgroup-memory race checks (see docs/cpu_backend.md).
        ``timeout``: seconds before the launch is stopped (default ``ENCELADUS_TIMEOUT``)."""
        groups = self._triple("threadgroups", threadgroups, allow_zero=True)
        tptg = self._triple("threads_per_threadgroup", threads_per_threadgroup)
        self._dispatch(groups, tptg, tuple(g * t for g, t in zip(groups, tptg)), buffers, threadgroup_memory,
                       debug, buffer_sizes, extents, timeout)

    def dispatch_threads(
        self,
        threads: Sequence[int],
        threads_per_threadgroup: Sequence[int],
        buffers: Mapping[int, int],
        *,
        threadgroup_memory: Mapping[int, int] | None = None,
        debug: bool = False,
        buffer_sizes: Mapping[int, int] | None = None,
        extents: Mapping[int, tuple] | None = None,
        timeout: float | None = None,
    ) -> None:
        """Run the kernel like ``dispatchThreads``: ``threads`` is the grid size in threads; edge threadgroups
        are partial (their ``threads_per_threadgroup`` builtin reports the partial size)."""
        grid = self._triple("threads", threads, allow_zero=True)
        tptg = self._triple("threads_per_threadgroup", threads_per_threadgroup)
        groups = tuple(-(-g // t) for g, t in zip(grid, tptg))
        self._dispatch(groups, tptg, grid, buffers, threadgroup_memory, debug, buffer_sizes, extents, timeout)

    def launcher(self, buffer_slots: Sequence[int], threads_per_threadgroup: Sequence[int],
                 args_slot: int | None = None, args_format: str = "",
                 threadgroup_memory: Mapping[int, int] | None = None) -> FastLauncher:
        """A FastLauncher for launches that bind ``buffer_slots`` (addresses, in this order) and, when
        ``args_slot`` is given, scalars packed with the ``struct`` format ``args_format`` (no byte-order
        prefix; explicit padding) into ``[[buffer(args_slot)]]``. Validated once, here."""
        tptg = self._triple("threads_per_threadgroup", threads_per_threadgroup)
        slots = list(buffer_slots) + ([args_slot] if args_slot is not None else [])
        self._check_slots(set(slots))
        head_args = (tptg, threadgroup_memory, args_slot, struct.calcsize("<" + args_format) if args_slot
                     is not None else 0, 0)
        order = {slot: i for i, slot in enumerate(buffer_slots)}
        fmt = "".join("Q" if s in order else "8x" for s in range(MAX_BUFFERS))
        ext = "".join("QQQ" if s in order else "24x" for s in range(MAX_BUFFERS))
        # struct packs fields in format order: give each used slot its position by sorting.
        if list(buffer_slots) != sorted(buffer_slots):
            raise KernelLaunchError(f"kernel '{self.name}': launcher buffer_slots must be ascending")
        fl = FastLauncher(self, b"", struct.Struct("<" + _GROUPS + fmt + ext + args_format), len(order), head_args)
        fl.head = self._head(*head_args, timeout_ms=fl.timeout_ms)
        return fl

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

    def _check_slots(self, slots: set[int]) -> None:
        wanted = {p.index: p for p in self.signature.buffer_params}
        for slot in slots:
            if slot not in wanted:
                raise KernelLaunchError(
                    f"kernel '{self.name}' has no [[buffer({slot})]] parameter; it takes buffers "
                    f"{sorted(wanted)}"
                )
        for slot, p in wanted.items():
            if slot not in slots:
                raise KernelLaunchError(
                    f"kernel '{self.name}': no address for parameter '{p.name}' [[buffer({slot})]] "
                    f"({p.msl_type}); pass buffers={{{slot}: array.ctypes.data, ...}}"
                )

    def _head(self, tptg: tuple[int, ...], threadgroup_memory: Mapping[int, int] | None, args_slot: int | None,
              args_size: int, debug_address: int, address: int | None = None, timeout_ms: int = 0) -> bytes:
        n = tptg[0] * tptg[1] * tptg[2]
        if n > MAX_THREADS_PER_THREADGROUP:
            raise KernelLaunchError(
                f"kernel '{self.name}': {n} threads per threadgroup {tptg} exceeds Metal's limit of "
                f"{MAX_THREADS_PER_THREADGROUP}"
            )
        tg_params = {p.index: p for p in self.signature.threadgroup_params}
        sizes = dict(threadgroup_memory or {})
        for slot in sizes:
            if slot not in tg_params:
                raise KernelLaunchError(f"kernel '{self.name}' has no [[threadgroup({slot})]] parameter")
        tg_sizes = [0] * MAX_BUFFERS
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
            tg_sizes[slot] = size
            total += (size + 15) // 16 * 16
        if total > THREADGROUP_MEMORY_LIMIT:
            raise KernelLaunchError(
                f"kernel '{self.name}': threadgroup parameters need {total} bytes, more than the "
                f"{THREADGROUP_MEMORY_LIMIT}-byte threadgroup memory limit"
            )
        return _HEAD.pack(
            self._address if address is None else address, ctypes.addressof(self._name_buf), *tptg,
            1 if self._library.uses_fibers else 2, max(tg_params) + 1 if tg_params else 0,
            NO_ARGS_SLOT if args_slot is None else args_slot, args_size, *tg_sizes, THREADGROUP_MEMORY_LIMIT,
            debug_address, ctypes.addressof(self._names), ctypes.addressof(self._tg_names), timeout_ms,
        )

    def _dispatch(
        self,
        groups: tuple[int, ...],
        tptg: tuple[int, ...],
        grid: tuple[int, ...],
        buffers: Mapping[int, int],
        threadgroup_memory: Mapping[int, int] | None,
        debug: bool = False,
        buffer_sizes: Mapping[int, int] | None = None,
        extents: Mapping[int, tuple] | None = None,
        timeout: float | None = None,
    ) -> None:
        if any(g * t > _U32 for g, t in zip(groups, tptg)):
            raise KernelLaunchError(
                f"kernel '{self.name}': grid {groups} x {tptg} overflows 32-bit thread ids"
            )
        self._check_slots(set(buffers))
        params = {p.index: p for p in self.signature.buffer_params}
        for slot, addr in buffers.items():
            if not isinstance(addr, int) or addr <= 0:
                p = params[slot]
                raise KernelLaunchError(
                    f"kernel '{self.name}': parameter '{p.name}' [[buffer({slot})]] needs a non-null host "
                    f"address (int), got {addr!r}"
                )
        ext = dict(extents or {})
        for slot, size in (buffer_sizes or {}).items():
            if slot not in ext and slot in buffers:
                ext[slot] = (buffers[slot], buffers[slot] + int(size), 0)
        order = sorted(buffers)
        runner, debug_address, keep = self, 0, None
        if debug:
            from .debug import debug_info

            runner, keep = debug_info(self)
            debug_address = ctypes.addressof(keep)
        ms = _timeout_ms(timeout) if timeout is not None else _timeout_ms(timeout_from_env())
        head = runner._head(tptg, threadgroup_memory, None, 0, debug_address, timeout_ms=ms)
        table = [buffers.get(s, 0) for s in range(MAX_BUFFERS)]
        fields, blobs = extent_fields([ext.get(s, ANYWHERE) for s in order], len(order), LAUNCH_STRUCT_SIZE)
        slots = [ANYWHERE] * MAX_BUFFERS
        for i, s in enumerate(order):
            slots[s] = tuple(fields[3 * i:3 * i + 3])
        flat = [v for e in slots for v in e]
        runner._run(head + struct.pack("<" + _GROUPS + f"{MAX_BUFFERS}Q{3 * MAX_BUFFERS}Q", *groups, *grid, *table,
                                       *flat) + blobs, ms)
        del keep

    def _run(self, packet: bytes, timeout_ms: int = 0) -> None:
        err = ctypes.create_string_buffer(ERROR_CAPACITY)
        rc = self._library._runtime.enc_launch(packet, err, ERROR_CAPACITY)
        if rc != 0:
            raise _error(self.name, rc, err, None, timeout_ms)


class CpuLibrary:
    """MSL text compiled for the CPU: its kernels' signatures and the generated C++."""

    def __init__(self, msl: str, compiler: CompilerInfo, race_check: bool = False, ubsan: bool | None = None,
                 defines: tuple[str, ...] = (), checked: bool = True, offset_checks: list | tuple = (),
                 tile_checks: list | tuple = ()) -> None:
        from .toolchain import ubsan_requested

        self.msl = msl
        self.race_check = race_check
        self.checked = checked or race_check
        # int32 arithmetic feeding pointer offsets, computed with an overflow check (checked builds only)
        self.offset_checks = [list(c) for c in offset_checks] if self.checked else []
        # tile accesses of proven extent, checked once per tile (checked builds only; translate.apply_tile_checks)
        self.tile_checks = [list(c) for c in tile_checks] if self.checked else []
        self.ubsan = ubsan_requested() if ubsan is None else ubsan  # UBSan mode: see toolchain.kernel_flags
        self.defines = tuple(defines)  # -D macros of the compatibility headers (the probe tests' wrong twins)
        # fails here, not later, when the UBSan mode cannot be built
        self._flags = kernel_flags(compiler, self.ubsan) + tuple(f"-D{d}" for d in self.defines)
        self._race_lib: CpuLibrary | None | bool = None  # the debug build: None = not tried, False = failed
        self.compiler = compiler
        self._runtime = _Runtime.get(compiler)
        self._cpp: str | None = None
        mode = "race" if race_check else "checked" if self.checked else "plain"
        if self.offset_checks:
            mode += " offsets:" + dumps_plain(self.offset_checks)
        if self.tile_checks:
            mode += " tiles:" + dumps_plain(self.tile_checks)
        index = library_index_path(msl, compiler, mode, self.ubsan, self.defines)
        entry = read_library_index(index)
        try:  # built before: no translation (and no import of the translator)
            self.kernels: dict[str, KernelSignature] = {
                k[0]: KernelSignature(k[0], [KernelParam(*p) for p in k[2]], k[1]) for k in entry["kernels"]
            }
            self.uses_fibers = bool(entry["uses_fibers"])
            self.path, self.built = entry["so"], False
        except (TypeError, ValueError, IndexError, KeyError):  # no entry, or one this version cannot read
            self._build(index)
        self._lib = self._load(self.path)
        self._functions: dict[str, CpuFunction] = {}

    def _build(self, index: str) -> None:
        from .build import build_shared_library, write_library_index
        from .signature import parse_kernels
        from .translate import PRELUDE_END, needs_fibers, uses_tensor_ops

        self.kernels = parse_kernels(self.msl)
        if not self.kernels:
            raise CpuBackendError("the MSL text declares no `kernel void NAME(...)` function")
        self.uses_fibers = needs_fibers(self.msl)
        names = ", ".join(self.kernels)
        flags = self._flags
        if uses_tensor_ops(self.msl):  # matmul2d<descriptor, ...>: a class-type template argument
            flags = tuple("-std=c++20" if f == "-std=c++17" else f for f in flags)
        self.path, self.built = build_shared_library(
            self.cpp, self.compiler, flags, "kernel", f"MSL library ({names})", prelude_end=PRELUDE_END
        )
        kernels = [[k.name, k.line, [list(p) for p in k.params]] for k in self.kernels.values()]
        write_library_index(index, self.path, kernels, self.uses_fibers)

    @property
    def cpp(self) -> str:
        """The C++ translation unit compiled for this MSL (made on first use when loaded from the cache)."""
        if self._cpp is None:
            from .translate import translation_unit

            self._cpp = translation_unit(self.msl, self.kernels, self.race_check, self.ubsan, self.checked,
                                         self.offset_checks, self.tile_checks)
        return self._cpp

    def _load(self, path: str) -> ctypes.CDLL:
        lib = _open_library(path)
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
            # kernels without fibers: the per-group loop (runtime.cpp run_group, EncLaunch.use_fibers == 2)
            entry = "thread" if self.uses_fibers else "group"
            address = ctypes.cast(getattr(self._lib, f"enceladus_{entry}_{name}"), ctypes.c_void_p).value
            fn = self._functions[name] = CpuFunction(self, self.kernels[name], int(address or 0))
        return fn

    def take_unknown_address_line(self) -> int:
        """The MSL line of the first pointer made from an integer address outside every argument of the launches
        since the last call (0: none), then reset. Checked builds only (0 otherwise)."""
        reader = getattr(self._lib, "enceladus_take_unknown_address_line", None)
        if reader is None:
            return 0
        reader.restype = ctypes.c_uint
        return int(reader())

    def race_checked_function(self, name: str) -> CpuFunction | None:
        """Kernel ``name`` built with threadgroup-memory race tracking (debug mode), or None when that
        build fails for this MSL (a RuntimeWarning says why, once per library)."""
        if self.race_check:
            return self.function(name)
        if self._race_lib is None:
            if "threadgroup" not in self.msl:
                self._race_lib = False  # nothing to track
            else:
                try:
                    self._race_lib = CpuLibrary(self.msl, self.compiler, race_check=True, ubsan=self.ubsan,
                                                defines=self.defines, offset_checks=self.offset_checks,
                                                tile_checks=self.tile_checks)
                except CpuBackendError as exc:
                    from .debug import warn_no_race_check

                    self._race_lib = False
                    output = getattr(exc, "compiler_output", "") or str(exc)
                    errors = [ln for ln in output.splitlines() if "error" in ln]
                    warn_no_race_check(", ".join(self.kernels), errors[0] if errors else output)
        return self._race_lib.function(name) if self._race_lib else None

    def __repr__(self) -> str:
        return f"<CpuLibrary kernels={list(self.kernels)} at {self.path}>"


class CpuBackend:
    """Compiles MSL text for the CPU with a host C++ compiler (see docs/cpu_backend.md)."""

    name = "cpu"

    probe_on_compile = False  # run the device probes (runtime/probes.py) before compiling kernels: the wrong twins

    def __init__(self, cxx: str | None = None, defines: tuple[str, ...] = ()) -> None:
        self.compiler = find_compiler(cxx)
        self.defines = tuple(defines)

    def compile(self, msl: str, *, checked: bool | None = None, offset_checks: list | tuple = (),
                tile_checks: list | tuple = ()) -> CpuLibrary:
        """Build (or load from the cache) a shared library for this MSL text. ``checked`` (default: on unless
        ``ENCELADUS_CHECKS=0``): every device and threadgroup access is checked (see docs/cpu_backend.md);
        ``offset_checks`` (``metadata["offset_checks"]`` of a generated kernel): its int32 pointer-offset
        arithmetic reports overflow instead of wrapping, in checked builds; ``tile_checks``
        (``metadata["tile_checks"]``): tile accesses whose extent the compiler proved, checked once per tile."""
        if checked is None:
            checked = checks_enabled()
        return CpuLibrary(msl, self.compiler, defines=self.defines, checked=checked, offset_checks=offset_checks,
                          tile_checks=tile_checks)

    def probe_identity(self) -> str:
        """What probe results are cached under: the compiler and the header macros (runtime/probes.py)."""
        return f"cpu\n{self.compiler.identity}\n{' '.join(self.defines)}"

    def alloc(self, nbytes: int) -> CpuAllocation:
        """``nbytes`` of device memory: 16 KiB-aligned host memory (``address``, ``handle``, ``nbytes``)."""
        from .memory import CpuAllocation  # launches on NumPy arrays never allocate

        return CpuAllocation(nbytes)

    def new_queue(self) -> CpuQueue:
        """A new in-order launch queue (a worker thread), the backend half of ``enceladus.Stream``."""
        from .queue import CpuQueue  # not imported at startup (the queue module costs ~1 ms)

        return CpuQueue()

    def fiber_switch_ns(self, iterations: int = 1_000_000) -> float:
        """Measured cost of one fiber context switch, in nanoseconds."""
        return _Runtime.get(self.compiler).measure_switch_ns(iterations)
