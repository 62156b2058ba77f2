"""The NumPy interpreter: ``ENCELADUS_INTERPRET=1`` or ``@enceladus.jit(interpret=True)``.

The kernel's own Python runs with ``tl.*`` bound to NumPy implementations, so ``print()``, ``pdb``
and stepping work, and every load and store is bounds-checked. It is the second, independent
implementation of the language's semantics that the compiler is tested against.
"""

from __future__ import annotations

from .context import DeviceAssertionError, InterpreterError, OffsetOverflowError, OutOfBoundsError
from .launch import interpret_launch

__all__ = ["DeviceAssertionError", "InterpreterError", "OffsetOverflowError", "OutOfBoundsError", "interpret_launch"]
