"""The ``triton`` namespace the compatibility entry installs (``python -m enceladus.triton``, ``pytest -p
enceladus.triton``). Everything here is Enceladus; docs/porting.md lists what is aliased and what is not.

Importing this module changes nothing: only :func:`enceladus.triton.install` makes it ``sys.modules["triton"]``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import cdiv, jit, language, next_power_of_2, testing
from ..errors import CompilationError, EnceladusError, LaunchError, OutOfResources
from ..interpreter import InterpreterError
from ..runtime import knobs
from ..runtime.autotune import Autotuner, Config, Heuristics, KernelInterface, autotune, heuristics
from ..runtime.jit import JITFunction
from . import driver as _driver

__version__ = "3.9.0+enceladus"
__path__: list[str] = []  # a package to the import system, so `import triton.x` reaches our finder's message

TritonError = EnceladusError  # the base of CompilationError, LaunchError and InterpreterError


class MockTensor:
    """Triton's stand-in for tensors when only dtypes matter (``triton.MockTensor``); rarely needed."""

    def __init__(self, dtype: Any, shape: Any = None):
        self.dtype = dtype
        self.shape = shape or [1]

    @staticmethod
    def wrap_dtype(arg: Any) -> Any:
        return arg

    def data_ptr(self) -> int:
        return 0


class TensorWrapper:
    """A tensor whose elements a kernel reads as another dtype of the same width (``triton.reinterpret``):
    how Triton's tests pass uint16/32/64 data held in signed torch tensors."""

    def __init__(self, base: Any, dtype: Any):
        self.base = base
        self.data = getattr(base, "data", base)
        self.dtype = dtype
        self.device = getattr(base, "device", "cpu")
        self.shape = tuple(base.shape)

    def __enceladus_array__(self) -> np.ndarray:
        from ..runtime.arguments import as_numpy

        arr = as_numpy(self.base)
        target = self.dtype.to_numpy()
        if target.itemsize != arr.dtype.itemsize:
            raise TypeError(f"reinterpret: {arr.dtype} and {self.dtype} differ in width")
        return arr.view(target)

    def data_ptr(self) -> int:
        return self.base.data_ptr()

    def stride(self, *args: Any) -> Any:
        return self.base.stride(*args)

    def element_size(self) -> int:
        return self.base.element_size()

    def numel(self) -> int:
        return self.base.numel()

    def dim(self) -> int:
        return self.base.dim()

    def size(self, *args: Any) -> Any:
        return self.base.size(*args)

    def cpu(self) -> TensorWrapper:
        return TensorWrapper(self.base.cpu(), self.dtype)

    def clone(self) -> TensorWrapper:
        return TensorWrapper(self.base.clone(), self.dtype)

    def copy_(self, other: Any) -> TensorWrapper:
        self.base.copy_(other.base if isinstance(other, TensorWrapper) else other)
        return self

    def to(self, device: Any) -> TensorWrapper:
        return TensorWrapper(self.base.to(device), self.dtype)

    def new_empty(self, sizes: Any) -> TensorWrapper:
        return TensorWrapper(self.base.new_empty(sizes), self.dtype)

    def __str__(self) -> str:
        return f"TensorWrapper[{self.dtype}]({self.base})"


def reinterpret(tensor: Any, dtype: Any) -> Any:
    """``tensor`` read by kernels as ``dtype`` (same element width), as ``triton.reinterpret``."""
    if isinstance(tensor, TensorWrapper):
        if dtype == tensor.base.dtype:
            return tensor.base
        return TensorWrapper(tensor.base, dtype)
    if isinstance(dtype, language.dtype):
        return TensorWrapper(tensor, dtype)
    return tensor.view(dtype)  # a torch dtype: torch's own reinterpretation


def constexpr_function(fn: Callable) -> Callable:
    """Mark a plain Python function as callable inside kernels on constexpr values (``triton.constexpr_function``)."""
    fn.__enceladus_host_const__ = True
    return fn


def must_use_result(fn: Any, *args: Any) -> Any:
    """Accepted for compatibility: Enceladus does not check that a ``@jit`` function's result is used."""
    if not callable(fn):  # used as @must_use_result("reason")
        return lambda f: f
    return fn


_allocator: Any = None


def set_allocator(allocator: Any) -> None:
    """Accepted for compatibility (Triton allocates scratch memory for device-side tensor descriptors with it;
    Enceladus needs none)."""
    global _allocator
    _allocator = allocator


Config = Config
Autotuner = Autotuner
Heuristics = Heuristics
KernelInterface = KernelInterface
driver = _driver  # the module; ``triton.runtime.driver`` (built by enceladus.triton.install) is its ``driver``

__all__ = ["CompilationError", "Config", "InterpreterError", "JITFunction", "KernelInterface", "LaunchError",
           "MockTensor", "OutOfResources", "TensorWrapper", "TritonError", "autotune", "cdiv", "constexpr_function",
           "heuristics", "jit", "knobs", "language", "must_use_result", "next_power_of_2", "reinterpret",
           "set_allocator", "testing"]
