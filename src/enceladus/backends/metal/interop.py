"""PyTorch ``mps`` tensors and MLX arrays as kernel arguments. UNVERIFIED: written from the frameworks'
documentation and source (METAL_FACTS.md) and tested here only against stand-ins; docs/metal.md
describes the binding rules, costs and limits.

- PyTorch ``mps``: ``torch.mps.compile_shader`` compiles the kernel's MSL -- with the scalar struct
  split into one ``constant long&``/``constant float&`` parameter per scalar
  (compiler/codegen_msl/signatures.py), because compile_shader binds argument i to ``[[buffer(i)]]``
  and passes Python ints as int64 and floats as float -- and encodes the dispatch on PyTorch's own
  current MPS stream: zero-copy, asynchronous, ordered with torch ops. Tensors bind as buffer +
  storage offset, so views work. ``threads`` is the TOTAL thread count (``dispatchThreads``): we pass
  ``groups * threads_per_threadgroup``, exactly our grid since every threadgroup is full.
- MLX: ``mx.eval`` the array, take its shared memory through the buffer protocol (zero copy) and
  launch it like a NumPy array (wrapped, our queue, synchronous). ``mx.fast.metal_kernel`` is not
  used: it takes only a kernel body and always allocates its outputs, so in-place stores into inputs
  -- which Triton-style kernels do -- are impossible through it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

_torch_libraries: dict[str, tuple[Any, list[Any]]] = {}


def is_torch_mps(value: object) -> bool:
    """A PyTorch tensor on the ``mps`` device."""
    return type(value).__module__.startswith("torch") and getattr(getattr(value, "device", None), "type", "") == "mps"


def is_mlx_array(value: object) -> bool:
    """An MLX array."""
    return type(value).__module__.startswith("mlx")


def _int64(value: Any) -> int:
    v = int(value)
    return v - (1 << 64) if v >= 1 << 63 else v  # ulong values travel as their int64 bit pattern


def launch_torch_mps(msl: str, kernel: str, groups: Sequence[int], threads_per_threadgroup: int,
                     tensors: Sequence[Any], scalars: Sequence[Any]) -> None:
    """Launch generated ``kernel`` through ``torch.mps.compile_shader`` on PyTorch's current MPS stream.

    ``tensors`` are the mps tensors for buffer slots 0..k-1 (slot order), ``scalars`` the scalar values
    in the kernel's packed order. Asynchronous, like any torch op; ``torch.mps.synchronize()`` waits.
    Generated kernels use 1-D threadgroups (``threads_per_threadgroup`` x 1 x 1)."""
    import torch

    from ...compiler.codegen_msl.signatures import scalars_as_parameters
    for i, t in enumerate(tensors):
        if not is_torch_mps(t):
            raise TypeError(f"kernel '{kernel}': buffer({i}) is a {type(t).__name__} on "
                            f"{getattr(t, 'device', 'the host')}; a launch with mps tensors needs every array "
                            "argument on mps (move it with .to('mps'))")
    entry = _torch_libraries.get(msl)
    if entry is None:
        source, params = scalars_as_parameters(msl, kernel)
        if params and params[0].slot != len(tensors):
            raise ValueError(f"kernel '{kernel}': compile_shader binds argument i to buffer(i); the scalars start "
                             f"at buffer({params[0].slot}) after {len(tensors)} tensors")
        entry = _torch_libraries[msl] = (torch.mps.compile_shader(source), params)
    lib, params = entry
    values = [float(v) if p.is_float else _int64(v) for p, v in zip(params, scalars)]
    g = tuple(int(v) for v in groups) + (1,) * (3 - len(groups))
    getattr(lib, kernel)(*tensors, *values, threads=[g[0] * threads_per_threadgroup, g[1], g[2]],
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
