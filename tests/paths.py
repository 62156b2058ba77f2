"""Run one kernel on every available path and compare each to a NumPy reference.

    from paths import run_on_all_paths

    run_on_all_paths(add_kernel, (4,), make_args=lambda: (x.copy(), y.copy(), np.zeros_like(x), n),
                     reference=lambda x, y, out, n: {2: x + y}, constexprs={"BLOCK": 256})

Paths: ``"interpreter"`` (the NumPy interpreter, launched through ``JITFunction(fn, interpret=True)``
so no environment variable is needed) and ``"cpu"`` (the compiled MSL on the cpu backend). Pass
``paths=("interpreter",)`` for ops the compiler does not support yet.

Two things a green run must not hide:

- a path that did not run. Without a C++ compiler the cpu path cannot run: the test is then reported as
  *skipped* (after the other paths passed), and as a *failure* when ``CI`` is set (``CI=true``: the
  README installs a compiler, so a CI machine without one is misconfigured). ``needs_cpu`` does the same
  for whole tests and modules.
- a write outside an array. Every C-contiguous array argument is launched as a view into a larger
  buffer whose head and tail hold a sentinel byte pattern (``guard``); after each launch both must be
  unchanged, so a store one element past ``n`` (or before element 0) fails the test.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from enceladus.runtime.jit import JITFunction

ALL_PATHS = ("interpreter", "cpu")
_VARIANTS: dict[tuple[int, str], JITFunction] = {}

SENTINEL_BYTE = 0xA5  # as float32 -2.9e-16, as int32 -1515870811: not a value any test writes
GUARD_BYTES = 256  # sentinel bytes on each side: longer than any vector access (16 bytes) or small tile
ALIGN = 64  # the interior starts 64-byte aligned, as a fresh allocation of the Metal backend would


def in_ci() -> bool:
    """Whether this run is a CI run (``CI`` set to a true value, as GitHub Actions and most CI systems do)."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def cpu_available() -> bool:
    """Whether the cpu backend can compile: the compiler it would use (``ENCELADUS_CXX``, clang++, g++ or
    ziglang, see ``find_compiler``) exists and runs."""
    from enceladus.backends.cpu.errors import CompilerNotFoundError
    from enceladus.backends.cpu.toolchain import find_compiler

    try:
        find_compiler()
    except CompilerNotFoundError:
        return False
    return True


def path_missing(path: str, reason: str) -> None:
    """Report that ``path`` could not run: a visible skip, or a failure in CI (``CI=true``)."""
    message = f"the {path} path did not run: {reason}"
    if in_ci():
        pytest.fail(f"{message} (CI=true: a CI machine must run every path; install a C++ compiler, see README)")
    pytest.skip(message)


# Skips a test or module without a C++ compiler, except in CI, where the test runs and fails loudly.
needs_cpu = pytest.mark.skipif(not cpu_available() and not in_ci(),
                               reason="the cpu path did not run: no C++ compiler (see README)")


def clang_available() -> bool:
    """Whether the cpu backend's compiler is clang (its UBSan mode needs clang's sanitizers)."""
    from enceladus.backends.cpu.errors import CompilerNotFoundError
    from enceladus.backends.cpu.toolchain import find_compiler

    try:
        return find_compiler().kind == "clang"
    except CompilerNotFoundError:
        return False


# The same for tests of what only clang builds (the UBSan mode): skipped with g++, except in CI (README: clang).
needs_clang = pytest.mark.skipif(not clang_available() and not in_ci(),
                                 reason="needs clang as the cpu backend's compiler (apt-get install -y clang, see README)")


def on_path(kernel: JITFunction, path: str) -> JITFunction:
    """``kernel`` as launched on ``path`` (cached, so compiled kernels are reused)."""
    if path not in ALL_PATHS:
        raise ValueError(f"unknown path {path!r}; expected one of {ALL_PATHS}")
    key = (id(kernel.fn), path)
    if key not in _VARIANTS:
        _VARIANTS[key] = JITFunction(kernel.fn, interpret=(path == "interpreter"))
    return _VARIANTS[key]


