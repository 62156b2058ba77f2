"""The launch fast path of ``@jit`` kernels: one key from the arguments' types, one dict lookup.

The first launch with a given combination of argument kinds goes through ``bind`` / ``specialize`` /
``compile_for`` and records a ``LaunchPlan``: where each buffer and scalar comes from among the
arguments, and the kernel's ``KernelLauncher``. Later launches whose *fast key* matches reuse it.
The fast key is finer than the specialization key (it records, per argument, everything
specialization looks at: dtype and 16-byte alignment of arrays; width, divisibility by 16 and
equality to 1 of ints; constexpr values), so a hit always denotes the kernel the slow path would
pick. A plan is only used while its kernel is still in ``JITFunction.cache`` (clearing the cache
clears the fast path). Anything unusual (torch tensors, NumPy scalars, invalid arrays, callable
grids) takes the slow path, which reports errors with full context.
"""

from __future__ import annotations

import itertools
import operator
import struct
from collections.abc import Sequence
from operator import attrgetter
from typing import Any

import numpy as np

from ..compiler.metal_limits import MAX_GRID
from . import arguments, stream
from .arguments import extent
from .launch import KernelLauncher
from .stream import _local
from .tensor import Tensor

_ADDRESS = attrgetter("_address")  # of a Tensor (map(_ADDRESS, arrays) runs in C)
_EXTENT = attrgetter("_extent")


class SlowPath(Exception):
    """This argument needs the full binding path."""


def arg_key(a: Any) -> Any:
    """What specialization can see of one runtime argument (raises SlowPath for unusual kinds)."""
    t = type(a)
    if t is Tensor:
        k = a._key
        if k is None:
            raise SlowPath
        return k
    if t is int:
        if -2147483648 <= a <= 2147483647:
            width = 0
        elif -(2**63) <= a < 2**63:
            width = 1
        elif 0 <= a < 2**64:
            width = 2
        else:
            raise SlowPath
        return (width, a & 15 == 0, a == 1)
    if t is float:
        return "f"
    if t is bool:
        return "b"
    if a is None:
        return "n"
    if t is np.ndarray:
        if not a.flags.aligned:
            raise SlowPath
        try:
            return ("A", arguments.array_spec(a, "", True))
        except (TypeError, ValueError):
            raise SlowPath from None
    raise SlowPath


_versions = itertools.count(1)


