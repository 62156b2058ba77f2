"""Which backend runs kernels: ``metal`` on a Mac with a Metal device, else ``cpu``; ENCELADUS_BACKEND forces one.

Both backends offer the same interface: ``name``; ``compile(msl) -> library``; ``library.function(name)
-> program`` with ``program.launcher(slots, threads_per_threadgroup, args_slot, args_format,
threadgroup_memory) -> fast`` (``fast.pack(groups, gsize, *addresses, *scalars)``, ``fast.run(packet)``,
and on metal ``fast.run_host(packet, arrays, queue)`` for host memory); ``alloc(nbytes)`` (Tensor
storage: ``address``, ``handle``, ``nbytes``, ``host_view()``); ``new_queue()`` (``submit``,
``synchronize``, ``idle``, ``error``, ``take_error``). Importing this module never loads Objective-C;
only ``get_backend()`` on macOS does.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

_notes: list[str] = []
_active: Any = None  # set by use_backend (tests, tools): overrides the selection below


def backend_notes() -> list[str]:
    """Why the backend is what it is (e.g. why metal was not used on this Mac); empty when nothing to say."""
    return list(_notes)


def _metal() -> Any:
    from ..backends.metal import MetalBackend, unavailable_reason

    reason = unavailable_reason()
    if reason is not None:
        raise RuntimeError(reason)
    return supply(MetalBackend())


def supply(backend: Any) -> Any:
    """Hand a backend what it needs from above without importing it (backends never import the runtime or each
    other): the runtime's view of host arrays, and the cpu backend debug mode runs Metal kernels on."""
    if hasattr(backend, "host_view"):
        from .arguments import as_numpy

        backend.host_view = as_numpy
    if getattr(backend, "cpu_twin_backend", False) is None:
        backend.cpu_twin_backend = _cpu
    return backend


def _cpu() -> Any:
    from ..backends.cpu import CpuBackend

    return CpuBackend()


def get_backend(name: str | None = None) -> Any:
    """The backend for ``name`` ('cpu' or 'metal'), else ENCELADUS_BACKEND, else metal on macOS when it works."""
    if _active is not None and name is None:
        return _active
    return _select(name)


@contextmanager
def use_backend(backend: Any) -> Iterator[Any]:
    """Run the block with ``backend`` as the current backend (e.g. the metal backend on a recording stand-in
    in tests). Streams and kernel programs are per backend: the default stream is replaced for the
    block, and kernels are rebuilt for ``backend`` on their next slow-path launch (use fresh ``@jit``
    functions for launches that must not reuse another backend's fast-path plans)."""
    global _active
    from . import stream

    previous, previous_default = _active, stream._default
    supply(backend)
    stream.wait_all_idle()
    _active, stream._default = backend, None
    try:
        yield backend
    finally:
        stream.wait_all_idle()
        _active, stream._default = previous, previous_default


@cache
def _select(name: str | None) -> Any:
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
