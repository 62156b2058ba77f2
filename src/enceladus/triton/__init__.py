"""The Triton compatibility entry: run unmodified Triton programs and tests on Enceladus.

    python -m enceladus.triton SCRIPT.py [args]          # a script that does `import triton`
    pytest -p enceladus.triton tests/...                 # a test suite that does

For that run only, ``import triton`` (and ``triton.language``, ``triton.testing``, ...) gives Enceladus:
``triton.language`` *is* ``enceladus.language``. Importing this module changes nothing; :func:`install` does
(and :func:`uninstall` undoes it). An installed ``triton`` package is never touched otherwise. What is aliased
and what is not: docs/porting.md.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any

# `triton.X` -> the Enceladus module that stands for it (modules built in `_build` are marked None).
ALIASES: dict[str, str | None] = {
    "triton": "enceladus.triton.api",
    "triton.language": "enceladus.language",
    "triton.testing": "enceladus.testing",
    "triton.knobs": "enceladus.runtime.knobs",
    "triton._internal_testing": "enceladus.triton.internal_testing",
    "triton.runtime": None,
    "triton.runtime.driver": None,
    "triton.runtime.errors": None,
    "triton.runtime.jit": None,
    "triton.runtime.autotuner": None,
    "triton.runtime._allocation": None,
    "triton.compiler": None,
    "triton.compiler.errors": None,
    "triton.tools": None,
    "triton.tools.tensor_descriptor": None,
    "triton.tools.mxfp": None,
}
LANGUAGE_PREFIX = ("triton.language", "enceladus.language")

_installed: dict[str, Any] | None = None  # what sys.modules held before install()


def _module(name: str, doc: str, **attrs: Any) -> types.ModuleType:
    m = types.ModuleType(name, doc)
    m.__path__ = []  # type: ignore[attr-defined] # a package: `import name.x` reaches the finder's message
    m.__dict__.update(attrs)
    return m


def _built_modules(api: Any) -> dict[str, types.ModuleType]:
    """The small ``triton.*`` modules that have no Enceladus module of their own."""
    from ..errors import CompilationError, OutOfResources
    from ..interpreter import InterpreterError
    from ..runtime import autotune
    from ..runtime.jit import JITFunction
    from ..runtime.structs import TensorDescriptor
    from . import driver
    from . import mxfp as mx

    class NullAllocator:
        """Triton's default allocator (no scratch memory)."""

        def __call__(self, size: int, alignment: int, stream: Any) -> Any:
            raise RuntimeError("no allocator set (triton.set_allocator)")

    errors = _module("triton.runtime.errors", "Errors (Enceladus).", InterpreterError=InterpreterError,
                     OutOfResources=OutOfResources, TritonError=api.TritonError, CompilationError=CompilationError)
    jit = _module("triton.runtime.jit", "JIT (Enceladus).", JITFunction=JITFunction, jit=api.jit,
                  TensorWrapper=api.TensorWrapper, reinterpret=api.reinterpret, MockTensor=api.MockTensor,
                  KernelInterface=autotune.KernelInterface)
    tuner = _module("triton.runtime.autotuner", "Autotuner (Enceladus).", Autotuner=autotune.Autotuner,
                    Config=autotune.Config, Heuristics=autotune.Heuristics, autotune=autotune.autotune,
                    heuristics=autotune.heuristics)
    allocation = _module("triton.runtime._allocation", "Allocators (accepted, unused).", NullAllocator=NullAllocator,
                         set_allocator=api.set_allocator)
    drv = _module("triton.runtime.driver", "Driver (Enceladus).", driver=driver.driver, DriverConfig=driver.DriverConfig)
    runtime = _module("triton.runtime", "Runtime (Enceladus).", driver=driver.driver, errors=errors, jit=jit,
                      autotuner=tuner, _allocation=allocation, JITFunction=JITFunction,
                      Autotuner=autotune.Autotuner, Config=autotune.Config, Heuristics=autotune.Heuristics,
                      KernelInterface=autotune.KernelInterface, InterpreterError=InterpreterError,
                      OutOfResources=OutOfResources)
    cerrors = _module("triton.compiler.errors", "Compiler errors (Enceladus).", CompilationError=CompilationError,
                      TritonError=api.TritonError)
    compiler = _module("triton.compiler", "Compiler (Enceladus): only its errors are aliased.", errors=cerrors,
                       CompilationError=CompilationError)
    tdesc = _module("triton.tools.tensor_descriptor", "Host tensor descriptors (Enceladus).",
                    TensorDescriptor=TensorDescriptor)
    mxfp = _module("triton.tools.mxfp", "MX data helpers (Enceladus's own, in torch).", MXFP4Tensor=mx.MXFP4Tensor,
                   MXScaleTensor=mx.MXScaleTensor)
    tools = _module("triton.tools", "Tools (Enceladus).", tensor_descriptor=tdesc, mxfp=mxfp)
    return {m.__name__: m for m in (errors, jit, tuner, allocation, drv, runtime, cerrors, compiler, tdesc, mxfp, tools)}