class Guarded:
    """A C-contiguous copy of an array inside a buffer with sentinel bytes before and after it.

    ``view`` is the copy (pass it to the kernel; it starts ``ALIGN``-byte aligned plus ``offset_bytes``);
    ``check(what)`` raises AssertionError if any sentinel byte changed, naming the side and the element.
    """

    def __init__(self, array: np.ndarray, offset_bytes: int = 0):
        array = np.asarray(array)
        self.nbytes = array.nbytes
        self.itemsize = array.dtype.itemsize
        self.raw = np.empty(self.nbytes + 2 * GUARD_BYTES + ALIGN + offset_bytes, dtype=np.uint8)
        shift = (-self.raw.ctypes.data) % ALIGN
        self.start = shift + GUARD_BYTES + offset_bytes
        self.raw[:] = SENTINEL_BYTE
        interior = self.raw[self.start:self.start + self.nbytes]
        self.view = interior.view(array.dtype).reshape(array.shape)
        self.view[...] = array
        self.head = self.raw[self.start - GUARD_BYTES:self.start]
        self.tail = self.raw[self.start + self.nbytes:self.start + self.nbytes + GUARD_BYTES]

    def check(self, what: str = "array") -> None:
        """Raise AssertionError when a byte before or after the array was written."""
        for side, region in (("before element 0", self.head), ("past the end", self.tail)):
            changed = np.flatnonzero(region != SENTINEL_BYTE)
            if changed.size:
                first = int(changed[0] if side == "past the end" else changed[-1])
                if side == "past the end":
                    where = f"element n+{first // self.itemsize} (byte {first} past the end)"
                else:
                    where = f"element -{(GUARD_BYTES - first - 1) // self.itemsize + 1}"
                raise AssertionError(f"{what}: {changed.size} sentinel byte(s) {side} were overwritten, "
                                     f"first at {where}: the kernel wrote outside the array")


def guard(array: np.ndarray, offset_bytes: int = 0) -> Guarded:
    """``Guarded(array, offset_bytes)``: the array between sentinels (see ``Guarded``)."""
    return Guarded(array, offset_bytes)


def _guard_args(args: Sequence[Any]) -> tuple[list[Any], dict[int, Guarded]]:
    """Replace each non-empty C-contiguous ndarray argument by a guarded copy (one array passed twice stays one
    array: kernels that take aliasing arguments see the aliasing)."""
    out = list(args)
    guards: dict[int, Guarded] = {}
    first: dict[int, int] = {}  # id of an array -> the index of its first occurrence
    for i, a in enumerate(out):
        if isinstance(a, np.ndarray) and a.ndim >= 1 and a.size and a.flags.c_contiguous:
            if id(a) in first:
                out[i] = out[first[id(a)]]
                continue
            first[id(a)] = i
            guards[i] = Guarded(a)
            out[i] = guards[i].view
    return out, guards


def assert_close(actual: np.ndarray, expected: Any, *, rtol: float = 1e-5, atol: float = 1e-6,
                 what: str = "") -> None:
    """Same dtype (when ``expected`` is an array) and values within tolerance (NaNs must match)."""
    expected = np.asarray(expected)
    if expected.dtype != np.dtype(object) and actual.dtype != expected.dtype:
        raise AssertionError(f"{what}: dtype {actual.dtype} != expected {expected.dtype}")
    if actual.dtype.kind in "biu":
        np.testing.assert_array_equal(actual, expected, err_msg=what)
    else:
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol,
                                   err_msg=what)


def run_on_all_paths(kernel: JITFunction, grid: Any, make_args: Callable[[], Sequence[Any]],
                     reference: Callable[..., dict[int, Any]], check: Callable[..., None] | None = None,
                     paths: Sequence[str] = ALL_PATHS, constexprs: dict[str, Any] | None = None,
                     rtol: float = 1e-5, atol: float = 1e-6, **options: Any) -> dict[str, list[Any]]:
    """Launch ``kernel[grid](*make_args(), **constexprs, **options)`` on each path and check it.

    ``reference(*args)`` gets a fresh set of arguments and returns ``{argument index: expected
    array}``; by default each such argument must equal its expectation after the launch
    (``assert_close`` with ``rtol``/``atol``). ``check(args, expected, path)`` replaces that.
    Array arguments are launched between sentinels, checked after each launch (see the module text).
    Returns the arguments after the launch, per path. A path that cannot run (the cpu path without a
    C++ compiler) makes the test skip after the others passed, or fail when ``CI=true``.
    """
    results: dict[str, list[Any]] = {}
    expected = reference(*make_args())
    missing = []
    for path in paths:
        if path == "cpu" and not cpu_available():
            missing.append(path)
            continue
        args, guards = _guard_args(make_args())
        on_path(kernel, path)[grid](*args, **(constexprs or {}), **options)
        for index, g in guards.items():
            g.check(f"{kernel.__name__} on the {path} path, argument {index}")
        if check is not None:
            check(args, expected, path)
        else:
            for index, want in expected.items():
                assert_close(np.asarray(args[index]), want, rtol=rtol, atol=atol,
                             what=f"{kernel.__name__} on the {path} path, argument {index}")
        results[path] = args
    if missing:
        ran = ", ".join(results) or "no other path"
        path_missing(" and ".join(missing), f"no C++ compiler for the cpu backend ({ran} passed)")
    return results
