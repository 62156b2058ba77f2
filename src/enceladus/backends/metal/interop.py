"""PyTorch ``mps`` tensors and MLX arrays as kernel arguments. UNVERIFIED: written from the frameworks'
documentation and source (METAL_FACTS.md), never run; docs/metal.md describes the binding rules.

- PyTorch: ``torch.mps.compile_shader`` compiles our MSL and encodes the dispatch on PyTorch's own
  MPS stream, so launches are zero-copy and ordered with torch ops. Argument i is ``[[buffer(i)]]``;
  tensors bind as buffer + storage offset (views work); ``threads`` is the TOTAL thread count
  (``dispatchThreads``), so we pass ``groups * threads_per_threadgroup``, which gives exactly our
  grid because every threadgroup is full. The packed scalar struct travels as a small uint8 mps
  tensor (one host-to-device copy per launch, ordered on the same stream).
- MLX: evaluate the arrays (``mx.eval``), take their shared memory through the buffer protocol
  (zero copy) and launch on our own queue, synchronously, like NumPy arrays. ``mx.fast.metal_kernel``
  is not used: it takes only a kernel body and always allocates its outputs, so in-place stores
  into inputs -- which Triton-style kernels do -- are impossible through it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

_torch_libraries: dict[str, Any] = {}


def is_torch_mps(value: object) -> bool:
    """A PyTorch tensor on the ``mps`` device."""
    return type(value).__module__.startswith("torch") and getattr(getattr(value, "device", None), "type", "") == "mps"


def is_mlx_array(value: object) -> bool:
    """An MLX array."""
    return type(value).__module__.startswith("mlx")


def launch_torch_mps(msl: str, kernel: str, groups: Sequence[int], threads_per_threadgroup: int,
                     buffers: Mapping[int, Any], scalars: bytes | None, scalar_slot: int | None) -> None:
    """Launch ``kernel`` through ``torch.mps.compile_shader`` on PyTorch's current MPS stream (asynchronous).

    ``buffers`` maps each ``[[buffer(i)]]`` slot to an mps tensor. The kernel must use only 1-D
    threadgroups (``threads_per_threadgroup`` x 1 x 1), as generated kernels do.
    """
    import torch

    slots = dict(buffers)
    for slot, t in slots.items():
        if not is_torch_mps(t):
            raise TypeError(f"kernel '{kernel}': buffer({slot}) must be an mps tensor to launch through PyTorch")
    if scalar_slot is not None and scalars is not None:
        slots[scalar_slot] = None  # filled below, after the checks
    if sorted(slots) != list(range(len(slots))):
        raise ValueError(f"kernel '{kernel}': compile_shader binds argument i to buffer(i), so slots must be "
                         f"0..{len(slots) - 1}; got {sorted(slots)}")
    if scalar_slot is not None and scalars is not None:
        slots[scalar_slot] = torch.frombuffer(bytearray(scalars), dtype=torch.uint8).to("mps")
    lib = _torch_libraries.get(msl)
    if lib is None:
        lib = _torch_libraries[msl] = torch.mps.compile_shader(msl)
    g = tuple(int(v) for v in groups) + (1,) * (3 - len(groups))
    getattr(lib, kernel)(*[slots[i] for i in range(len(slots))],
                         threads=[g[0] * threads_per_threadgroup, g[1], g[2]],
                         group_size=[threads_per_threadgroup, 1, 1])


def mlx_host_view(array: Any) -> np.ndarray:
    """Evaluate an MLX array and return a zero-copy NumPy view of its shared-storage memory.

    Launching on that view goes through the NumPy path (wrapped without a copy, synchronous). Stores
    into the array are visible to MLX afterwards only because the memory is shared; they bypass MLX's
    graph, so only write into arrays that nothing else aliases (e.g. a fresh ``mx.zeros`` output).
    """
    import mlx.core as mx

    mx.eval(array)
    view = np.asarray(memoryview(array))
    if view.ctypes.data == 0 and view.size:
        raise ValueError("MLX array exposes no host memory")
    return view
