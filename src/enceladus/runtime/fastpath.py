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

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..compiler.metal_limits import MAX_GRID
from . import arguments
from .arguments import extent
from .launch import KernelLauncher
from .tensor import Tensor


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


class LaunchPlan:
    """How to launch one kernel from positional/keyword arguments of one fast key."""

    __slots__ = ("spec_key", "kernel", "launcher", "nargs", "tail", "buffer_index", "scalar_index",
                 "numpy_writes", "asynchronous", "names", "guard")

    def __init__(self, spec_key: Any, launcher: KernelLauncher, names: Sequence[str], defaults: Sequence[Any],
                 nargs: int, values: Sequence[Any], guard: Any = None) -> None:
        self.spec_key = spec_key
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

    def run(self, args: tuple, kwargs: dict[str, Any], grid: Any) -> None:
        """Launch (queued when every array is a Tensor, else synchronously)."""
        if self.tail:
            vals = list(args)
            for name, default in self.tail:
                vals.append(kwargs.get(name, default))
        else:
            vals = args
        if type(grid) is tuple and 1 <= len(grid) <= 3 and all(type(g) is int and 0 <= g <= MAX_GRID for g in grid):
            grid3 = grid if len(grid) == 3 else (grid + (1, 1))[:3]
        else:
            from .jit import resolve_grid

            grid3 = resolve_grid(grid, dict(zip(self.names, vals)))
        if 0 in grid3:
            return
        for i in self.numpy_writes:
            if not vals[i].flags.writeable:
                raise ValueError(f"argument '{self.names[i]}' is a read-only array, but kernel '{self.kernel.name}' "
                                 "stores through it; pass a writeable array (e.g. arr.copy())")
        launcher = self.launcher
        if self.asynchronous:
            arrays = [vals[i] for i in self.buffer_index]
            addresses = [a._address for a in arrays]
            launcher.submit(grid3, addresses, [vals[i] for i in self.scalar_index], (args, kwargs), True,
                            [a._extent for a in arrays] if launcher.checked else None)
        else:
            arrays = [vals[i] for i in self.buffer_index]
            addresses = [a._address if type(a) is Tensor else int(a.__array_interface__["data"][0]) for a in arrays]
            extents = [a._extent if type(a) is Tensor else extent(a) for a in arrays] if launcher.checked else None
            launcher.submit(grid3, addresses, [vals[i] for i in self.scalar_index], arrays, False, extents)
