"""Launching a compiled kernel on the current backend: binding buffers, packing scalars, streams.

Launches whose array arguments are all ``enceladus.Tensor`` are queued on the current stream and
return at once; any other array (NumPy, torch CPU) makes the launch synchronous: it waits for every
stream, runs on the calling thread, and its results are in the arrays on return.
"""

from __future__ import annotations

import os
import struct
from typing import Any

import numpy as np

from ..compiler.kernel import CompiledKernel
from ..compiler.metal_limits import MAX_GRID as U32
from ..errors import LaunchError
from . import arguments, devicelog
from .backend import get_backend
from .stream import current_stream, existing_stream, wait_all_idle
from .tensor import Tensor

_PACK = {"int1": "B", "int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint8": "B", "uint16": "H",
         "uint32": "I", "uint64": "Q", "fp32": "f"}


def build_program(backend: Any, kernel: CompiledKernel) -> Any:
    """The backend's program for a compiled kernel. The cpu backend also gets the kernel's int32 pointer-offset
    arithmetic (``metadata["offset_checks"]``), which its checked builds compute with an overflow check, and its
    tile accesses of proven extent (``metadata["tile_checks"]``), which they check once per tile."""
    checks = kernel.metadata.get("offset_checks")
    tiles = kernel.metadata.get("tile_checks")
    if (checks or tiles) and getattr(backend, "name", "") == "cpu":
        return backend.compile(kernel.asm["msl"], offset_checks=checks or (),
                               tile_checks=tiles or ()).function(kernel.abi.kernel_name)
    return backend.compile(kernel.asm["msl"]).function(kernel.abi.kernel_name)


_ENVIRON = os.environ
# os.environ keeps the process environment in a dict of encoded keys and values (``_data``; POSIX): reading it
# directly saves the Mapping.get -> __getitem__ -> encode/decode round trip (~1 us) on every launch. It is the
# same dict os.environ[...] = / del / putenv-through-os.environ update, so nothing is cached.
_ENV_DATA = getattr(_ENVIRON, "_data", None)
_DEBUG_KEY: Any = None
_DEBUG_OFF: tuple = ()
if isinstance(_ENV_DATA, dict):
    try:
        _DEBUG_KEY = _ENVIRON.encodekey("ENCELADUS_DEBUG")  # type: ignore[attr-defined]
        _DEBUG_OFF = tuple(_ENVIRON.encodevalue(v) for v in ("", "0", "false", "False"))  # type: ignore[attr-defined]
    except (AttributeError, TypeError):
        _DEBUG_KEY = None
# the raw values of ENCELADUS_DEBUG that leave debug mode off, unset (None) included: the launch fast path tests
# ``_ENV_DATA.get(_DEBUG_KEY) in DEBUG_OFF_RAW`` inline (jit.py) while ``os.environ is _ENVIRON``
DEBUG_OFF_RAW = (None, *_DEBUG_OFF)


def debug_enabled() -> bool:
    """``ENCELADUS_DEBUG=1``: every launch checks out-of-bounds accesses and threadgroup-memory races."""
    if _DEBUG_KEY is not None and os.environ is _ENVIRON:
        v = _ENV_DATA.get(_DEBUG_KEY)  # type: ignore[union-attr]
        return v is not None and v not in _DEBUG_OFF
    return os.environ.get("ENCELADUS_DEBUG", "0") not in ("", "0", "false", "False")


FP32_MAX = 3.4028234663852886e38
_FP32 = struct.Struct("<f")


def scalar_range(tname: str) -> tuple[int, int]:
    """The ints a scalar parameter of type ``tname`` accepts: its signed range, plus the unsigned range for
    unsigned types (negative values wrap, as in C)."""
    bits = 8 * struct.calcsize("<" + _PACK[tname])
    low = -(1 << (bits - 1))
    return low, (1 << bits) - 1 if _PACK[tname].isupper() else (1 << (bits - 1)) - 1


