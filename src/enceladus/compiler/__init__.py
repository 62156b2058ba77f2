"""The compiler: frontend -> tile IR -> passes (layouts, vectorization) -> MSL codegen."""

from .driver import CompiledKernel, KernelABI, compile_kernel

__all__ = ["CompiledKernel", "KernelABI", "compile_kernel"]
