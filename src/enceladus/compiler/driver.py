"""The compiler's driver: signature + constexprs -> IR -> layouts -> MSL + KernelABI."""

from __future__ import annotations

import gc
import threading
from typing import Any

from ..errors import CompilationError, OutOfResources
from ..language import dtypes as D
from ..language.dtypes import pointer_type
from ..language.structs import leaf_names
from . import ir
from .codegen_msl import MSLEmitter
from .codegen_msl.emitter import function_facts
from .frontend import KernelSource, StructParam, lower_kernel, specialized_constant
from .kernel import VERSION, CompiledKernel, KernelABI, KernelAsm, dump_kernel
from .metal_limits import MAX_BUFFER_SLOTS, MAX_THREADS_PER_THREADGROUP  # noqa: F401  (re-exported)
from .passes import axis_info, device_order, fuse_fma, layouts, reciprocal_division

_SCOPED_OR_CAST = frozenset({"atomic", "cast"})  # the ops the metadata's sys_scope and int_pointers come from


def parse_signature_type(t: str, name: str) -> ir.Type | None:
    """``*fp32`` -> pointer type, ``i32`` -> scalar type, ``constexpr``/``none`` -> None (a constant)."""
    t = t.strip()
    if t.startswith("*"):
        const = t.startswith("*k")  # a pointer to constant data (a tl.const parameter): writes are refused
        elem = D.BY_NAME.get(t[2:] if const else t[1:])
        if elem is None:
            raise TypeError(f"argument '{name}': unknown pointer type '{t}' (expected e.g. '*fp32', '*i32', '*fp16')")
        return ir.Type(pointer_type(elem, const=const))  # '*fp64': stores only (semantic_memory.float64_bits)
    if t in ("constexpr", "none"):
        return None
    elem = D.BY_NAME.get(t)
    if elem is None:
        raise TypeError(f"argument '{name}': unknown type '{t}' (expected e.g. 'i32', 'i64', 'fp32', 'i1', '*fp32')")
    if elem.is_fp64():
        raise TypeError(f"argument '{name}': Apple GPUs have no float64; use 'fp32'")
    if elem.name in ("fp16", "bf16"):
        elem = D.float32  # Python floats are passed as fp32, as in Triton
    return ir.Type(elem)