class KernelCache(dict):
    """``JITFunction.cache``: a dict that notes when it changes, so that a launch plan can tell its kernel is
    still the cached one without hashing the specialization key (a nested tuple: ~2 us with 16 arguments).

    ``version`` takes a new value *after* every change; a plan that verified its key at version ``v`` (read
    before the check) skips the check while the version is still ``v``."""

    __slots__ = ("version",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.version = next(_versions)

    def _changed(self) -> None:
        self.version = next(_versions)

    def __setitem__(self, key: Any, value: Any) -> None:
        dict.__setitem__(self, key, value)
        self._changed()

    def __delitem__(self, key: Any) -> None:
        dict.__delitem__(self, key)
        self._changed()

    def clear(self) -> None:
        dict.clear(self)
        self._changed()

    def pop(self, *args: Any) -> Any:
        try:
            return dict.pop(self, *args)
        finally:
            self._changed()

    def popitem(self) -> Any:
        try:
            return dict.popitem(self)
        finally:
            self._changed()

    def setdefault(self, key: Any, default: Any = None) -> Any:
        try:
            return dict.setdefault(self, key, default)
        finally:
            self._changed()

    def update(self, *args: Any, **kwargs: Any) -> None:
        try:
            dict.update(self, *args, **kwargs)
        finally:
            self._changed()

    def __ior__(self, other: Any) -> KernelCache:
        try:
            dict.update(self, other)
        finally:
            self._changed()
        return self

    def __reduce__(self) -> Any:
        return (KernelCache, (dict(self),))


_UNBUILT = object()  # LaunchPlan.pack before its first use
_NO_GRID = object()  # a plan's grid before its first fast launch (never `is` a grid a caller passes, None included)


_INT_PARTS: dict[int, Any] = {}  # arg_key of ints seen (looked up for exact ints only: 2.0 == 2 and True == 1)
_INT_PARTS_MAX = 4096


def _int_part(a: int) -> Any:
    part = arg_key(a)
    if len(_INT_PARTS) >= _INT_PARTS_MAX:
        _INT_PARTS.clear()
    _INT_PARTS[a] = part
    return part


def _slow() -> Any:
    raise SlowPath


_KEY_FUNCTIONS: dict[tuple[bool, ...], Any] = {}  # constexpr flags of the positional arguments -> key function


def key_function(cflags: tuple[bool, ...]) -> Any:
    """``f(args) -> tuple``: the positional part of the fast key for ``len(cflags)`` positional arguments
    (``cflags[i]``: whether parameter ``i`` is a constexpr), the same key as ``positional_key``. Compiled from
    text once per pattern of flags: one expression per argument and no loop, with Tensors and ints inlined
    (an int's part comes from a table of the values already seen; ``2.0 == 2`` and ``True == 1``, so only exact
    ints look there); anything else goes through ``arg_key``, which raises SlowPath for unusual kinds."""
    fn = _KEY_FUNCTIONS.get(cflags)
    if fn is not None:
        return fn
    names = [f"a{i}" for i in range(len(cflags))]
    parts = []
    for a, c in zip(names, cflags):
        if c:
            parts.append(f"({a}.__class__, {a})")
        else:
            parts.append(f"(({a}._key or _slow()) if {a}.__class__ is Tensor else "
                         f"(_ints.get({a}) or _int_part({a})) if {a}.__class__ is int else arg_key({a}))")
    unpack = f"    {', '.join(names)}, = args\n" if names else ""
    text = f"def key(args):\n{unpack}    return ({''.join(p + ', ' for p in parts)})\n"
    namespace = {"Tensor": Tensor, "_ints": _INT_PARTS, "_int_part": _int_part, "arg_key": arg_key, "_slow": _slow}
    exec(compile(text, f"<enceladus fast key {len(cflags)}>", "exec"), namespace)  # noqa: S102 - our own text
    fn = _KEY_FUNCTIONS[cflags] = namespace["key"]
    return fn


def positional_key(args: tuple, cflags: tuple) -> list:
    """``arg_key`` of each positional argument (``(class, value)`` for constexprs): the key ``key_function``
    computes, one argument at a time (a first launch's key, before that function is compiled)."""
    return [(a.__class__, a) if c else arg_key(a) for a, c in zip(args, cflags)]


def packer(launcher: KernelLauncher, buffer_index: tuple[int, ...], scalar_index: tuple[int, ...]) -> Any:
    """``f(vals, grid3, gsize) -> packet`` for launches whose buffers are all Tensors, or None when the backend
    packs otherwise. The backend's ``flat_packer()`` gives the packet's constant head and the packing function
    of the rest (groups, grid size, addresses, each extent's three fields, scalars); this compiles, once per
    launch plan, one call that reads them straight from the arguments (``vals[i]._address``,
    ``*vals[i]._extent``). A strided Tensor's extent has five items and a scalar out of its type's range does
    not pack: both raise ``struct.error``/``OverflowError``, and the caller takes ``KernelLauncher.packet``."""
    flat = getattr(launcher.fast, "flat_packer", None) if launcher.checked else None
    if flat is None:
        return None
    head, pack = flat()
    fields = [f"v[{i}]._address" for i in buffer_index] + [f"*v[{i}]._extent" for i in buffer_index] + \
        [f"v[{i}]" for i in scalar_index]
    text = f"def pack(v, grid3, gsize):\n    return HEAD + PACK(*grid3, *gsize, {', '.join(fields)})\n"
    namespace = {"HEAD": head, "PACK": pack}
    exec(compile(text, f"<enceladus packer {launcher.name}>", "exec"), namespace)  # noqa: S102 - our own text
    return namespace["pack"]


def _taker(index: tuple[int, ...]) -> Any:
    """``lambda vals: [vals[i] for i in index]`` as a sequence, without a Python loop per launch."""
    if len(index) >= 2:
        return operator.itemgetter(*index)
    if index:
        i = index[0]
        return lambda vals: (vals[i],)
    return lambda vals: ()


class LaunchPlan:
    """How to launch one kernel from positional/keyword arguments of one fast key."""

    __slots__ = ("spec_key", "kernel", "launcher", "nargs", "tail", "buffer_index", "scalar_index",
                 "numpy_writes", "asynchronous", "names", "guard", "cache", "version", "grid", "grid3", "gsize",
                 "take_buffers", "take_scalars", "tail_used", "pack")

    def __init__(self, spec_key: Any, launcher: KernelLauncher, names: Sequence[str], defaults: Sequence[Any],
                 nargs: int, values: Sequence[Any], guard: Any = None) -> None:
        self.spec_key = spec_key
        self.cache: Any = None  # the KernelCache and its version at which spec_key last mapped to kernel
        self.version = 0
        self.grid: Any = _NO_GRID  # the last grid tuple seen valid, and its 3-D form (tuples of ints are immutable)
        self.grid3: Any = None
        self.gsize: Any = None  # grid3 in threads along x (the packet's grid size)
        self.guard = guard  # runtime/guards.KernelGuard: the globals the kernel was compiled with, or None
        self.launcher = launcher
        self.kernel = launcher.kernel
        self.nargs = nargs
        self.names = tuple(names)
        self.tail = tuple(zip(names[nargs:], defaults[nargs:]))
        position = {n: i for i, n in enumerate(names)}
        self.buffer_index = tuple(position[n] for n in launcher.buffer_names)
        self.scalar_index = tuple(position[n] for n in launcher.scalar_names)
        self.numpy_writes = tuple(i for i, w in zip(self.buffer_index, launcher.buffer_writes)
                                  if w and type(values[i]) is np.ndarray)
        self.asynchronous = all(type(values[i]) is Tensor for i in self.buffer_index)
        self.take_buffers = _taker(self.buffer_index)  # the launch's buffers / scalars from its arguments, in C
        self.take_scalars = _taker(self.scalar_index)
        # whether a buffer or scalar comes from the parameters after the positional ones (keyword arguments or
        # defaults); when none does (constexprs passed by keyword), a launch reads them from ``args`` as they are
        self.tail_used = any(i >= nargs for i in self.buffer_index + self.scalar_index)
        # compiled on the plan's first use (a process that launches once pays no compile), None for other launches
        self.pack: Any = _UNBUILT if self.asynchronous else None

    def current(self, cache: Any) -> bool:
        """Whether ``cache`` still maps this plan's specialization key to its kernel."""
        if cache is self.cache and cache.version == self.version:
            return True
        version = getattr(cache, "version", None)  # read before the check (KernelCache bumps it after a change)
        if cache.get(self.spec_key) is not self.kernel:
            return False
        if version is not None:
            self.cache, self.version = cache, version
        return True

    def run(self, args: tuple, kwargs: dict[str, Any], grid: Any) -> None:
        """Launch (queued when every array is a Tensor, else synchronously)."""
        if self.tail_used:
            vals = list(args)
            for name, default in self.tail:
                vals.append(kwargs.get(name, default))
        else:
            vals = args
        if grid is self.grid:
            grid3, gsize = self.grid3, self.gsize
        elif type(grid) is tuple and 1 <= len(grid) <= 3 and \
                all(type(g) is int and 0 <= g <= MAX_GRID for g in grid):
            grid3 = grid if len(grid) == 3 else (grid + (1, 1))[:3]
            gsize = (grid3[0] * self.launcher.tptg, grid3[1], grid3[2])
            self.grid, self.grid3, self.gsize = grid, grid3, gsize
        else:
            from .jit import resolve_grid

            if self.tail and not self.tail_used:  # a callable grid receives every bound argument
                vals = list(args)
                for name, default in self.tail:
                    vals.append(kwargs.get(name, default))
            grid3 = resolve_grid(grid, dict(zip(self.names, vals)))
            gsize = (grid3[0] * self.launcher.tptg, grid3[1], grid3[2])
        if 0 in grid3:
            return
        for i in self.numpy_writes:
            if not vals[i].flags.writeable:
                raise ValueError(f"argument '{self.names[i]}' is a read-only array, but kernel '{self.kernel.name}' "
                                 "stores through it; pass a writeable array (e.g. arr.copy())")
        launcher = self.launcher
        if self.asynchronous:  # every array a Tensor: queued on the current stream (packing errors take packet())
            packet = None
            pack = self.pack
            if pack is _UNBUILT:
                pack = self.pack = packer(launcher, self.buffer_index, self.scalar_index)
            if pack is not None:
                try:
                    packet = pack(vals, grid3, gsize)
                except (struct.error, OverflowError):
                    packet = None
            if packet is None:
                arrays = self.take_buffers(vals)
                packet = launcher.packet(grid3, list(map(_ADDRESS, arrays)), self.take_scalars(vals),
                                         list(map(_EXTENT, arrays)) if launcher.checked else None)
            stack = _local.stack
            queue = (stack[-1] if stack else (stream._default or stream.default_stream()))._queue
            if queue.error is not None:
                raise queue.take_error()  # type: ignore[misc]
            queue.submit(launcher.fast.run, packet, (args, kwargs))
        else:
            arrays = [vals[i] for i in self.buffer_index]
            addresses = [a._address if type(a) is Tensor else int(a.__array_interface__["data"][0]) for a in arrays]
            extents = [a._extent if type(a) is Tensor else extent(a) for a in arrays] if launcher.checked else None
            launcher.submit(grid3, addresses, [vals[i] for i in self.scalar_index], arrays, False, extents)
