"""The running launch: which programs are executing, the undo log, and the interpreter's errors."""

from __future__ import annotations

import linecache
import os
import sys
import threading
from dataclasses import dataclass, field
from types import CodeType
from typing import Any

import numpy as np

from ..errors import LaunchError


class InterpreterError(LaunchError):
    """A kernel failed while the interpreter ran it (bad access, failed device_assert...)."""


class InterpreterTypeError(InterpreterError, TypeError):
    """A TypeError raised by a kernel's code while the interpreter ran it (a TritonError too, as in Triton)."""


class InterpreterValueError(InterpreterError, ValueError):
    """A ValueError raised by a kernel's code while the interpreter ran it."""


class OutOfBoundsError(InterpreterError, IndexError):
    """A load, store or atomic under a true mask reached outside its argument's allocation."""


class OffsetOverflowError(InterpreterError, OverflowError):
    """A pointer offset was computed with int32 arithmetic that wrapped (see ``tensor.Wrap``)."""


class DeviceAssertionError(InterpreterError, AssertionError):
    """``tl.device_assert`` found a false element."""


@dataclass
class Launch:
    """State of one interpreted launch, read by the builtins."""

    kernel: str
    grid: tuple[int, int, int]
    codes: set[CodeType] = field(default_factory=set)  # code objects of the kernel and its callees
    lins: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))  # linear ids of running programs
    pids: tuple[np.ndarray, np.ndarray, np.ndarray] = ()  # type: ignore[assignment]
    log: list[tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None  # (flat buffer, indices, old values)
    max_tile_elems: int = 1
    static_printed: set[tuple[str, int]] = field(default_factory=set)
    rebinder: Any = None  # turns @jit callees into interpreted functions
    debug: bool = False  # debug mode: `assert` statements are checked (Triton's debug=True)
    buffers: list = field(default_factory=list)  # the array arguments' memory.Buffers (integer addresses map to them)
    run_msl: Any = None  # the runtime's runner of one MSL expression over arrays (tl.inline_asm_elementwise)

    def set_programs(self, lins: np.ndarray) -> None:
        """Run the programs with these linear ids (x fastest) as one batch."""
        g0, g1, _ = self.grid
        self.lins = lins
        ids = (lins % g0, (lins // g0) % g1, lins // (g0 * g1))
        self.pids = tuple(_compact(a.astype(np.int32)) for a in ids)  # type: ignore[assignment]

    @property
    def batch(self) -> int:
        return len(self.lins)

    def program(self, b: int) -> tuple[int, int, int]:
        """The (x, y, z) program id of the batch's ``b``-th program."""
        lin = int(self.lins[b if len(self.lins) > 1 else 0])
        g0, g1, _ = self.grid
        return lin % g0, (lin // g0) % g1, lin // (g0 * g1)


def _compact(a: np.ndarray) -> np.ndarray:
    return a[:1] if len(a) > 1 and (a == a[0]).all() else a


_local = threading.local()


def current() -> Launch:
    """The launch being interpreted on this thread."""
    launch = getattr(_local, "launch", None)
    if launch is None:
        raise RuntimeError("tile-language builtins run only inside a kernel launched with the interpreter")
    return launch


def activate(launch: Launch | None) -> Launch | None:
    previous = getattr(_local, "launch", None)
    _local.launch = launch
    return previous


def kernel_location() -> tuple[str, int, str] | None:
    """(file, line, source) of the innermost kernel or callee frame executing now."""
    launch = getattr(_local, "launch", None)
    frame = sys._getframe(1)
    while frame is not None:
        if launch is not None and frame.f_code in launch.codes:
            fname, line = frame.f_code.co_filename, frame.f_lineno
            return fname, line, linecache.getline(fname, line).strip()
        frame = frame.f_back
    return None


def where_text() -> str:
    """'at file.py:12: <source line>' for error messages ('' outside kernels)."""
    loc = kernel_location()
    if loc is None:
        return ""
    fname, line, text = loc
    return f"\n  at {os.path.basename(fname)}:{line}: {text}"


def env_flag(name: str) -> bool:
    return os.environ.get(name, "0") not in ("", "0", "false", "False")


def record_write(flat: np.ndarray, idx: np.ndarray) -> None:
    """Remember the old values at ``idx`` so a diverging batch can be undone."""
    launch = current()
    if launch.log is not None:
        launch.log.append((flat, idx, flat[idx]))


def rollback(launch: Launch, mark: int) -> None:
    """Undo every write logged after ``mark`` (newest first)."""
    assert launch.log is not None
    while len(launch.log) > mark:
        flat, idx, old = launch.log.pop()
        flat[idx] = old