class _CollectorPaused:
    """Python's cyclic garbage collector paused while a compile runs (``with _COLLECTOR_PAUSED:``).

    A compile allocates thousands of IR objects that all live until it returns (values and their ops refer to
    each other, so only the collector frees them, after the compile). Left running, the collector starts a
    young-generation pass every 700 allocations and walks them again and again while they are still in use:
    5-9% of a compile's time on the benchmark kernels. Paused, it walks them once, at its first pass after
    the compile (docs/benchmarks.md). Nested and concurrent compiles (the autotuner's thread pool) share one
    pause: the collector runs again when the last of them ends, and only if it was running before the first
    began (a program that turned it off keeps it off)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self._resume = False

    def __enter__(self) -> None:
        with self._lock:
            if self._depth == 0:
                self._resume = gc.isenabled()
                gc.disable()
            self._depth += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._depth -= 1
            if self._depth == 0 and self._resume:
                gc.enable()


_COLLECTOR_PAUSED = _CollectorPaused()


def compile_kernel(source: KernelSource, name: str, param_names: list[str], signature: dict[str, str],
                   constexprs: dict[str, Any], facts: dict[str, tuple[bool, bool]] | None = None,
                   num_warps: int = 4, origin: str = "", structs: dict[str, Any] | None = None,
                   dot_backend: str = "simdgroup", enable_fp_fusion: bool = True,
                   device: dict[str, Any] | None = None, debug: bool = False,
                   msl_bounds_checks: bool = False) -> CompiledKernel:
    """Compile one specialization of a kernel to MSL.

    ``signature`` gives each runtime argument's type; ``constexprs`` each constexpr's value;
    ``facts`` maps argument name -> (divisible_by_16, equal_to_1); ``structs`` maps each tuple or
    TensorDescriptor parameter to its structure (``language.structs.flatten``), passed by its leaves;
    ``dot_backend`` is how ``tl.dot`` is lowered ("simdgroup" or "matmul2d"); ``enable_fp_fusion``: a multiply
    whose only use is an add or a subtract becomes one fma (``passes/fuse_fma.py``); ``device``: what the backend's
    run-time probes found on this device (``runtime/probes.py``: e.g. matmul2d tiles it rejects, fragment mapping);
    ``debug``: ``assert`` statements in the kernel are checked (Triton's debug mode); ``msl_bounds_checks``: every
    device load, store and atomic checks in the MSL that its bytes lie inside its pointer argument, logs a violation
    to the device log and skips the access (``codegen_msl/debug.py``; the runtime binds the extents buffer).
    """
    with _COLLECTOR_PAUSED:
        return _compile(source, name, param_names, signature, constexprs, facts, num_warps, origin, structs,
                        dot_backend, enable_fp_fusion, device, debug, msl_bounds_checks)


def _compile(source: KernelSource, name: str, param_names: list[str], signature: dict[str, str],
             constexprs: dict[str, Any], facts: dict[str, tuple[bool, bool]] | None, num_warps: int, origin: str,
             structs: dict[str, Any] | None, dot_backend: str, enable_fp_fusion: bool,
             device: dict[str, Any] | None, debug: bool, msl_bounds_checks: bool) -> CompiledKernel:
    if not isinstance(num_warps, int) or num_warps < 1 or num_warps & (num_warps - 1) or num_warps > 32:
        raise CompilationError(f"num_warps={num_warps!r} is not supported", kernel=name,
                               fix="use a power of two from 1 to 32 (SIMD groups of 32 threads; at most 1024 threads)")
    facts = facts or {}
    params: list[tuple[str, Any]] = []
    arg_types: dict[str, str] = {}
    arg_div: dict[str, int] = {}

    def runtime_param(pname: str) -> Any:
        """The frontend's view of one runtime (leaf) argument; records its type and facts."""
        t = signature[pname]
        ty = parse_signature_type(t, pname)
        div16, eq1 = facts.get(pname, (False, False))
        if ty is None:
            return None
        if eq1 and not ty.is_ptr:
            return specialized_constant(1, ty.element)
        arg_types[pname] = t
        if ty.is_ptr:
            arg_div[pname] = 16 if div16 else ty.element.element_ty.itemsize
        else:
            arg_div[pname] = 16 if div16 else 1
        return ty

    for pname in param_names:
        if pname in constexprs:
            params.append((pname, constexprs[pname]))
            continue
        structure = (structs or {}).get(pname)
        if structure is not None:  # a tuple or tensor-descriptor argument, passed by its leaves
            params.append((pname, StructParam(pname, structure,
                                              {n: runtime_param(n) for n in leaf_names(pname, structure)})))
            continue
        params.append((pname, runtime_param(pname)))
    fn, read_globals, global_reads = lower_kernel(source, name, params, debug=debug)
    nbuffers = sum(1 for a in fn.args if a.type.is_ptr) + (1 if any(not a.type.is_ptr for a in fn.args) else 0)
    if nbuffers > MAX_BUFFER_SLOTS:
        args = source.tree.args.args
        lineno, col, line = source.locate(args[0] if args else source.tree)  # the parameter list
        raise OutOfResources(
            f"kernel '{name}' needs {nbuffers} buffer slots; Metal allows {MAX_BUFFER_SLOTS}", kernel=name,
            filename=source.filename, lineno=lineno, col=col, source_line=line,
            fix="pass fewer pointer arguments (e.g. one buffer plus offsets)")
    if enable_fp_fusion:
        fuse_fma.fuse_multiply_add(fn)
    reciprocal_division.divide_by_reciprocals(fn)  # fp32 x / shared divisor: one reciprocal per divisor value
    info = axis_info.analyze(fn, arg_div)
    if dot_backend not in ("simdgroup", "matmul2d"):
        raise CompilationError(f"dot_backend={dot_backend!r} is not supported", kernel=name,
                               fix="use 'simdgroup', 'matmul2d' or 'auto'")
    device = dict(device or {})
    plan = layouts.assign_layouts(fn, num_warps, dot_backend, dict(device.get("matmul2d_rejects", ())), info,
                                  fragments_in_registers=device.get("fragments") != "store")
    facts = function_facts(fn, ops=plan.ops)  # shared by the device-order pass and every emitter attempt below
    order = device_order.plan_device_order(fn, plan, num_warps, facts.roots, facts.written, facts.ops)
    header = f"// Generated by Enceladus {VERSION} from kernel '{name}'{(' (' + origin + ')') if origin else ''}."

    def emitter(pooled: bool, reuse: bool = False) -> MSLEmitter:
        e = MSLEmitter(fn, num_warps, info, plan, header, pooled=pooled, reuse=reuse, order=order, facts=facts)
        e.fragments_via_store = device.get("fragments") == "store"
        e.atomic_u64_minmax = device.get("atomic_u64_minmax", True)
        e.bounds_checks = msl_bounds_checks
        return e

    # separate threadgroup arrays while they fit in 32 KB; else movements outside loops reuse earlier arrays; else
    # (still too much) one pool for all, one more barrier per data movement. The first emission goes on reusing
    # arrays from the request that overflows when no earlier request could have reused one (movement.py smem):
    # what the second attempt would write, so that attempt is made only when the first one diverged from it.
    first = emitter(False)
    first.reuse_when_full = True
    try:
        module = first.generate()
    except OutOfResources:
        if first.reuse_diverged:
            try:
                module = emitter(False, reuse=True).generate()
            except OutOfResources:
                module = emitter(True).generate()
        else:
            module = emitter(True).generate()
    sys_scope = int_pointers = False
    for op in ir.select(facts.ops, _SCOPED_OR_CAST):  # (op.name, not a local `name`: that is the kernel's name)
        if op.name == "atomic" and op.attrs.get("scope") == "sys":
            sys_scope = True
        elif op.name == "cast" and op.result.type.element.is_ptr() and not op.operands[0].type.element.is_ptr():
            int_pointers = True
    abi = KernelABI(module.kernel_name, tuple(module.params), module.args_slot, module.args_size,
                    tuple(module.args_format), module.threads_per_threadgroup, module.threadgroup_memory)
    ck = CompiledKernel(
        name=name,
        asm=KernelAsm({"msl": module.msl}, lazy={"ir": fn.format, "ir_layouts": lambda: fn.format(layouts=plan.layout_of)}),
        abi=abi,
        metadata={"num_warps": num_warps, "layouts": module.layouts, "threads_per_threadgroup":
                  module.threads_per_threadgroup, "threadgroup_memory": module.threadgroup_memory,
                  "barriers": module.barriers, "notes": module.notes, "read_globals": read_globals,
                  "global_reads": global_reads,
                  "log_sites": module.log_sites, "dot_backend": dot_backend, "matmul2d_tiles": module.matmul2d_tiles,
                  "enable_fp_fusion": enable_fp_fusion, "msl_bounds_checks": msl_bounds_checks,
                  "uses_tensor_ops": module.uses_tensor_ops, "line_table": module.line_table,
                  "word_atomics": module.word_atomics, "offset_checks": module.offset_checks,
                  "tile_checks": module.tile_checks,
                  # pointers made from integer addresses (x.to(tl.pointer_type(...))): the cpu launcher reports
                  # addresses outside the launch's arguments
                  # atomics with scope='sys': device-scope fences, exact on the cpu backend, refused on metal
                  "sys_scope": sys_scope, "int_pointers": int_pointers},
        accesses=module.accesses,
    )
    dump_kernel(ck)
    return ck