def _check_scalar(kernel: CompiledKernel, name: str, tname: str, v: Any) -> Any:
    """``v`` converted for packing as ``tname``; an OverflowError naming the argument, its value and the
    allowed range when it does not fit."""
    if tname == "fp32":
        f = float(v)
        try:
            _FP32.pack(f)
        except OverflowError:  # finite, but rounds past fp32's largest value
            raise OverflowError(
                f"kernel '{kernel.name}': argument '{name}' = {v!r} is outside the range of fp32 "
                f"[-{FP32_MAX:.8g}, {FP32_MAX:.8g}]; scale it down, or pass float('inf') if infinity is meant") from None
        return f
    if tname == "int1":
        return 1 if v else 0
    i = int(v)
    low, high = scalar_range(tname)
    if not low <= i <= high:
        wraps = f" (negative values down to {low} wrap)" if low < 0 and tname.startswith("u") else ""
        raise OverflowError(
            f"kernel '{kernel.name}': argument '{name}' = {i} is outside the range of {tname} "
            f"[{max(low, 0) if wraps else low}, {high}]{wraps}; pass a value in range, or annotate the parameter "
            "with a wider type (e.g. tl.int64)")
    if _PACK[tname].isupper() and i < 0:
        i &= (1 << (8 * struct.calcsize(_PACK[tname]))) - 1
    return i


def pack_scalars(kernel: CompiledKernel, values: dict[str, Any]) -> bytes:
    """The kernel's scalar arguments packed into its argument buffer (OverflowError for values out of range)."""
    abi = kernel.abi
    buf = bytearray(abi.args_size)
    for name, offset, tname in abi.args_format:
        struct.pack_into("<" + _PACK[tname], buf, offset, _check_scalar(kernel, name, tname, values[name]))
    return bytes(buf)


def _scalar_format(kernel: CompiledKernel) -> str:
    """The struct format (explicit padding, no byte-order prefix) of the kernel's packed scalar arguments."""
    abi = kernel.abi
    fmt, pos = [], 0
    for _, offset, tname in sorted(abi.args_format, key=lambda f: f[1]):
        if offset > pos:
            fmt.append(f"{offset - pos}x")
        fmt.append(_PACK[tname])
        pos = offset + struct.calcsize("<" + _PACK[tname])
    if abi.args_size > pos:
        fmt.append(f"{abi.args_size - pos}x")
    return "".join(fmt)


