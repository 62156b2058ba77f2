"""Python control flow across batched programs, print/device_print, asserts, pdb."""

import sys

import numpy as np
import pytest

from enceladus import CompilationError
from enceladus.interpreter import DeviceAssertionError
from paths import on_path, run_on_all_paths

from .kernels import (
    breakpoint_kernel,
    device_assert_kernel,
    device_print_kernel,
    early_return_kernel,
    per_program_loop_kernel,
    print_kernel,
    rmw_divergent_kernel,
    static_assert_kernel,
    while_kernel,
)


def test_early_return() -> None:
    run_on_all_paths(early_return_kernel, (16,), lambda: (np.zeros(10, np.int32), 10),
                     lambda out, n: {0: np.arange(10, dtype=np.int32) * 3}, paths=("interpreter",))


def test_per_program_loop_bounds() -> None:
    rows, cols = 13, 8
    ref = np.repeat(np.arange(rows, dtype=np.int32)[:, None], cols, axis=1)
    run_on_all_paths(per_program_loop_kernel, (4,), lambda: (np.zeros((rows, cols), np.int32), rows, cols),
                     lambda *a: {0: ref}, constexprs={"BLOCK": 8}, paths=("interpreter",))


def test_while_with_per_program_condition() -> None:
    out = np.zeros(6, np.int32)
    on_path(while_kernel, "interpreter")[(6,)](out)
    np.testing.assert_array_equal(out, [i * (i - 1) // 2 for i in range(6)])


def test_divergence_rolls_back_writes() -> None:
    x = np.arange(8, dtype=np.int32)
    on_path(rmw_divergent_kernel, "interpreter")[(8,)](x)
    want = np.arange(8) + 1
    want[::2] *= 10
    np.testing.assert_array_equal(x, want)


def test_print_shows_each_program(capsys) -> None:
    on_path(print_kernel, "interpreter")[(2,)](np.arange(4, dtype=np.float32))
    out = capsys.readouterr().out.splitlines()
    assert out == ["pid (0, 0, 0) x is [0. 1.]", "pid (1, 0, 0) x is [2. 3.]"]


def test_device_print(capsys) -> None:
    on_path(device_print_kernel, "interpreter")[(1,)](np.array([1.5, 2.5], np.float32))
    assert capsys.readouterr().out.splitlines() == ["pid (0, 0, 0) idx (0) x=1.5", "pid (0, 0, 0) idx (1) x=2.5"]


def test_device_assert() -> None:
    x = np.ones(64, np.float32)
    on_path(device_assert_kernel, "interpreter")[(2,)](x, BLOCK=32, debug=True)
    x[40] = -1
    on_path(device_assert_kernel, "interpreter")[(2,)](x, BLOCK=32)  # checked only in debug mode, as in Triton
    with pytest.raises(DeviceAssertionError, match=r"program \(1, 0, 0\), tile index \(8,\): x must be non-negative"):
        on_path(device_assert_kernel, "interpreter")[(2,)](x, BLOCK=32, debug=True)


def test_static_assert_is_a_compilation_error() -> None:
    on_path(static_assert_kernel, "interpreter")[(1,)](np.ones(32, np.float32), BLOCK=32)
    with pytest.raises(CompilationError, match="BLOCK too small"):
        on_path(static_assert_kernel, "interpreter")[(1,)](np.ones(16, np.float32), BLOCK=16)


def test_breakpoint_stops_in_each_program(monkeypatch) -> None:
    seen = []

    def hook(*args, **kwargs):
        frame = sys._getframe(1)
        seen.append(frame.f_locals["pid"].program_value().item())

    monkeypatch.setattr(sys, "breakpointhook", hook)
    x = np.zeros(3, np.int32)
    on_path(breakpoint_kernel, "interpreter")[(3,)](x)
    assert seen == [0, 1, 2]
    np.testing.assert_array_equal(x, [0, 1, 2])


def test_tile_errors_are_clear() -> None:
    from enceladus.interpreter.tensor import Tile
    from enceladus.language import dtypes as D

    t = Tile(np.zeros((1, 4), np.float32), D.float32)
    with pytest.raises(ValueError, match="ambiguous"):
        bool(t)
    with pytest.raises(ValueError, match="unsupported tensor index"):
        t[1:]
    with pytest.raises(TypeError, match="tl.dot"):
        t @ t
    with pytest.raises(TypeError, match="no \\*\\* operator"):
        t ** 2
