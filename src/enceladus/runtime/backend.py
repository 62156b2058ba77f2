"""Which backend runs kernels: ``metal`` on a Mac with a Metal device, else ``cpu``; ENCELADUS_BACKEND forces one."""

from __future__ import annotations

import os
import sys
from functools import cache
from typing import Any


@cache
def get_backend(name: str | None = None) -> Any:
    name = name or os.environ.get("ENCELADUS_BACKEND", "").strip().lower() or None
    if name is None:
        name = "cpu" if sys.platform != "darwin" else "metal"
    if name == "cpu":
        from ..backends.cpu import CpuBackend

        return CpuBackend()
    if name == "metal":
        raise RuntimeError(
            "the metal backend is not available in this build yet; set ENCELADUS_BACKEND=cpu to run the generated "
            "MSL on the CPU"
        )
    raise ValueError(f"ENCELADUS_BACKEND={name!r} is not a backend; use 'cpu' or 'metal'")