class KernelLauncher:
    """Everything about launching one compiled kernel that does not change between launches."""

    __slots__ = ("kernel", "program", "buffer_names", "buffer_writes", "scalar_names", "tptg", "fast", "name",
                 "backend", "run_host", "checked", "_timed", "_pack_parts")

    def __init__(self, kernel: CompiledKernel) -> None:
        backend = get_backend()
        if kernel.program is None or kernel.__dict__.get("_enceladus_backend", backend) is not backend:
            kernel.program = build_program(backend, kernel)
            kernel.__dict__["_enceladus_backend"] = backend
        self.backend = backend
        abi = kernel.abi
        self.kernel = kernel
        self.name = kernel.name
        self.program = kernel.program
        params = sorted(abi.buffer_params, key=lambda p: p.slot)
        self.buffer_names = tuple(p.name for p in params)
        self.buffer_writes = tuple(p.writes for p in params)
        self.scalar_names = tuple(name for name, _, _ in sorted(abi.args_format, key=lambda f: f[1]))
        self.tptg = abi.threads_per_threadgroup
        self.fast = self.program.launcher([p.slot for p in params], (self.tptg, 1, 1), abi.args_slot,
                                          _scalar_format(kernel) if abi.args_slot is not None else "")
        # Backends that bind host memory themselves (metal) take the arrays of synchronous launches.
        self.run_host = getattr(self.fast, "run_host", None)
        if kernel.metadata.get("msl_bounds_checks") and hasattr(self.fast, "extents_index"):
            # metal: the launcher rewrites the extents buffer's host spans as GPU addresses before binding it
            self.fast.extents_index = self.buffer_names.index(devicelog.EXT_PARAM) \
                if devicelog.EXT_PARAM in self.buffer_names else None
        if kernel.metadata.get("int_pointers") and hasattr(self.fast, "integer_addresses"):
            self.fast.integer_addresses = True  # metal: buffers given out by Tensor.device_address() made resident
        # The cpu backend checks every access against the arguments' extents and names the kernel line.
        self.checked = hasattr(self.fast, "line_table")
        if self.checked:
            self.fast.line_table = LineTable(kernel)
        self._timed: dict[float, Any] = {}
        self._pack_parts = getattr(self.fast, "pack_parts", None) if self.checked else None

    def packet(self, grid: tuple[int, int, int], addresses: list[int], scalars: list[Any], extents: Any = None,
               fast: Any = None) -> Any:
        """The backend packet for one launch (raises LaunchError for grids the hardware cannot run)."""
        gsize = (grid[0] * self.tptg, grid[1], grid[2])
        fast = fast or self.fast
        try:
            if self.checked:
                return fast.pack(grid, gsize, *addresses, *scalars, extents=extents)
            return fast.pack(grid, gsize, *addresses, *scalars)
        except (struct.error, OverflowError):  # OverflowError: a float beyond fp32's range
            if gsize[0] > U32:
                raise LaunchError(f"kernel '{self.name}': grid {grid} x {self.tptg} threads per threadgroup "
                                  "overflows 32-bit thread ids; use fewer threadgroups or a larger BLOCK") from None
            # Scalars outside the packed type's range: negative unsigned ints wrap; anything that does not
            # fit raises an OverflowError naming the argument (pack_scalars).
            fixed = struct.unpack("<" + _scalar_format(self.kernel),
                                  pack_scalars(self.kernel, dict(zip(self.scalar_names, scalars))))
            if self.checked:
                return fast.pack(grid, gsize, *addresses, *fixed, extents=extents)
            return fast.pack(grid, gsize, *addresses, *fixed)

    def submit(self, grid: tuple[int, int, int], addresses: list[int], scalars: list[Any], keepalive: Any,
               asynchronous: bool, extents: Any = None, timeout: float | None = None) -> None:
        """Queue the launch on the current stream, or run it now (after waiting for every stream).

        For synchronous launches ``keepalive`` is the list of array arguments in slot order. ``extents``: what
        each buffer may touch (cpu access checks); ``timeout``: seconds before the launch is stopped."""
        fast = self.fast
        if timeout is not None:
            if not hasattr(fast, "with_timeout"):
                raise ValueError(f"kernel '{self.name}': timeout= is supported by the cpu backend only")
            fast = self._timed.get(timeout)
            if fast is None:
                fast = self._timed[timeout] = self.fast.with_timeout(timeout)
        packet = self.packet(grid, addresses, scalars, extents, fast)
        if asynchronous:
            queue = current_stream()._queue
            if queue.error is not None:
                raise queue.take_error()  # type: ignore[misc]
            queue.submit(fast.run, packet, keepalive)
            return
        wait_all_idle()
        if self.run_host is not None:
            queue = current_stream()._queue
            if queue.error is not None:
                raise queue.take_error()  # type: ignore[misc]
            self.run_host(packet, keepalive, queue)
            return
        stream = existing_stream()  # a synchronous launch on the calling thread starts no stream worker
        if stream is not None and stream._queue.error is not None:
            raise stream._queue.take_error()  # type: ignore[misc]
        fast.run(packet)

    def debug_launch(self, grid: tuple[int, int, int], arrays: list[Any], scalars: list[Any],
                     timeout: float | None = None, arg_extents: list[Any] | None = None) -> None:
        """Run synchronously with the access checks plus threadgroup-memory race tracking (nothing is copied).
        ``arg_extents``: each array's extent when the caller widened some (16-bit atomics), else from the arrays."""
        wait_all_idle()
        abi = self.kernel.abi
        buffers, extents = {}, {}
        keep = []
        params = sorted(abi.buffer_params, key=lambda p: p.slot)
        for i, (p, a) in enumerate(zip(params, arrays)):
            arr = arguments.as_numpy(a)
            buffers[p.slot] = int(arr.__array_interface__["data"][0])
            extents[p.slot] = arg_extents[i] if arg_extents is not None else (
                a._extent if type(a) is Tensor else arguments.extent(arr))
        if abi.args_slot is not None:
            raw = np.frombuffer(pack_scalars(self.kernel, dict(zip(self.scalar_names, scalars))), np.uint8).copy()
            keep.append(raw)
            buffers[abi.args_slot] = raw.ctypes.data
            extents[abi.args_slot] = (raw.ctypes.data, raw.ctypes.data + abi.args_size, 1)
        try:
            self.program.launch(grid, (self.tptg, 1, 1), buffers, debug=True, extents=extents, timeout=timeout)
        except LaunchError as exc:
            raise type(exc)(self.fast.line_table.annotate(str(exc))) from None


