"""What ``kernel.warmup(...)`` returns: a compiled kernel that launches by itself, as Triton's ``CompiledKernel``.

    compiled = kernel.warmup(x, out, n, BLOCK=1024, grid=(1,))
    compiled._init_handles()                       # builds the backend program now
    compiled.n_regs, compiled.metadata.shared      # resource figures (see docs/porting.md)
    compiled[(grid,)](x, out, n, 1024)             # every parameter, constexprs included, as in Triton

Register figures: Apple GPUs do not report registers per thread, so ``n_regs`` is an estimate: the
register file Triton's tutorials assume (``max_num_regs`` = 65536 32-bit registers per program) divided by
the number of threads a program may have (1024), i.e. 64, the most a thread can use with a full
threadgroup. On the ``cpu`` backend the same nominal figure is reported. ``n_spills`` is 0.
"""

from __future__ import annotations

from typing import Any

from ..compiler.kernel import CompiledKernel, LazyDict
from . import structs

NOMINAL_MAX_NUM_REGS = 65536  # 32-bit registers per program that tutorials divide by n_regs
MAX_THREADS_PER_THREADGROUP = 1024
NOMINAL_N_REGS = NOMINAL_MAX_NUM_REGS // MAX_THREADS_PER_THREADGROUP


class KernelMetadata(LazyDict):
    """The compiled kernel's metadata, readable as attributes too (``metadata.shared``, ``metadata.num_warps``). A
    copy of the kernel's that leaves its lazy values (a cached kernel's ``layouts``) to be made on first use."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"kernel metadata has no field '{name}' (fields: {', '.join(self)})") from None


class CompiledHandle:
    """A compiled specialization of a ``@jit`` function; ``handle[grid](*args)`` launches it.

    Every attribute of the underlying :class:`~enceladus.CompiledKernel` (``asm``, ``abi``, ``explain()``...)
    reads through."""

    def __init__(self, fn: Any, kernel: CompiledKernel | None, constexprs: dict[str, Any], num_warps: int,
                 num_stages: int = 3, interpreted: bool = False):
        self.__dict__["fn"] = fn
        # Under ENCELADUS_INTERPRET=1 launches run in the interpreter; ``kernel`` (the compiler's output for the
        # same specialization, None if the compiler refuses it) only supplies the figures.
        self.__dict__["kernel"] = kernel
        self.__dict__["interpreted"] = interpreted
        self.__dict__["constexprs"] = constexprs
        if kernel is None:
            md = KernelMetadata({"name": fn.__name__, "shared": 0, "threads_per_threadgroup": 32 * num_warps})
        else:
            md = KernelMetadata.copy_of(kernel.metadata)
            md.update(name=kernel.name, shared=kernel.abi.threadgroup_memory,
                      threads_per_threadgroup=kernel.abi.threads_per_threadgroup)
        md.update(num_warps=num_warps, num_stages=num_stages, num_ctas=1, warp_size=32)
        self.__dict__["metadata"] = md

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["kernel"], name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "program":  # the autotuner builds programs through the handle
            self.kernel.program = value
        else:
            self.__dict__[name] = value

    def __repr__(self) -> str:
        return f"CompiledHandle({self.name}, num_warps={self.metadata.num_warps})"

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def n_regs(self) -> int:
        """Registers per thread: a documented nominal figure (Apple GPUs do not report it)."""
        return NOMINAL_N_REGS

    @property
    def n_spills(self) -> int:
        """Register spills: 0 (not reported by Metal)."""
        return 0

    @property
    def n_max_threads(self) -> int:
        return MAX_THREADS_PER_THREADGROUP

    @property
    def function(self) -> Any:
        """The backend's loaded program (built by ``_init_handles()``)."""
        return None if self.kernel is None else self.kernel.program

    def _init_handles(self) -> None:
        """Build the backend program now (the first launch would otherwise do it)."""
        from .launch import launcher_for

        if self.kernel is not None and not self.interpreted:
            launcher_for(self.kernel)

    def __getitem__(self, grid: Any) -> Any:
        def runner(*args: Any, stream: Any = None) -> None:
            self._launch(grid, args)

        return runner

    def _launch(self, grid: Any, args: tuple) -> None:
        from .guards import check as check_globals
        from .jit import resolve_grid
        from .launch import launch

        params = self.fn.params
        if len(args) != len(params):
            raise TypeError(f"compiled kernel '{self.name}' takes all {len(params)} parameters "
                            f"({', '.join(p.name for p in params)}), constexprs included, as Triton's compiled "
                            f"kernels do; got {len(args)}")
        if self.interpreted:  # the constexprs it was "compiled" with, as for compiled kernels
            values = {p.name: self.constexprs[p.name] if p.is_constexpr else a for p, a in zip(params, args)}
            self.fn.run(grid=grid, num_warps=self.metadata.num_warps, **values)
            return
        values = {}
        for p, a in zip(params, args):
            if p.is_constexpr:
                values[p.name] = self.constexprs[p.name]  # fixed at compile time, as in Triton
            elif structs.is_struct(a):
                values.update(structs.flatten(p.name, a)[0])
                values[p.name] = a
            else:
                values[p.name] = a
        check_globals(self.kernel)  # the globals it was compiled with (runtime/guards.py)
        launch(self.kernel, resolve_grid(grid, values), values)
