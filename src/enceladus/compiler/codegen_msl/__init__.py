"""MSL code generation: ``emitter`` (values, control flow, the kernel), ``memory`` (loads and stores),
``movement`` (reductions and data movement between threads), ``tables`` (each op's MSL)."""

from .emitter import MSLEmitter, MSLModule, Param
from .memory import Access

__all__ = ["Access", "MSLEmitter", "MSLModule", "Param"]
