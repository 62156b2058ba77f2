"""Run one kernel on every available path and compare each to a NumPy reference.

    from paths import run_on_all_paths

    run_on_all_paths(add_kernel, (4,), make_args=lambda: (x.copy(), y.copy(), np.zeros_like(x), n),
                     reference=lambda x, y, out, n: {2: x + y}, constexprs={"BLOCK": 256})

Paths: ``"interpreter"`` (the NumPy interpreter, launched through ``JITFunction(fn, interpret=True)``
so no environment variable is needed) and ``"cpu"`` (the compiled MSL on the cpu backend). Pass
``paths=("interpreter",)`` for ops the compiler does not support yet.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from enceladus.runtime.jit import JITFunction

ALL_PATHS = ("interpreter", "cpu")
_VARIANTS: dict[tuple[int, str], JITFunction] = {}


def cpu_available() -> bool:
    """Whether the cpu backend can compile (a host C++ compiler is installed)."""
    return any(shutil.which(c) for c in ("clang++", "g++"))


def on_path(kernel: JITFunction, path: str) -> JITFunction:
    """``kernel`` as launched on ``path`` (cached, so compiled kernels are reused)."""
    if path not in ALL_PATHS:
        raise ValueError(f"unknown path {path!r}; expected one of {ALL_PATHS}")
    key = (id(kernel.fn), path)
    if key not in _VARIANTS:
        _VARIANTS[key] = JITFunction(kernel.fn, interpret=(path == "interpreter"))
    return _VARIANTS[key]


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
    Returns the arguments after the launch, per path. The cpu path is skipped without a C++ compiler.
    """
    results: dict[str, list[Any]] = {}
    expected = reference(*make_args())
    for path in paths:
        if path == "cpu" and not cpu_available():
            continue
        args = list(make_args())
        on_path(kernel, path)[grid](*args, **(constexprs or {}), **options)
        if check is not None:
            check(args, expected, path)
        else:
            for index, want in expected.items():
                assert_close(np.asarray(args[index]), want, rtol=rtol, atol=atol,
                             what=f"{kernel.__name__} on the {path} path, argument {index}")
        results[path] = args
    if not results:
        pytest.skip("no execution path available")
    return results
