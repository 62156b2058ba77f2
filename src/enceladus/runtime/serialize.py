"""``CompiledKernel`` <-> JSON, for the disk cache. No pickle: only Enceladus's own dataclasses are rebuilt.

The format is described and implemented in ``runtime/cache.py`` ("entries as JSON"), which a fresh process
loading a cached kernel imports anyway: a module of its own cost that process about 0.2 ms. This module keeps
the names: ``to_json`` / ``from_json``, ``encode`` / ``decode``, ``kernel_to_dict`` / ``kernel_from_dict``,
``complete``, :class:`Opaque` and :class:`SerializationError`.
"""

from __future__ import annotations

from .cache import (
    FORMAT,
    Opaque,
    SerializationError,
    complete,
    decode,
    encode,
    from_json,
    kernel_from_dict,
    kernel_to_dict,
    to_json,
)

__all__ = ["FORMAT", "Opaque", "SerializationError", "complete", "decode", "encode", "from_json", "kernel_from_dict",
           "kernel_to_dict", "to_json"]
