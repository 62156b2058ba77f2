"""Which backend runs kernels: ``metal`` on a Mac with a Metal device, else ``cpu``; ENCELADUS_BACKEND forces one.

Both backends offer the same interface: ``compile(msl) -> library``, ``library.function(name)``,
``function.launch(threadgroups, threads_per_threadgroup, buffers, threadgroup_memory=...)``, and
``name``. The metal backend adds ``alloc``, ``synchronize``, streams and GPU timing.
Importing this module never loads Objective-C; only ``get_backend()`` on macOS does.
"""

from __future__ import annotations

import os
import sys
from functools import cache
from typing import Any

_notes: list[str] = []


def backend_notes() -> list[str]:
    """Why the backend is what it is (e.g. why metal was not used on this Mac); empty when nothing to say."""
    return list(_notes)


def _metal() -> Any:
    from ..backends.metal import MetalBackend, unavailable_reason

    reason = unavailable_reason()
    if reason is not None:
        raise RuntimeError(reason)
    return MetalBackend()


def _cpu() -> Any:
    from ..backends.cpu import CpuBackend

    return CpuBackend()


@cache
def get_backend(name: str | None = None) -> Any:
    """The backend for ``name`` ('cpu' or 'metal'), else ENCELADUS_BACKEND, else metal on macOS when it works."""
    name = name or os.environ.get("ENCELADUS_BACKEND", "").strip().lower() or None
    if name == "cpu":
        return _cpu()
    if name == "metal":
        try:
            return _metal()
        except Exception as e:
            raise RuntimeError(f"ENCELADUS_BACKEND=metal, but the metal backend cannot start: {e}") from e
    if name is not None:
        raise ValueError(f"ENCELADUS_BACKEND={name!r} is not a backend; use 'cpu' or 'metal'")
    if sys.platform == "darwin":
        try:
            return _metal()
        except Exception as e:  # no device, old macOS, Intel: run the same MSL on the CPU instead
            note = f"metal backend not used ({e}); running kernels on the cpu backend"
            _notes.append(note)
            print(f"enceladus: {note}", file=sys.stderr)
    return _cpu()
