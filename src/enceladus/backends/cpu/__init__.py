"""The ``cpu`` backend: runs Metal Shading Language kernels on the host CPU.

The MSL text is compiled as C++ against Enceladus's own Metal compatibility headers
(``include/metal_stdlib``) with a host compiler, and executed with Metal's threadgroup semantics.
See docs/cpu_backend.md.
"""

from typing import Any

from .errors import (
    CacheSecurityError,
    CompilerNotFoundError,
    CpuBackendError,
    KernelLaunchError,
    MSLCompileError,
    MSLSyntaxError,
)
from .library import CpuBackend, CpuFunction, CpuLibrary
from .toolchain import CompilerInfo, cache_dir, find_compiler

_LAZY = {"KernelParam": "signature", "KernelSignature": "signature", "parse_kernels": "signature"}


def __getattr__(name: str) -> Any:
    """The MSL signature parser, imported on first use (loading a cached kernel never parses MSL)."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CacheSecurityError",
    "CompilerInfo",
    "CompilerNotFoundError",
    "CpuBackend",
    "CpuBackendError",
    "CpuFunction",
    "CpuLibrary",
    "KernelLaunchError",
    "KernelParam",
    "KernelSignature",
    "MSLCompileError",
    "MSLSyntaxError",
    "cache_dir",
    "find_compiler",
    "parse_kernels",
]
