"""Enceladus: Triton-style tile kernels in Python, compiled to Metal Shading Language.

    import enceladus
    import enceladus.language as tl

    @enceladus.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from . import language
from .compiler.kernel import CompiledKernel, KernelABI
from .errors import CompilationError, LaunchError, OutOfResources, StaleGlobalError
from .runtime.jit import JITFunction
from .runtime.stream import Stream, current_stream, default_stream, synchronize
from .runtime.structs import TensorDescriptor
from .runtime.tensor import (
    Tensor,
    empty,
    empty_like,
    from_dlpack,
    from_numpy,
    full,
    ones,
    tensor,
    zeros,
    zeros_like,
)

__version__ = "0.1.0"


def jit(fn: Callable | None = None, *, do_not_specialize: Any = (), do_not_specialize_on_alignment: Any = (),
        debug: bool | None = None, interpret: bool | None = None, noinline: bool | None = False,
        launch_metadata: Callable[..., dict] | None = None, repr: Callable[..., str] | None = None,
        version: Any = None) -> Any:
    """Compile a Python function as a kernel: ``@enceladus.jit`` or ``@enceladus.jit(do_not_specialize=["n"])``.

    ``launch_metadata(grid, metadata, args) -> dict`` adds to what launch hooks receive
    (``enceladus.knobs.runtime.launch_enter_hook``); ``repr`` and ``version`` are accepted as in Triton."""

    def wrap(f: Callable) -> JITFunction:
        return JITFunction(f, do_not_specialize=do_not_specialize or (),
                           do_not_specialize_on_alignment=do_not_specialize_on_alignment or (), debug=debug,
                           interpret=interpret, noinline=bool(noinline), launch_metadata=launch_metadata,
                           repr=repr)

    return wrap(fn) if fn is not None else wrap


def _host_const(fn: Callable) -> Callable:
    fn.__enceladus_host_const__ = True  # callable inside kernels on constexprs
    return fn


@_host_const
def cdiv(x: int, y: int) -> int:
    """Ceiling division: ``cdiv(10, 4) == 3``."""
    return (x + y - 1) // y


@_host_const
def next_power_of_2(n: int) -> int:
    """The smallest power of two >= n: ``next_power_of_2(1000) == 1024``."""
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def compile(fn: JITFunction, signature: dict[str, str] | str, constexprs: dict[str, Any] | None = None,
            num_warps: int = 4, enable_fp_fusion: bool = True, msl_bounds_checks: bool = False) -> CompiledKernel:
    """Compile a kernel to MSL without any backend work (the counterpart of ``triton.compile``).

    ``signature`` maps each runtime parameter to a Triton type string (``"*fp32"``, ``"i32"``...),
    or is a comma-separated string of them in parameter order; append ``:16`` to a pointer aligned to
    16 bytes or an integer divisible by 16 (``"*fp32:16"``), as launches specialize them. The result has ``.asm["ir"]``,
    ``.asm["msl"]`` and ``.abi``. ``enable_fp_fusion`` (Triton's option): a multiply whose only use is an add
    or a subtract becomes one ``fma``. ``msl_bounds_checks``: the MSL itself checks every device load, store and
    atomic against its pointer argument's bytes and reports a violation through the device log, as the metal
    backend's debug mode does (docs/robustness.md).
    """
    from .compiler.driver import compile_kernel

    if not isinstance(fn, JITFunction):
        raise TypeError("enceladus.compile expects a @enceladus.jit function")
    constexprs = dict(constexprs or {})
    for p in fn.params:
        if p.is_constexpr and p.name not in constexprs:
            if p.default is not inspect.Parameter.empty:
                constexprs[p.name] = p.default
            else:
                raise TypeError(f"constexpr parameter '{p.name}' needs a value in constexprs=")
    runtime = [p.name for p in fn.params if p.name not in constexprs]
    if isinstance(signature, str):
        types = [t.strip() for t in signature.split(",") if t.strip()]
        if len(types) != len(runtime):
            raise TypeError(f"signature has {len(types)} types but the kernel has {len(runtime)} runtime parameters "
                            f"({', '.join(runtime)})")
        signature = dict(zip(runtime, types))
    unknown = [n for n in list(signature) + list(constexprs) if n not in fn.param_names]
    if unknown:
        raise TypeError(f"unknown parameter(s) {', '.join(unknown)}; the kernel takes {', '.join(fn.param_names)}")
    missing = [n for n in runtime if n not in signature and n not in constexprs]
    if missing:
        raise TypeError(f"signature is missing parameter(s) {', '.join(missing)}")
    # ':16' marks a pointer aligned to 16 bytes or an integer divisible by 16, as launches specialize them
    facts: dict[str, tuple[bool, bool]] = {}
    signature = dict(signature)  # never modify the caller's dict
    for name, t in list(signature.items()):
        base, _, hint = str(t).partition(":")
        if hint not in ("", "16"):
            raise TypeError(f"signature of '{name}': '{t}': the only specialization hint is ':16'")
        signature[name] = base
        facts[name] = (hint == "16", False)
    if not isinstance(enable_fp_fusion, bool):
        raise TypeError(f"enable_fp_fusion={enable_fp_fusion!r}: expected True or False")
    if not isinstance(msl_bounds_checks, bool):
        raise TypeError(f"msl_bounds_checks={msl_bounds_checks!r}: expected True or False")
    return compile_kernel(fn.source, fn.__name__, fn.param_names, signature, constexprs, facts, num_warps=num_warps,
                          enable_fp_fusion=enable_fp_fusion, msl_bounds_checks=msl_bounds_checks)


__all__ = ["Autotuner", "CompilationError", "CompiledKernel", "Config", "Heuristics", "JITFunction", "KernelABI",
           "LaunchError", "OutOfResources", "StaleGlobalError", "autotune", "cdiv", "compile", "heuristics", "jit",
           "knobs", "language",
           "next_power_of_2", "testing"]
# Tensors, streams and hand-written MSL (runtime/tensor.py, stream.py, shader.py).
__all__ += ["ShaderLibrary", "Stream", "Tensor", "TensorDescriptor", "compile_shader", "current_stream", "default_stream", "empty",
            "empty_like", "from_dlpack", "from_numpy", "full", "ones", "synchronize", "tensor", "zeros", "zeros_like"]


# Imported on first use: not needed to launch a kernel (autotune pulls in concurrent.futures and logging).
_LAZY = {"testing": (".testing", None), "knobs": (".runtime.knobs", None)}
_LAZY.update({n: (".runtime.autotune", n) for n in ("Autotuner", "Config", "Heuristics", "autotune", "heuristics")})
_LAZY.update({n: (".runtime.shader", n) for n in ("ShaderLibrary", "compile_shader")})


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = importlib.import_module(module, __name__)
        value = value if attr is None else getattr(value, attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'enceladus' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


def backend_name() -> str:
    """The name of the backend kernels run on: 'metal' or 'cpu' (or 'interpreter' with ENCELADUS_INTERPRET=1)."""
    import os

    if os.environ.get("ENCELADUS_INTERPRET", "0") not in ("", "0", "false", "False"):
        return "interpreter"
    from .runtime.backend import get_backend

    return get_backend().name
