"""Debug launches: threadgroup-memory race tracking and fault reports, on top of the checked build.

Every cpu-backend launch already checks each device and threadgroup access against what its argument
or variable may touch (see checked.h). Debug mode adds what costs more: the kernel is rebuilt with
race.h's threadgroup proxies, which report every threadgroup-memory read and write to the runtime
(write-write and read-after-write races without a barrier between them, reads of threadgroup memory
no thread of the group has written), and faults in kernel code (a fiber stack overflow) become
KernelLaunchErrors. Nothing is copied: the cost is proportional to the bytes the kernel touches.
"""

from __future__ import annotations

import ctypes
import os
import warnings
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .library import CpuFunction


class _Debug(ctypes.Structure):
    _fields_ = [("race_check", ctypes.c_int), ("device_races", ctypes.c_int)]


def debug_info(fn: CpuFunction) -> tuple[CpuFunction, _Debug]:
    """The function to run for a debug launch of ``fn`` (its race-tracking build when that builds) and the
    EncDebug record to pass with it (keep it alive until the launch returns)."""
    target = fn._library.race_checked_function(fn.name)
    # device-memory races cost a runtime call per element access (tens of times a memory-bound kernel's time):
    # asked for separately, ENCELADUS_DEBUG_DEVICE_RACES=1
    device = os.environ.get("ENCELADUS_DEBUG_DEVICE_RACES", "0") not in ("", "0", "false", "False")
    return (target or fn), _Debug(1 if target is not None else 0, 1 if target is not None and device else 0)


def warn_no_race_check(kernels: str, reason: str) -> None:
    """Tell the user once per library that race checking is off for it, and why."""
    first = reason.strip().splitlines()[0] if reason.strip() else "unknown reason"
    warnings.warn(f"ENCELADUS_DEBUG: threadgroup-memory race checking is unavailable for {kernels}: the "
                  f"instrumented build failed ({first}); the access checks still run", RuntimeWarning,
                  stacklevel=4)
