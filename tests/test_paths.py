"""The kernel test helpers themselves (tests/paths.py): a path that did not run and a write outside an
array must not pass silently."""

from __future__ import annotations

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from enceladus.errors import LaunchError
from paths import GUARD_BYTES, guard, in_ci, needs_cpu, run_on_all_paths


@enceladus.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@enceladus.jit
def copy_one_past_the_end(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # deliberately wrong: the store mask lets element n through (the load is masked correctly)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
    tl.store(out_ptr + offs, x, mask=offs <= n)


def _copy_args(n: int):
    x = np.arange(n, dtype=np.float32)
    return lambda: (x.copy(), np.zeros(n, np.float32), n)


def test_missing_compiler_is_a_visible_skip(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("ENCELADUS_CXX", "/nonexistent/c++")  # the compiler the cpu backend would use does not run
    with pytest.raises(pytest.skip.Exception, match="the cpu path did not run: no C\\+\\+ compiler"):
        run_on_all_paths(copy_kernel, (1,), _copy_args(10), lambda x, out, n: {1: x}, constexprs={"BLOCK": 16})


def test_missing_compiler_fails_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("ENCELADUS_CXX", "/nonexistent/c++")
    assert in_ci()
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        run_on_all_paths(copy_kernel, (1,), _copy_args(10), lambda x, out, n: {1: x}, constexprs={"BLOCK": 16})


def test_sentinels_catch_writes_on_either_side() -> None:
    a = np.arange(10, dtype=np.float32)
    g = guard(a)
    np.testing.assert_array_equal(g.view, a)
    assert g.view.ctypes.data % 64 == 0 and guard(a, 4).view.ctypes.data % 64 == 4
    g.check()
    g.raw[g.start + a.nbytes] = 0  # first byte of element n
    with pytest.raises(AssertionError, match="past the end were overwritten, first at element n\\+0"):
        g.check("out")
    g = guard(a)
    g.raw[g.start - 4:g.start] = 0  # element -1
    with pytest.raises(AssertionError, match="before element 0 were overwritten, first at element -1"):
        g.check("out")
    g = guard(a)
    g.raw[g.start + a.nbytes + GUARD_BYTES - 1] = 0  # last sentinel byte
    with pytest.raises(AssertionError, match="past the end"):
        g.check("out")


@needs_cpu
@pytest.mark.parametrize("n", [10, 16])
def test_a_write_one_past_the_end_fails(n: int) -> None:
    # Values alone cannot see this bug: elements 0..n-1 are right. The cpu path writes into the
    # sentinel tail (or, with the backend's own bounds checks, is stopped before); the interpreter
    # refuses the store itself.
    with pytest.raises((AssertionError, LaunchError), match="past the end|out.of.bounds|outside"):
        run_on_all_paths(copy_one_past_the_end, (1,), _copy_args(n), lambda x, out, n: {1: x},
                         paths=("cpu",), constexprs={"BLOCK": 32})
    with pytest.raises((AssertionError, LaunchError)):
        run_on_all_paths(copy_one_past_the_end, (1,), _copy_args(n), lambda x, out, n: {1: x},
                         paths=("interpreter",), constexprs={"BLOCK": 32})