class LineTable:
    """MSL line -> "line N of file.py: source" for a generated kernel (``metadata["line_table"]``), so that
    errors of the cpu backend's checks name the Python line. Built on first use."""

    def __init__(self, kernel: CompiledKernel) -> None:
        self.kernel = kernel
        self._map: dict[int, str] | None = None

    def _build(self) -> dict[int, str]:
        import linecache

        out: dict[int, str] = {}
        table = self.kernel.metadata.get("line_table") or {}
        filename = table.get("file", "")
        for msl_line, py_line in table.get("lines", []):
            text = linecache.getline(filename, py_line).strip() if filename else ""
            out[msl_line] = f"line {py_line} of {filename}" + (f": {text}" if text else "")
        return out

    def get(self, line: int, default: Any = None) -> Any:
        if self._map is None:
            self._map = self._build()
        return self._map.get(line, default)

    def near(self, line: int) -> Any:
        """The kernel line of MSL line ``line``, else of the closest mapped MSL line before it (a barrier or helper
        line the compiler added for the op written there), or None."""
        if self._map is None:
            self._map = self._build()
        before = [k for k in self._map if k <= line]
        return self._map[max(before)] if before else None

    def annotate(self, message: str) -> str:
        """A message of the cpu backend with its MSL lines turned into kernel lines: a trailing '(MSL line N)'
        (access checks) and every 'at line N' of a barrier report (deadlocks, divergent barriers)."""
        import re

        def barrier_line(b: re.Match) -> str:
            near = self.near(int(b.group(1)))
            return f"at MSL line {b.group(1)} (from {near})" if near else b.group(0)

        message = re.sub(r"\bat line (\d+)(?! of )", barrier_line, message)
        m = re.search(r" \(MSL line (\d+)\)$", message)
        where = self.get(int(m.group(1))) if m else None
        return message[:m.start()] + f"\n  at {where} (MSL line {m.group(1)})" if where else message


def byte_span(arr: np.ndarray) -> tuple[int, int]:
    """The first and one-past-last byte address an array's elements occupy."""
    base = int(arr.__array_interface__["data"][0])
    if arr.size == 0:
        return base, base + 1
    lo = base + sum((n - 1) * s for n, s in zip(arr.shape, arr.strides) if s < 0)
    hi = base + sum((n - 1) * s for n, s in zip(arr.shape, arr.strides) if s > 0) + arr.itemsize
    return lo, hi


def launcher_for(kernel: CompiledKernel) -> KernelLauncher:
    """The cached KernelLauncher of a compiled kernel (built, with its backend program, on first use)."""
    kl = kernel.__dict__.get("_enceladus_launcher")
    if kl is None or kl.backend is not get_backend():
        kl = kernel.__dict__["_enceladus_launcher"] = KernelLauncher(kernel)
    return kl


