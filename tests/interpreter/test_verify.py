"""ENCELADUS_VERIFY=1: the interpreter refuses exactly what the compiler refuses."""

import numpy as np
import pytest

from enceladus import CompilationError
from paths import on_path

from .kernels import add_kernel, print_kernel


def test_verify_refuses_what_the_compiler_refuses(monkeypatch) -> None:
    x = np.arange(4, dtype=np.float32)
    on_path(print_kernel, "interpreter")[(1,)](x)  # the interpreter alone accepts print()
    monkeypatch.setenv("ENCELADUS_VERIFY", "1")
    with pytest.raises(CompilationError) as interp:
        on_path(print_kernel, "interpreter")[(1,)](x)
    with pytest.raises(CompilationError) as compiled:
        on_path(print_kernel, "cpu").warmup(x, grid=(1,))
    assert str(interp.value) == str(compiled.value)


def test_verify_accepts_valid_kernels(monkeypatch) -> None:
    monkeypatch.setenv("ENCELADUS_VERIFY", "1")
    x = np.arange(100, dtype=np.float32)
    out = np.zeros_like(x)
    on_path(add_kernel, "interpreter")[(1,)](x, x, out, 100, BLOCK=128)
    np.testing.assert_array_equal(out, 2 * x)


def test_environment_variable_selects_the_interpreter(monkeypatch) -> None:
    import enceladus

    monkeypatch.setenv("ENCELADUS_INTERPRET", "1")
    kernel = enceladus.jit(add_kernel.fn)
    assert kernel.interpret
    x = np.arange(10, dtype=np.float32)
    out = np.zeros_like(x)
    kernel[(1,)](x, x, out, 10, BLOCK=16)
    np.testing.assert_array_equal(out, 2 * x)