class _AliasLoader(importlib.abc.Loader):
    """Hands out an existing Enceladus module under a ``triton.*`` name (its own ``__spec__`` kept)."""

    def __init__(self, module: types.ModuleType):
        self.module = module
        self.spec = getattr(module, "__spec__", None)

    def create_module(self, spec: Any) -> types.ModuleType:
        return self.module

    def exec_module(self, module: types.ModuleType) -> None:
        if self.spec is not None:
            module.__spec__ = self.spec


class _TritonFinder(importlib.abc.MetaPathFinder):
    """First on ``sys.meta_path`` while installed: every ``triton.*`` import ends in Enceladus or in a clear error,
    never in an installed Triton."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != "triton" and not fullname.startswith("triton."):
            return None
        old, new = LANGUAGE_PREFIX
        if fullname == old or fullname.startswith(old + "."):
            module = importlib.import_module(new + fullname[len(old):])  # ModuleNotFoundError names ours
            return importlib.machinery.ModuleSpec(fullname, _AliasLoader(module))
        raise ModuleNotFoundError(
            f"No module named '{fullname}': under Enceladus's Triton compatibility entry, 'triton' is Enceladus, "
            f"which provides {', '.join(sorted(ALIASES))} and triton.language.* (see docs/porting.md)",
            name=fullname)


_finder = _TritonFinder()


def installed() -> bool:
    """Whether ``triton`` is Enceladus in this process now."""
    return _installed is not None


def install() -> types.ModuleType:
    """Make ``import triton`` give Enceladus in this process (until :func:`uninstall`); returns the alias."""
    global _installed
    if _installed is not None:
        return sys.modules["triton"]
    previous = {k: v for k, v in sys.modules.items() if k == "triton" or k.startswith("triton.")}
    for k in previous:
        del sys.modules[k]
    from . import api

    modules: dict[str, Any] = dict(_built_modules(api))
    for alias, target in ALIASES.items():
        if target is not None:
            modules[alias] = importlib.import_module(target)
    for name, module in list(sys.modules.items()):  # enceladus.language.* already loaded
        if name.startswith(LANGUAGE_PREFIX[1] + "."):
            modules[LANGUAGE_PREFIX[0] + name[len(LANGUAGE_PREFIX[1]):]] = module
    for name in ("runtime", "compiler", "tools"):
        setattr(api, name, modules[f"triton.{name}"])
    sys.modules.update(modules)
    sys.meta_path.insert(0, _finder)
    _installed = previous
    return api


def uninstall() -> None:
    """Undo :func:`install`: ``triton`` is again whatever it was before (an installed Triton, or nothing)."""
    global _installed
    if _installed is None:
        return
    for k in [k for k in sys.modules if k == "triton" or k.startswith("triton.")]:
        del sys.modules[k]
    sys.modules.update(_installed)
    if _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
    _installed = None


# --- pytest plugin: `pytest -p enceladus.triton` ----------------------------------------------------------------
def pytest_load_initial_conftests(early_config: Any, parser: Any, args: Any) -> None:
    """Install before any conftest imports ``triton``."""
    install()


def pytest_configure(config: Any) -> None:
    install()
    config.addinivalue_line("markers", "interpreter: a test Triton also runs in its CPU interpreter")


def pytest_unconfigure(config: Any) -> None:
    uninstall()


def pytest_report_header(config: Any) -> str:
    from .. import backend_name

    return f"enceladus.triton: 'triton' is Enceladus (backend: {backend_name()})"
