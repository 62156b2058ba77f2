"""Exceptions raised by the cpu backend. Each message says what failed, where, and what to do."""

from __future__ import annotations

from ...cachedir import CacheSecurityError  # one class for the disk cache and the build cache
from ...errors import LaunchError

__all__ = ["CacheSecurityError", "CompilerNotFoundError", "CpuBackendError", "KernelLaunchError", "MSLCompileError",
           "MSLSyntaxError"]


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
