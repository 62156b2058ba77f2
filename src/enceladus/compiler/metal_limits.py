"""Metal's limits, in one table: every check against a hardware or API limit reads it from here.

Light on purpose (no imports): the backends and the runtime read it on the launch path. Values are Apple's
documented limits for the GPUs Enceladus targets (Apple7 family and later, macOS 15+); the ones only a device
can report (a pipeline's ``maxTotalThreadsPerThreadgroup``, ``threadExecutionWidth``) are checked at run time.
"""

from __future__ import annotations

MAX_BUFFER_SLOTS = 31  # [[buffer(0..30)]] argument table entries per kernel
MAX_TEXTURE_SLOTS = 128  # [[texture(0..127)]]
MAX_SAMPLER_SLOTS = 16  # [[sampler(0..15)]]
MAX_THREADGROUP_SLOTS = 31  # [[threadgroup(0..30)]]
MAX_THREADS_PER_THREADGROUP = 1024
MAX_THREADGROUP_MEMORY = 32 * 1024  # bytes of threadgroup memory per threadgroup
SIMD_WIDTH = 32  # threads per SIMD group on every Apple GPU (checked against threadExecutionWidth at run time)
MAX_GRID = 2**32 - 1  # threads and threadgroups per grid dimension: Metal passes them as uint
MAX_SET_BYTES = 4096  # setBytes:length:atIndex: is documented for data below 4 KB

LIMITS = {
    "max_buffer_slots": MAX_BUFFER_SLOTS,
    "max_texture_slots": MAX_TEXTURE_SLOTS,
    "max_sampler_slots": MAX_SAMPLER_SLOTS,
    "max_threadgroup_slots": MAX_THREADGROUP_SLOTS,
    "max_threads_per_threadgroup": MAX_THREADS_PER_THREADGROUP,
    "max_threadgroup_memory": MAX_THREADGROUP_MEMORY,
    "simd_width": SIMD_WIDTH,
    "max_grid": MAX_GRID,
    "max_set_bytes": MAX_SET_BYTES,
}
