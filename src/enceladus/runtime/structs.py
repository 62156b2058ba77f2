"""Tuple and TensorDescriptor arguments: the types live in ``language/structs.py`` (below the compiler, the
interpreter and the runtime); the runtime supplies its array view to ``TensorDescriptor.from_tensor``."""

from __future__ import annotations

from ..language.structs import TensorDescriptor, flatten, is_struct, leaf_names, rebuild, set_array_view
from .arguments import as_numpy

set_array_view(as_numpy)

__all__ = ["TensorDescriptor", "flatten", "is_struct", "leaf_names", "rebuild"]
