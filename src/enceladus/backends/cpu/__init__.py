"""The ``cpu`` backend: runs Metal Shading Language kernels on the host CPU.

The MSL text is compiled as C++ against Enceladus's own Metal compatibility headers
(``include/metal_stdlib``) with a host compiler, and executed with Metal's threadgroup semantics.
See docs/cpu_backend.md.
"""

from .errors import (
    CacheSecurityError,
    CompilerNotFoundError,
    CpuBackendError,
    KernelLaunchError,
    MSLCompileError,
    MSLSyntaxError,
)
from .library import CpuBackend, CpuFunction, CpuLibrary
from .signature import KernelParam, KernelSignature, parse_kernels
from .toolchain import CompilerInfo, cache_dir, find_compiler

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
