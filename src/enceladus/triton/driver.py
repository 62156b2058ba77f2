"""``triton.runtime.driver`` under the compatibility entry: the active device, target and device properties.

``driver.active.get_current_target().backend`` is ``"metal"`` or ``"cpu"`` (the backend compiled kernels run
on, also in the interpreter). ``utils.get_device_properties()`` returns Triton's keys; the values are:

| key | ``metal`` | ``cpu`` |
|---|---|---|
| ``max_shared_mem`` | the device's ``maxThreadgroupMemoryLength`` | 32768 (Metal's threadgroup memory) |
| ``max_num_regs`` | 65536 (nominal: not reported by Metal) | 65536 (nominal) |
| ``multiprocessor_count`` | 8 (nominal: Metal does not report GPU cores) | the cpu backend's thread pool size (``ENCELADUS_CPU_THREADS``, else the CPUs the process may run on): threadgroups run in parallel on its threads |
| ``warpSize`` | 32 | 32 |
| ``sm_clock_rate``, ``mem_clock_rate`` (kHz), ``mem_bus_width`` (bits) | 1000000, 1000000, 128 (nominal) | the same |
"""

from __future__ import annotations

import platform
from typing import Any, NamedTuple

NOMINAL = {"max_num_regs": 65536, "warpSize": 32, "sm_clock_rate": 1_000_000, "mem_clock_rate": 1_000_000,
           "mem_bus_width": 128}
METAL_THREADGROUP_MEMORY = 32768
NOMINAL_METAL_CORES = 8


class GPUTarget(NamedTuple):
    """What ``get_current_target()`` returns (Triton's ``GPUTarget``)."""

    backend: str
    arch: Any
    warp_size: int


def _backend() -> Any:
    from ..runtime.backend import get_backend

    return get_backend()


class DeviceUtils:
    """``driver.active.utils``."""

    def get_device_properties(self, device: Any = None) -> dict[str, int]:
        """Triton's device-property keys with Enceladus's values (nominal where Metal reports none)."""
        backend = _backend()
        props = dict(NOMINAL)
        if backend.name == "metal":
            props["max_shared_mem"] = int(getattr(backend.device, "max_threadgroup_memory", METAL_THREADGROUP_MEMORY))
            props["multiprocessor_count"] = NOMINAL_METAL_CORES
        else:
            props["max_shared_mem"] = METAL_THREADGROUP_MEMORY
            from ..backends.cpu.library import pool_threads

            props["multiprocessor_count"] = pool_threads()
        return props


class ActiveDriver:
    """``triton.runtime.driver.active``."""

    utils = DeviceUtils()

    def get_active_torch_device(self) -> Any:
        """``torch.device("mps")`` on a Mac whose PyTorch has mps and whose kernels run on Metal, else cpu."""
        import torch

        mps = getattr(torch.backends, "mps", None)
        if _backend().name == "metal" and mps is not None and mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")

    def get_current_target(self) -> GPUTarget:
        """``GPUTarget(backend="metal" | "cpu", arch, warp_size=32)``."""
        backend = _backend()
        arch = getattr(backend, "device_name", None) if backend.name == "metal" else platform.machine()
        return GPUTarget(backend.name, arch, 32)

    def get_current_device(self) -> int:
        return 0

    def set_current_device(self, device: Any) -> None:
        """One device: accepted, no effect."""

    def get_current_stream(self, device: Any = None) -> Any:
        from ..runtime.stream import current_stream

        return current_stream()

    def get_device_interface(self) -> Any:
        """``torch.mps`` or ``torch.cpu`` (what Triton's ``torch.cuda`` is used for: synchronize, streams)."""
        import torch

        return torch.mps if self.get_active_torch_device().type == "mps" else torch.cpu

    def get_empty_cache_for_benchmark(self) -> Any:
        import torch

        return torch.empty(int(256e6 // 4), dtype=torch.int, device=self.get_active_torch_device())

    def clear_cache(self, cache: Any) -> None:
        cache.zero_()

    def is_active(self) -> bool:
        return True


class DriverConfig:
    """``triton.runtime.driver``: ``driver.active`` is the one Enceladus driver."""

    def __init__(self) -> None:
        self.default = ActiveDriver()
        self._active: Any = None

    @property
    def active(self) -> Any:
        return self._active if self._active is not None else self.default

    def set_active(self, driver: Any) -> None:
        self._active = driver

    def reset_active(self) -> None:
        self._active = None


driver = DriverConfig()