def launch(kernel: CompiledKernel, grid: tuple[int, int, int], values: dict[str, Any], *,
           debug: bool = False, timeout: float | None = None) -> None:
    """Run ``kernel`` over ``grid`` on the current backend: queued when every array argument is an
    ``enceladus.Tensor``, else synchronously (NumPy arguments hold the results on return)."""
    if 0 in grid:
        return
    if any(arguments.is_torch_mps(values[p.name]) for p in kernel.abi.buffer_params if p.name in values):
        if kernel.metadata.get("int_pointers"):
            raise LaunchError(f"kernel '{kernel.name}' makes pointers from integer addresses, and PyTorch launches "
                              "mps tensors itself, so it cannot make the buffers those addresses point into resident "
                              "(and an mps tensor's data_ptr() is not a GPU address); pass enceladus.Tensors and build "
                              "the address table from their device_address() values")
        _launch_torch_mps(kernel, grid, values)
        return
    log = None
    if devicelog.uses_log(kernel):  # device_print / device_assert: a log the host reads after the launch
        log = devicelog.new_log()
        values = {**values, devicelog.LOG_PARAM: log}
    bounds = None
    if kernel.metadata.get("msl_bounds_checks") and devicelog.EXT_PARAM in {p.name for p in kernel.abi.buffer_params}:
        bounds = values[devicelog.EXT_PARAM] = devicelog.new_extents(kernel)  # filled once the arrays are bound
    kl = launcher_for(kernel)
    arrays = [values[name] for name in kl.buffer_names]
    addresses, extents = [], []
    word = kernel.metadata.get("word_atomics") or ()
    copied_back: list[tuple[np.ndarray, np.ndarray]] = []  # (argument, padded copy) of 16-bit atomics' buffers
    for i, (name, a, writes) in enumerate(zip(kl.buffer_names, arrays, kl.buffer_writes)):
        arr = arguments.as_numpy(a)
        if writes and not arr.flags.writeable:
            raise ValueError(f"argument '{name}' is a read-only array, but kernel '{kernel.name}' stores through it; "
                             "pass a writeable array (e.g. arr.copy())")
        if not arr.flags.aligned:
            raise ValueError(f"argument '{name}' is not aligned to its element size; pass np.ascontiguousarray(x)")
        if name in word and type(a) is not Tensor:  # Tensor allocations are padded to whole words already
            arr, original = arguments.word_padded(arr)
            if original is not None:
                arrays[i] = arr
                copied_back.append((original, arr))
        ext = a._extent if type(a) is Tensor else arguments.extent(arr)
        extents.append(arguments.word_extent(ext) if name in word else ext)
        addresses.append(int(arr.__array_interface__["data"][0]))
    if bounds is not None:  # each pointer argument's [first, one-past-last) byte, for the MSL's bounds checks
        devicelog.fill_extents(bounds, [byte_span(arguments.as_numpy(a)) for name, a in zip(kl.buffer_names, arrays)
                                        if not name.startswith("__enc_")])
    scalars = [values[name] for name in kl.scalar_names]
    int_pointers = kernel.metadata.get("int_pointers", False)
    if kernel.metadata.get("sys_scope", False) and getattr(kl.backend, "name", "") == "metal":
        raise LaunchError(f"kernel '{kernel.name}' has atomics with scope='sys' (ordering visible to the CPU and "
                          "other devices while the kernel runs), which Metal cannot give: its fences reach at most "
                          "every thread of the device (thread_scope_device); use scope='gpu' (the default) and read "
                          "the results on the host after the launch, or run it on the cpu backend "
                          "(ENCELADUS_BACKEND=cpu), where the device is the host")
    try:
        if (debug or debug_enabled()) and not (bounds is not None and getattr(kl.fast, "extents_index", None)):
            kl.debug_launch(grid, arrays, scalars, timeout, extents)
        else:  # (kernels that make pointers from integers run synchronously: see _warn_unknown_addresses)
            kl.submit(grid, addresses, scalars, arrays, log is None and not int_pointers and
                      all(type(a) is Tensor for a in arrays), extents if kl.checked else None, timeout)
    finally:
        for original, copy in copied_back:  # a launch on NumPy arrays is synchronous: it has finished
            original[...] = copy
        if int_pointers:
            _warn_unknown_addresses(kl)
    if log is not None:
        devicelog.report(kernel, log, extents=bounds)


_WARNED_ADDRESSES: set[tuple[str, str]] = set()


def _warn_unknown_addresses(kl: KernelLauncher) -> None:
    warn_unknown_addresses(kl.name, kl.program, getattr(kl.fast, "line_table", None))


def warn_unknown_addresses(name: str, program: Any, line_table: Any = None, stacklevel: int = 6) -> None:
    """One warning per kernel line whose pointer, made from an integer, pointed outside every argument of the
    launch and every live enceladus.Tensor (the cpu backend's checked builds note it; such accesses are not
    checked). ``program``: the backend's function (``take_unknown_address_line``); ``line_table``: MSL line ->
    kernel line, for generated kernels."""
    take = getattr(program, "take_unknown_address_line", None)
    line = take() if take is not None else 0
    if not line:
        return
    where = (line_table.get(line) if line_table is not None else None) or f"MSL line {line}"
    if (name, where) in _WARNED_ADDRESSES:
        return
    _WARNED_ADDRESSES.add((name, where))
    import warnings

    warnings.warn(f"kernel '{name}' at {where}: a pointer made from an integer address points into memory "
                  "Enceladus does not know (no argument of this launch or live enceladus.Tensor holds it), so its "
                  "accesses are not checked; pass the arrays the addresses point into as arguments too, or keep "
                  "the data in enceladus.Tensors, to have them checked", RuntimeWarning, stacklevel=stacklevel)


def _launch_torch_mps(kernel: CompiledKernel, grid: tuple[int, int, int], values: dict[str, Any]) -> None:
    """PyTorch mps tensors: launched by PyTorch itself (torch.mps.compile_shader), on its own stream."""
    from ..backends.metal.interop import launch_torch_mps

    abi = kernel.abi
    tensors = [values[p.name] for p in sorted(abi.buffer_params, key=lambda p: p.slot)]
    scalars = [values[name] for name, _, _ in sorted(abi.args_format, key=lambda f: f[1])]
    launch_torch_mps(kernel.asm["msl"], abi.kernel_name, grid, abi.threads_per_threadgroup, tensors, scalars)
