"""The compiler: frontend -> tile IR -> passes (layouts, vectorization) -> MSL codegen.

``compile_kernel`` is imported on first use, so that loading and launching cached kernels
(``compiler.kernel``) does not load the compiler itself.
"""

from typing import Any

from .kernel import CompiledKernel, KernelABI

__all__ = ["CompiledKernel", "KernelABI", "compile_kernel"]


def __getattr__(name: str) -> Any:
    if name == "compile_kernel":
        from .driver import compile_kernel

        return compile_kernel
    raise AttributeError(name)
