"""``tl.target_info``: Triton's questions about the target, usable on the host and inside kernels (on constexprs).
Enceladus runs on Apple GPUs (and the ``cpu`` backend), never on CUDA or HIP: every question answers False, so
kernels that branch on them take their portable path."""

from __future__ import annotations

from typing import Any


def _host_const(fn: Any) -> Any:
    fn.__enceladus_host_const__ = True  # callable inside kernels, evaluated while compiling
    return fn


@_host_const
def is_cuda() -> bool:
    """False: the target is an Apple GPU (or the cpu backend)."""
    return False


@_host_const
def cuda_capability_geq(major: int, minor: int = 0) -> bool:
    """False: there is no CUDA compute capability on Apple GPUs."""
    return False


@_host_const
def is_hip() -> bool:
    """False: the target is an Apple GPU (or the cpu backend)."""
    return False


@_host_const
def is_hip_cdna3() -> bool:
    """False (not an AMD GPU)."""
    return False


@_host_const
def is_hip_cdna4() -> bool:
    """False (not an AMD GPU)."""
    return False


@_host_const
def is_hip_gfx1250() -> bool:
    """False (not an AMD GPU)."""
    return False
