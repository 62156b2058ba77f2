"""What compiling produces: ``CompiledKernel`` (MSL, IR text, metadata) and its ``KernelABI``.

Light on purpose: the runtime loads cached kernels and launches them without importing the compiler.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

VERSION = "0.1.0"


@dataclass
class Param:
    """One kernel parameter as the host binds it."""

    name: str
    kind: str  # 'buffer' or 'scalar'
    type: str  # '*fp32', 'int32', ...
    slot: int | None = None  # buffer slot
    offset: int | None = None  # byte offset in the scalar struct
    writes: bool = False  # the kernel stores through this pointer


@dataclass
class Access:
    """What codegen decided for one load or store (shown by explain())."""

    kind: str
    line: int | None
    dtype: str
    shape: tuple[int, ...]
    vector: int  # elements per access
    bytes: int
    reason: str

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line else ""
        width = f"{self.vector} x {self.dtype} ({self.bytes} bytes)"
        return f"{where}{self.kind} {list(self.shape)} {width}: {self.reason}"


@dataclass(frozen=True)
class KernelABI:
    """How the host binds a compiled kernel's arguments (shared by every backend)."""

    kernel_name: str
    params: tuple[Param, ...]
    args_slot: int | None  # buffer slot of the packed scalar struct
    args_size: int
    args_format: tuple[tuple[str, int, str], ...]  # (name, byte offset, dtype name) of each packed scalar
    threads_per_threadgroup: int
    threadgroup_memory: int = 0

    @property
    def buffer_params(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.kind == "buffer")


@dataclass
class CompiledKernel:
    """A kernel compiled to MSL for one specialization."""

    name: str
    asm: dict[str, str]
    abi: KernelABI
    metadata: dict[str, Any]
    accesses: list[Access] = field(default_factory=list)
    program: Any = None  # the backend's loaded function, built on first launch

    def explain(self) -> str:
        lines = [f"kernel {self.name}: {self.abi.threads_per_threadgroup} threads per threadgroup "
                 f"({self.metadata['num_warps']} SIMD groups of 32), threadgroup memory {self.abi.threadgroup_memory} "
                 "bytes"]
        lines.append("layouts:")
        for i, lay in enumerate(self.metadata["layouts"]):
            lines.append(f"  L{i} = {lay}: {lay.elems_per_thread} elements per thread")
        lines.append("memory accesses:")
        for a in self.accesses:
            lines.append(f"  {a}")
        lines.append(f"barriers: {self.metadata.get('barriers', 0)}")
        for note in self.metadata.get("notes", []):
            lines.append(f"  {note}")
        lines.append("IR:")
        lines.append(self.asm["ir_layouts"])
        return "\n".join(lines)
