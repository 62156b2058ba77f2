"""The ``metal`` backend: MSL compiled by Metal's ``newLibraryWithSource`` and run on the Apple GPU.

Importing this package loads no Objective-C: the C libraries are opened when a ``MetalBackend`` is
created. NOT YET RUN ON APPLE HARDWARE: see docs/verification.md for what has been checked and how.
"""

from __future__ import annotations

import platform
import sys

from .backend import MetalBackend, MetalFunction, MetalLibrary
from .device import MetalCompileError, macos_major
from .memory import MetalBuffer
from .objc import ObjCError
from .stream import GPUTimer, Stream

MIN_MACOS = 15


def unavailable_reason(system: str | None = None, machine: str | None = None, macos: int | None = None) -> str | None:
    """Why the metal backend cannot run on this machine, or None if it may (a device is still needed)."""
    system = sys.platform if system is None else system
    if system != "darwin":
        return f"Metal exists only on macOS (this is {system})"
    machine = platform.machine() if machine is None else machine
    if machine != "arm64":
        return (f"the metal backend supports Apple silicon (arm64) only; this Mac is {machine} "
                "(or Python runs under Rosetta: use an arm64 Python)")
    macos = macos_major() if macos is None else macos
    if macos < MIN_MACOS:
        return f"the metal backend needs macOS {MIN_MACOS} or later (this is macOS {macos or 'unknown'})"
    return None


__all__ = ["GPUTimer", "MetalBackend", "MetalBuffer", "MetalCompileError", "MetalFunction", "MetalLibrary",
           "ObjCError", "Stream", "unavailable_reason"]
