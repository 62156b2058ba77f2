"""The ``cpu`` backend: runs Metal Shading Language kernels on the host CPU.

The MSL text is compiled as C++ against Enceladus's own Metal compatibility headers
(``include/metal_stdlib``) with a host compiler, and executed with Metal's threadgroup semantics.
See docs/cpu_backend.md.
"""

from typing import Any

from ...cachedir import CacheSecurityError  # one class for the disk cache and the build cache
from ...errors import LaunchError


# The exceptions of the cpu backend (also importable from ``enceladus.backends.cpu.errors``). They are defined here,
# before the modules that raise them are imported, because a fresh process that launches a cached kernel imports
# this package anyway and a module of their own cost it about 0.15 ms. Each message says what failed, where, and
# what to do.
class CpuBackendError(RuntimeError):
    """Base class of every error raised by ``enceladus.backends.cpu``."""


class CompilerNotFoundError(CpuBackendError):
    """No usable C++ compiler was found (or ``ENCELADUS_CXX`` names one that does not run)."""


class MSLSyntaxError(CpuBackendError):
    """The MSL text could not be parsed (kernel signature, attributes)."""


class MSLCompileError(CpuBackendError):
    """The host C++ compiler rejected the MSL (after the documented rewrite); carries its output."""

    def __init__(self, message: str, compiler_output: str = "", cpp: str = "") -> None:
        super().__init__(message)
        self.compiler_output = compiler_output
        self.cpp = cpp


class KernelLaunchError(CpuBackendError, LaunchError):
    """Bad launch arguments, or the kernel did something undefined while running."""


class KernelTimeoutError(KernelLaunchError, TimeoutError):
    """A launch ran past its timeout (``timeout=`` or ``ENCELADUS_TIMEOUT``) and was stopped."""


from .library import CpuBackend, CpuFunction, CpuLibrary  # noqa: E402  (they import the exceptions above)
from .toolchain import CompilerInfo, cache_dir, find_compiler  # noqa: E402

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
    "KernelTimeoutError",
    "KernelSignature",
    "MSLCompileError",
    "MSLSyntaxError",
    "cache_dir",
    "find_compiler",
    "parse_kernels",
]
