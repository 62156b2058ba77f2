"""Exceptions raised by the cpu backend. Each message says what failed, where, and what to do.

They are defined in the package itself (``enceladus/backends/cpu/__init__.py``: a fresh process loading a cached
kernel imports it anyway, and a module of their own cost that process about 0.15 ms); this module keeps the names.
"""

from __future__ import annotations

from . import (
    CacheSecurityError,
    CompilerNotFoundError,
    CpuBackendError,
    KernelLaunchError,
    KernelTimeoutError,
    MSLCompileError,
    MSLSyntaxError,
)

__all__ = ["CacheSecurityError", "CompilerNotFoundError", "CpuBackendError", "KernelLaunchError", "KernelTimeoutError",
           "MSLCompileError", "MSLSyntaxError"]
