"""Launching a compiled kernel on the current backend: binding buffers, packing scalars."""

from __future__ import annotations

import ctypes
import struct
from typing import Any

from ..compiler.driver import CompiledKernel
from . import arguments
from .backend import get_backend

_PACK = {"int1": "B", "int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint8": "B", "uint16": "H",
         "uint32": "I", "uint64": "Q", "fp32": "f"}


def pack_scalars(kernel: CompiledKernel, values: dict[str, Any]) -> bytes:
    abi = kernel.abi
    buf = bytearray(abi.args_size)
    for name, offset, tname in abi.args_format:
        v = values[name]
        code = _PACK[tname]
        if tname == "fp32":
            v = float(v)
        elif tname == "int1":
            v = 1 if v else 0
        else:
            v = int(v)
            if code.isupper() and v < 0:
                v &= (1 << (8 * struct.calcsize(code))) - 1
        struct.pack_into("<" + code, buf, offset, v)
    return bytes(buf)


def launch(kernel: CompiledKernel, grid: tuple[int, int, int], values: dict[str, Any]) -> None:
    """Run ``kernel`` over ``grid`` on the current backend (synchronously for NumPy arguments)."""
    if 0 in grid:
        return
    backend = get_backend()
    if kernel.program is None:
        kernel.program = backend.compile(kernel.asm["msl"]).function(kernel.abi.kernel_name)
    abi = kernel.abi
    buffers: dict[int, int] = {}
    keep_alive = []
    for p in abi.buffer_params:
        arr = arguments.as_numpy(values[p.name])
        if p.writes and not arr.flags.writeable:
            raise ValueError(f"argument '{p.name}' is a read-only array, but kernel '{kernel.name}' stores through it; "
                             "pass a writeable array (e.g. arr.copy())")
        if not arr.flags.aligned:
            raise ValueError(f"argument '{p.name}' is not aligned to its element size; pass np.ascontiguousarray(x)")
        buffers[p.slot] = arr.ctypes.data
        keep_alive.append(arr)
    if abi.args_slot is not None:
        raw = ctypes.create_string_buffer(pack_scalars(kernel, values), max(abi.args_size, 1))
        keep_alive.append(raw)
        buffers[abi.args_slot] = ctypes.addressof(raw)
    kernel.program.launch(threadgroups=grid, threads_per_threadgroup=(abi.threads_per_threadgroup, 1, 1),
                          buffers=buffers)
