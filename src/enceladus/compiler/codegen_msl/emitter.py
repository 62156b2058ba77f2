"""MSL code generation from laid-out tile IR.

Every tile value in layout L is an array of ``L.parent.elems_per_thread`` registers per thread;
register ``e`` of a thread holds the element at the coordinates the layout gives. Elementwise ops
are loops over ``e`` (the Metal compiler unrolls them: the trip counts are constants). Scalars are
plain uniform variables. Broadcasts, ``expand_dims``, transposes, splats and ``arange`` cost
nothing: they are expressions over the same registers or over the coordinates. Control flow is
structured C (``for``, ``if``, ``while``) whose conditions are uniform across the threadgroup.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import compress, count
from operator import itemgetter
from os.path import commonprefix
from typing import Any

from ...language import dtypes as D
from ...language.dtypes import dtype
from .. import ir
from ..kernel import Param
from ..layout import WARP_SIZE, BlockedLayout, TileLayout
from ..msl_types import MSL_TYPE, const_literal, msl_type, safe_name
from ..op_traits import OPS, VIEW, ops_where
from ..passes.axis_info import AxisInfo
from ..passes.device_order import DeviceOrderPlan, pointer_roots, written_roots
from ..passes.layouts import LayoutPlan, operand_layout
from ..passes.offset_arith import offset_arithmetic
from . import fp8
from .barriers import BarrierPlanner
from .control import ControlFlowMixin
from .coords import CoordsMixin
from .debug import EXT_PARAM, DebugMixin
from .libdevice import CALLS as LIBDEVICE_CALLS
from .libdevice import EXTRA_HELPERS as LIBDEVICE_EXTRA_HELPERS
from .matmul import DotMixin
from .memory import Access, MemoryMixin
from .movement import MovementMixin
from .tables import BINARY_INFIX, FLOAT_CALL, FLOAT_CALL2, FLOAT_CALL3, HELPERS, NEEDS

LOG_PARAM = "__enc_log"  # the hidden device-log buffer of kernels that print or assert
_HIDDEN_BUFFERS = {LOG_PARAM: "enc_log", EXT_PARAM: "enc_ext"}  # their MSL names
_WRAPPING = frozenset({"add", "sub", "mul", "shl"})  # arithmetic that leaves {0, 1} on int1 operands
_WRAPPED = frozenset({"add", "sub", "mul", "shl", "neg", "abs"})  # integer ops computed in an unsigned type (_wrapping)
_NO_BF16_ARITH = frozenset({"cast", "bitcast", "select", "inline_msl"})  # ops that take bf16 operands as they are
# the ops elementwise_expr does not hand to _arith (whose bf16 and int1 cases it tests first for the others)
_EXPR_SPECIAL = _NO_BF16_ARITH | {"addptr", "shr", "libdevice", "umulhi"} | ops_where(layout=VIEW)
VIEW_OPS = ops_where(layout=VIEW)  # free: expressions over the operand's registers or coordinates
# the ops emit_tile_op / emit_scalar_op do not lower as elementwise arithmetic
_TILE_SPECIAL = VIEW_OPS | {"splat", "arange", "addptr", "load", "atomic"}
_SCALAR_SPECIAL = frozenset({"atomic", "load", "const", "program_id", "num_programs"})


@dataclass
class MSLModule:
    msl: str
    kernel_name: str
    params: list[Param]
    args_slot: int | None
    args_size: int
    args_format: list[tuple[str, int, str]]  # (param name, offset, dtype name)
    threads_per_threadgroup: int
    threadgroup_memory: int
    barriers: int
    accesses: list[Access] = field(default_factory=list)
    layouts: list[BlockedLayout] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    log_sites: list[dict] = field(default_factory=list)
    uses_tensor_ops: bool = False
    matmul2d_tiles: list[tuple] = field(default_factory=list)  # (M, N, K, A type, B type, simdgroups) per dot
    line_table: dict = field(default_factory=dict)  # {"file": kernel source, "lines": [[msl_line, py_line]]}
    # buffer params reached by 16-bit atomics (a loop on the containing 32-bit word): the runtime binds them so
    # that the word of every element lies in memory it owns (runtime/arguments.word_padded)
    word_atomics: list[str] = field(default_factory=list)
    # int32 arithmetic feeding a pointer offset: [msl_line, expression, op, left, right] (passes/offset_arith.py)
    offset_checks: list = field(default_factory=list)
    # tile accesses whose pointers provably lie in [start, start + n): [msl_line, start, n, align, pointer exprs]
    # (codegen_msl/memory.py tile_extent); the checked cpu backend tests the extent once per tile
    tile_checks: list = field(default_factory=list)


@dataclass(frozen=True)
class FunctionFacts:
    """What the code generator derives from the laid-out IR alone: computed once per compile and shared by the
    emitters of its attempts (separate arrays, reuse, one pool; see driver.py)."""

    ops: list[ir.Op]  # every op, depth first (ir.walk)
    roots: dict[int, str]  # pointer value id -> the pointer argument it derives from (device_order.pointer_roots)
    written: frozenset[str]  # pointer arguments stored to or changed atomically
    used_values: frozenset[int]  # ids of values some op reads
    word_roots: tuple[str, ...]  # buffers reached by 8/16-bit atomics (MSLModule.word_atomics), sorted
    offset_values: frozenset[int]  # int32 results that feed pointer offsets (passes/offset_arith.py)


def function_facts(fn: ir.Function, roots: dict[int, str] | None = None,
                   ops: list[ir.Op] | None = None) -> FunctionFacts:
    """``ops``: ``ir.walk(fn.ops)`` when the caller has it (the layout plan's)."""
    ops = ir.walk(fn.ops) if ops is None else ops
    roots = pointer_roots(fn) if roots is None else roots
    word_roots = {roots.get(op.operands[0].id) for op in ir.select(ops, _ATOMIC)
                  if op.operands[0].type.element.element_ty.itemsize < 4}
    if None in word_roots:  # a pointer of unknown origin: every 8- and 16-bit buffer is bound padded
        word_roots = {a.name for a in fn.args if a.type.is_ptr and a.type.element.element_ty.itemsize < 4}
    return FunctionFacts(ops, roots, frozenset(written_roots(fn, roots, ops)),
                         ir.operand_ids(ops), tuple(sorted(word_roots)),
                         offset_arithmetic(fn, ops))


_ATOMIC = frozenset({"atomic"})
_LINENO = itemgetter(1)  # an ir.Loc's line
_FILENAME = itemgetter(0)  # an ir.Loc's file

# integer types whose wrapping arithmetic is computed in these unsigned types (uint32/uint64 wrap by themselves)
_WRAP_UNSIGNED = {"int8": "uint", "int16": "uint", "uint8": "uint", "uint16": "uint", "int32": "uint", "int64": "ulong"}
_SCALAR_SIZE = {"int1": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint8": 1, "uint16": 2, "uint32": 4,
                "uint64": 8, "fp16": 2, "bf16": 2, "fp32": 4}


class MSLEmitter(CoordsMixin, ControlFlowMixin, MemoryMixin, MovementMixin, DotMixin, DebugMixin):
    def __init__(self, fn: ir.Function, num_warps: int, axis: dict[int, AxisInfo], plan: LayoutPlan, header: str,
                 pooled: bool = False, reuse: bool = False, order: DeviceOrderPlan | None = None,
                 facts: FunctionFacts | None = None):
        self.fn = fn
        self.facts = facts if facts is not None else function_facts(fn)
        self.num_warps = num_warps
        self.axis = axis
        self.plan = plan
        self.order = order or DeviceOrderPlan()  # where device-memory barriers go (passes/device_order.py)
        self.device_barriers = self.order.barriers_before  # op -> why a device-memory barrier precedes it
        self.header = header
        self.body: list[str] = []
        self.body_locs: list[ir.Loc | None] = []  # the op each body line comes from (the checks' line table)
        self.current_op: ir.Op | None = None
        self.current_loc: ir.Loc | None = None  # current_op's loc (what emit records for each line)
        self.rules: dict[str, Any] = {}  # op name -> its bound emit rule (OPS[name].emit), looked up once per emission
        self.preamble: list[str] = []
        self.helpers: set[str] = set()
        self.helper_code: list[str] = []
        self.smem_decls: list[str] = []
        self.smem_bytes = 0
        self.barriers = 0
        self.refs: dict[tuple[int, TileLayout | None], str] = {}
        self.layout_ids: dict[BlockedLayout, int] = {}
        self.coord_emitted: set[tuple[int, int]] = set()
        self.raw_coords: dict[tuple, str] = {}  # raw_coord's answers: (layout, d, e) -> the coordinate
        self.accesses: list[Access] = []
        self.notes: list[str] = []
        self.uses_pid = False
        self.uses_npid = False
        self.tmp = 0
        self.depth = 0  # nesting of loops: threadgroup memory reused across iterations needs a leading barrier
        self.indent = 1
        self.written_args: set[str] = set()
        self.uses_tensor_ops = False  # Metal 4 matmul2d (needs MSL 4.0 and the tensor headers)
        self.log_sites: list[dict] = []  # tl.device_print / tl.device_assert call sites (see debug.py)
        self.helpers_emitted: set[str] = set()
        self.pooled = pooled  # threadgroup memory shared by all data movements (when separate arrays exceed 32 KB)
        # before pooling: a movement outside every loop reuses the array of an earlier one outside every loop
        self.reuse = reuse
        # separate arrays until the request that overflows 32 KB, then reuse from there on (movement.py smem) when no
        # earlier request could have reused an array: then the code is what an emission with ``reuse`` writes, and one
        # emission decides both attempts (driver.py); ``reuse_diverged``: an earlier request could have
        self.reuse_when_full = False
        self.reuse_diverged = False
        self.smem_arrays: list[tuple[str, str, int, int]] = []  # (name, element type, count, movement) at depth 0
        self.pool_offset = 0
        self.smem_uses = 0
        self.carried_runs: dict[str, tuple[str, int]] = {}  # ref of a run-compressed pointer tile -> (name, run)
        self.sync = BarrierPlanner()  # the barriers before data movements, decided once the body is written
        self.barrier_marks: list[tuple[list[str], int, int]] = []  # (body list, line index, candidate id) per marker
        self.matmul2d_tiles: list[tuple] = []
        # matmul2d accumulators carried across a loop in a cooperative tensor (LayoutPlan.coop): the names the loop's
        # dot uses (matmul.py), and the values that exist only inside that tensor (never in registers)
        self.coop_state: dict[int, dict] = {}
        self.coop_hidden: set[int] = set()
        self.fragments_via_store = False  # set from the device probes (see driver.py and matmul.py)
        self.atomic_u64_minmax = True  # the device has 64-bit atomic_max/min (driver: device probes)
        self.device_fences = False  # a non-relaxed gpu-scope atomic: written buffers are coherent(device)
        self.bounds_checks = False  # msl_bounds_checks: every device access checked in the MSL (debug.py in_bounds)
        self.uses_extents = False  # an access was checked: the kernel takes the extents buffer
        self.offset_values = self.facts.offset_values  # int32 results that feed pointer offsets
        self.offset_exprs: dict[str, tuple[str, str, str]] = {}  # their MSL expressions -> (op, left, right)
        # tile accesses of proven extent (memory.py tile_extent): (the emitted line, its entry); the line is kept as
        # the object itself, which passes that rewrite the body (place_barriers) keep
        self.tile_checks: list[tuple[str, list]] = []
        self.pending_tile: list | None = None  # the entry of the access emit_access writes next (memory.py)
        self.affine_forms: dict = {}  # memory.py _affine's answers: (value id, n) -> form
        self.may_convert: set[int] = set()  # (values_that_may_convert, once the emission starts)

    # --- text -----------------------------------------------------------------------------------------
    def emit(self, line: str) -> None:
        self.body.append("    " * self.indent + line)
        self.body_locs.append(self.current_loc)

    def fresh(self, prefix: str = "t") -> str:
        self.tmp += 1
        return f"{prefix}{self.tmp}"

    def barrier(self) -> None:
        self.sync.barrier()
        self.barriers += 1
        self.emit("threadgroup_barrier(mem_flags::mem_threadgroup);")

    def place_barriers(self) -> None:
        """Turn the candidate barriers before data movements into barriers where a region they write may still
        be in use (barriers.py), and drop the others."""
        needed = self.sync.resolve()
        # the marker lines of the body (those written into a combine function's body stay there as comments)
        marks = [(i, cid) for lines, i, cid in self.barrier_marks if lines is self.body]
        if marks:
            body, locs = [], []
            start = 0
            for i, cid in marks:  # the lines between marks are kept as they are (tile_checks holds them by identity)
                body += self.body[start:i]
                locs += self.body_locs[start:i]
                start = i + 1
                if cid in needed:
                    line = self.body[i]
                    body.append(line[: len(line) - len(line.lstrip())] + "threadgroup_barrier(mem_flags::mem_threadgroup);")
                    locs.append(self.body_locs[i])
            body += self.body[start:]
            locs += self.body_locs[start:]
            self.body, self.body_locs = body, locs
        self.barriers += len(needed)

    # --- values ---------------------------------------------------------------------------------------------
    def ref(self, v: ir.Value, layout: TileLayout | None, e: str = "e") -> str:
        """An expression for register ``e`` of ``v`` in ``layout`` (or the scalar ``v``)."""
        if not v.type.is_tile:
            return self.refs[(v.id, None)]
        try:
            return self.refs[(v.id, layout)].replace("{e}", e)
        except KeyError:
            raise KeyError(f"internal error: {v!r} is not available in layout {layout}") from None

    def declare_tile(self, v: ir.Value, layout: TileLayout, name: str | None = None) -> str:
        name = name or (f"v{v.id}" if (v.id, layout) not in self.refs and len(self.plan.needs.get(v.id, ())) <= 1
                        else f"v{v.id}_{self.fresh('l')}")
        self.emit(f"{msl_type(v.type.element)} {name}[{layout.parent.elems_per_thread}];")
        self.refs[(v.id, layout)] = name + "[{e}]"
        return name

    def loop(self, layout: TileLayout, statement: str) -> None:
        self.emit(f"for (int e = 0; e < {layout.parent.elems_per_thread}; ++e) {statement}")

    # --- ops ------------------------------------------------------------------------------------------------
    def emit_block(self, block: ir.Block) -> None:
        emit_op = self.emit_op
        for op in block.ops:
            emit_op(op)

    def emit_op(self, op: ir.Op) -> None:
        """Lower ``op`` with its emit rule from the op-trait table, then convert its results to the other
        layouts the plan demands of them."""
        self.current_op = op  # refusals during emission point at the op that needs the resource
        self.current_loc = op.loc
        results = op.results
        if self.coop_hidden and op.name != "dot" and results and results[0].id in self.coop_hidden:
            return  # acc + tl.dot(a, b): folded into the dot's run on the cooperative tensor
        if self.device_barriers and op in self.device_barriers:
            # program order of device accesses that different threads make (passes/device_order.py)
            self.barriers += 1
            self.notes.append(f"device-memory barrier before line {op.loc.lineno if op.loc else '?'}: "
                              f"{self.device_barriers[op]}")
            self.emit("threadgroup_barrier(mem_flags::mem_device);  // program order of device memory")
        rule = self.rules.get(op.name)
        if rule is None:
            rule = self.rules[op.name] = getattr(self, OPS[op.name].emit)
        rule(op)
        for r in results:
            if r.id in self.may_convert:
                self.convert_to_needs(results)
                break

    def emit_value(self, op: ir.Op) -> None:
        """Ops computed register by register (elementwise, sources, views, loads, atomics) and scalars."""
        if not op.results:
            return
        r = op.results[0]
        if not r.type.is_tile:
            self.emit_scalar_op(op)
            return
        plan = self.plan
        if plan.pure.get(r.id, False):
            for layout in plan.needs.get(r.id, ()):
                self.emit_tile_op(op, layout)
            return
        self.emit_tile_op(op, plan.homes[r.id])

    def emit_yield(self, op: ir.Op) -> None:
        """Nothing: the op that owns the region assigns the yielded values (``assign_yields``)."""

    def emit_barrier(self, op: ir.Op) -> None:
        """tl.debug_barrier orders device memory too, like CUDA's __syncthreads."""
        self.sync.barrier()
        self.barriers += 1
        self.emit("threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);")

    def convert_to_needs(self, values: list[ir.Value]) -> None:
        """Make values with a home available in the other layouts demanded of them."""
        needs, homes, refs = self.plan.needs, self.plan.homes, self.refs
        for v in values:
            vid = v.id
            if vid in self.may_convert and v.type.is_tile and vid not in self.coop_hidden:
                for layout in needs[vid]:
                    if (vid, layout) not in refs:
                        self.emit_conversion(v, homes.get(vid), layout)

    def values_that_may_convert(self) -> set[int]:
        """The values convert_to_needs must look at. Most need nothing: a pure value is computed in every layout
        demanded of it (emit_value), and most others are demanded in their home only (that very object)."""
        plan = self.plan
        needs, homes, pure = plan.needs, plan.homes, plan.pure
        impure = set(needs).difference(compress(pure, pure.values()))  # (by C iterators: most values are pure)
        return {vid for vid in impure if (lst := needs[vid]) and (len(lst) > 1 or lst[0] is not homes.get(vid))}

    def emit_scalar_op(self, op: ir.Op) -> None:
        r = op.results[0]
        name = op.name
        if name not in _SCALAR_SPECIAL:  # the common case: arithmetic on uniform scalars
            refs = self.refs
            expr = self.elementwise_expr(op, [refs[(o.id, None)] for o in op.operands])
        elif name == "atomic":
            self.emit_atomic(op, None)
            return
        elif name == "load":
            ptr = self.refs[(op.operands[0].id, None)]
            if len(op.operands) == 3:
                m, o = (self.refs[(x.id, None)] for x in op.operands[1:])
                expr = f"({m} ? *({ptr}) : {o})"
            else:
                expr = f"*({ptr})"
            self.accesses.append(Access("load", op.loc.lineno if op.loc else None, str(r.type.element), (), 1,
                                        r.type.element.itemsize, "scalar pointer: one load shared by all threads"))
            if self._writes_through(op.operands[0]):
                self.emit_uniform_load(r, expr)
                return
        elif name == "const":
            expr = const_literal(op.attrs["value"], r.type.element)
        elif name == "program_id":
            self.uses_pid = True
            expr = f"int(enc_pid.{'xyz'[op.attrs['axis']]})"
        else:  # num_programs
            self.uses_npid = True
            expr = f"int(enc_npid.{'xyz'[op.attrs['axis']]})"
        var = f"v{r.id}"
        ctype = "auto" if r.type.is_ptr else MSL_TYPE[r.type.element.name]  # pointers keep their argument's constness
        self.emit(f"const {ctype} {var} = {expr};")
        self.refs[(r.id, None)] = var

    def emit_uniform_load(self, r: ir.Value, expr: str) -> None:
        """A scalar loaded from memory this kernel writes: thread 0 loads it and shares it, so that every thread
        sees the same value (another thread's store or atomic may land between two threads' loads, and a branch
        on values that differ between threads would put the barriers inside it out of reach of some threads)."""
        t = msl_type(r.type.element)
        self.smem_begin()
        buf = self.smem("uchar" if r.type.element.is_bool() else t, 1, f"scalar load %{r.id} shared by all threads",
                        max(1, r.type.element.itemsize))
        self.emit(f"if (enc_tid == 0) {buf}[0] = {expr};")
        self.barrier()
        self.emit(f"const {t} v{r.id} = {buf}[0];")
        self.refs[(r.id, None)] = f"v{r.id}"

    def emit_tile_op(self, op: ir.Op, layout: TileLayout) -> None:
        """``op``'s result in ``layout`` (each op is emitted once, in distinct layouts: its key is new)."""
        r = op.results[0]
        key = (r.id, layout)
        name = op.name
        if name not in _TILE_SPECIAL:  # the common case
            self.emit_elementwise(op, layout, key)
        elif name == "splat":  # (of a scalar)
            self.refs[key] = self.refs[(op.operands[0].id, None)]
        elif name in VIEW_OPS:
            if name == "join":
                c = self.value_coord(layout, r.type.shape, len(r.type.shape) - 1, "{e}")
                sub = TileLayout(layout.parent, layout.dims[:-1])
                a, b = (self.ref(o, sub, "{e}") for o in op.operands)
                self.refs[key] = f"({c} == 0 ? {a} : {b})"
            else:
                self.refs[key] = self.ref(op.operands[0], operand_layout(op, 0, layout), "{e}")
        elif name == "arange":
            c = self.value_coord(layout, r.type.shape, 0, "{e}")
            self.refs[key] = f"({op.attrs['start']} + {c})" if op.attrs["start"] else c
        elif name == "addptr":
            if self.plan.pure.get(r.id, False):  # free: an expression over the operands
                self.refs[key] = f"({self.ref(op.operands[0], layout, '{e}')} + {self.ref(op.operands[1], layout, '{e}')})"
            else:
                self.emit_elementwise(op, layout, key)
        elif name == "load":
            self.emit_load(op, layout)
        else:  # atomic
            self.emit_atomic(op, layout)

    def emit_elementwise(self, op: ir.Op, layout: TileLayout, key: tuple[int, TileLayout]) -> None:
        """An elementwise tile op: one loop over the registers (``key``: its result's refs key, not there yet)."""
        r = op.results[0]
        name = op.name
        refs = self.refs
        operands = []  # (ref() for each operand, without a call each)
        for o in op.operands:
            ref = refs.get((o.id, layout if o.type.is_tile else None))
            operands.append(self.ref(o, layout) if ref is None else ref.replace("{e}", "e"))
        expr = self.elementwise_expr(op, operands)
        n = layout.parent.elems_per_thread
        if r.type.is_ptr:
            var = self.fresh("p")
            self.emit(f"{msl_type(r.type.element, const=not self._writes_through(r))} {var}[{n}];")
        else:  # declare_tile's name and declaration
            var = f"v{r.id}" if len(self.plan.needs.get(r.id, ())) <= 1 else f"v{r.id}_{self.fresh('l')}"
            self.emit(f"{MSL_TYPE[r.type.element.name]} {var}[{n}];")
        self.refs[key] = var + "[{e}]"
        if name == "recip":  # one division per divisor value (passes/reciprocal_division.py)
            self.loop_distinct(layout, r.type.shape, var, expr)
        elif name == "fdiv_recip":
            self.emit_div_recip(layout, var, operands, expr)
        else:
            self.emit(f"for (int e = 0; e < {n}; ++e) {var}[e] = {expr};")

    def emit_div_recip(self, layout: TileLayout, var: str, operands: list[str], expr: str) -> None:
        """Quotients by a shared divisor (passes/reciprocal_division.py). One test per thread, before any
        quotient: if every |x| <= enc_div_limit(d, r) (2^126 |d|, or -1 where r = inf), every x * r is below
        2^127, so ``enc_div_recip`` would return x * r for every register (docs/floating_point.md), and the
        tile is computed as straight-line multiplies; otherwise every register goes through
        ``enc_div_recip``, as before. The bits are those of ``enc_div_recip`` either way, with one branch per
        tile instead of one per register, and no register holds both x and its quotient for long (testing
        the quotients instead kept a thread's x and x * r live together: 37 registers instead of 32 for
        softmax at 4 SIMD groups on the GPU proxy)."""
        x, d, rr = operands
        slow = self.fresh("slow")
        self.emit(f"bool {slow} = false;")
        self.loop(layout, f"{slow} = {slow} | !(fabs({x}) <= enc_div_limit({d}, {rr}));")
        self.emit(f"if ({slow}) {{")
        self.indent += 1
        self.loop(layout, f"{var}[e] = {expr};")
        self.indent -= 1
        self.emit("} else {")
        self.indent += 1
        self.loop(layout, f"{var}[e] = {x} * {rr};")
        self.indent -= 1
        self.emit("}")

    def loop_distinct(self, layout: TileLayout, shape: tuple[int, ...], var: str, expr: str) -> None:
        """``var[e] = expr`` evaluated once per distinct value a thread holds: registers that differ only along a
        dimension the value does not vary on (a slice's dropped dimension, or one of size 1) hold the same
        element, so the first register of each such run computes it and the others copy it."""
        p = layout.parent
        firsts, offsets = [], []
        for d in range(len(p.shape)):
            if p.per_thread[d] > 1 and (d not in layout.dims or shape[layout.dims.index(d)] == 1):
                digit = self.digit(p, d, "e")
                firsts.append(f"{digit} == 0")
                offsets.append(f"{digit} * {p.slot_stride(d)}")
        if not firsts:
            self.loop(layout, f"{var}[e] = {expr};")
            return
        self.loop(layout, f"{{ if (!({' && '.join(firsts)})) continue; {var}[e] = {expr}; }}")
        self.loop(layout, f"{{ const int b = e - {' - '.join(offsets)}; {var}[e] = {var}[b]; }}")

    def _writes_through(self, v: ir.Value | None) -> bool:
        root = self.roots.get(v.id) if v is not None else None
        return root is None or root in self.fn_written

    # --- arithmetic ---------------------------------------------------------------------------------------------
    def elementwise_expr(self, op: ir.Op, a: list[str]) -> str:
        """The MSL expression of an elementwise op given its operands' expressions."""
        name = op.name
        r = op.results[0]
        rt = r.type.element
        src = op.operands[0].type.element if op.operands else None
        if name not in _EXPR_SPECIAL and src is not None:  # arithmetic: the bf16 and int1 cases, then _arith
            sname = src.name
            if sname == "bf16":  # bfloat converts only to/from float in MSL: compute in float, round once
                inner = self._arith(name, [f"float({x})" for x in a], float_type=True, signed=True, src=src)
                return inner if rt.name == "int1" else f"static_cast<bfloat>({inner})"
            if name in _WRAPPING:
                if sname == "int1" and rt.name == "int1":  # int1 is a 1-bit integer: True + True == False
                    return f"(((int({a[0]}) {BINARY_INFIX[name]} int({a[1]})) & 1) != 0)"
                kind = src.kind
                expr = self._arith(name, a, float_type=kind == "float", signed=kind == "int", src=src)
                if rt.name == "int32" and r.id in self.offset_values:
                    self.offset_exprs[expr] = (name, a[0], a[1])  # the checked cpu backend computes it exactly
                return expr
            kind = src.kind
            return self._arith(name, a, float_type=kind == "float", signed=kind == "int", src=src)
        if name == "addptr":  # (a pointer operand: never bf16)
            return f"({a[0]} + {a[1]})"
        if src is not None and name not in _NO_BF16_ARITH and not src.is_ptr() and src.name == "bf16":
            # bfloat converts only to/from float in MSL: compute in float, round once
            inner = self._arith(name, [f"float({x})" for x in a], float_type=True, signed=True, src=src)
            return inner if rt.name == "int1" else f"static_cast<bfloat>({inner})"
        if name == "inline_msl":  # tl.inline_asm_elementwise: $i is the i-th argument ($0 the result)
            code = re.sub(r"\$(\d+)", lambda m: f"({a[int(m.group(1)) - 1]})", op.attrs["code"])
            return f"static_cast<{MSL_TYPE[rt.name]}>({code})"
        if name == "select":
            return f"({a[0]} ? {a[1]} : {a[2]})"
        if name == "cast":
            return self._cast(src, rt, a[0], op.attrs.get("rounding"))
        if name == "bitcast":
            return f"as_type<{MSL_TYPE[rt.name]}>({a[0]})"
        if name in VIEW_OPS:
            return a[0]
        if name == "shr" and "arithmetic" in op.attrs:  # the left operand's signedness decides, not the common type
            t = MSL_TYPE[rt.name]
            other = MSL_TYPE[(rt.name[1:] if rt.name.startswith("u") else "u" + rt.name)]
            return f"static_cast<{t}>({other}({a[0]}) >> {a[1]})"
        if name in _WRAPPING and rt.name == "int1" and src.name == "int1":  # int1 is a 1-bit integer: True + True == False
            return f"(((int({a[0]}) {BINARY_INFIX[name]} int({a[1]})) & 1) != 0)"
        if name == "libdevice":  # one MSL helper per function (codegen_msl/libdevice.py)
            fn = op.attrs["fn"]
            self.helpers.add("enc_libdevice")
            self.helpers.update(LIBDEVICE_EXTRA_HELPERS.get(fn, ()))
            return LIBDEVICE_CALLS[fn].format(*a)
        if name == "umulhi":  # the high word of the unsigned product, whatever the signedness
            t = MSL_TYPE[rt.name]
            u = t if rt.is_int_unsigned() else "u" + t
            if rt.primitive_bitwidth == 64:
                self.helpers.add("enc_umulhi64")
                return f"as_type<{t}>(enc_umulhi64(as_type<ulong>({a[0]}), as_type<ulong>({a[1]})))"
            return f"as_type<{t}>(mulhi(as_type<{u}>({a[0]}), as_type<{u}>({a[1]})))"
        kind = src.kind
        expr = self._arith(name, a, float_type=kind == "float", signed=kind == "int", src=src)
        if name in _WRAPPING and r.id in self.offset_values and rt.name == "int32":
            self.offset_exprs[expr] = (name, a[0], a[1])  # the checked cpu backend computes it exactly
        return expr

    def _arith(self, name: str, a: list[str], float_type: bool, signed: bool, src: Any = None) -> str:
        if name in _WRAPPED and not float_type and src is not None:
            wide = _WRAP_UNSIGNED.get(src.name)
            if wide is not None:
                return self._wrapping(name, a, src.name, wide)
        infix = BINARY_INFIX.get(name)
        if infix is not None:
            return f"({a[0]} {infix} {a[1]})"
        if name in ("idiv", "mod"):
            self.helpers.add("enc_div")
            fn = ("enc_sdiv" if signed else "enc_udiv") if name == "idiv" else ("enc_srem" if signed else "enc_urem")
            return f"{fn}({a[0]}, {a[1]})"
        if name == "fmod":
            return f"fmod({a[0]}, {a[1]})"
        if name in ("max", "min"):
            return f"{'f' if float_type else ''}{name}({a[0]}, {a[1]})"
        if name == "neg":
            return f"(-{a[0]})"
        if name == "not":
            return f"(!{a[0]})" if src is not None and src.is_bool() else f"(~{a[0]})"
        if name == "abs":
            return f"fabs({a[0]})" if float_type else f"abs({a[0]})"
        if name == "fma":
            return f"fma({a[0]}, {a[1]}, {a[2]})"
        if name in NEEDS:
            self.helpers.add(NEEDS[name])
        if name in FLOAT_CALL:
            return FLOAT_CALL[name].format(a[0])
        if name in FLOAT_CALL2:
            return FLOAT_CALL2[name].format(a[0], a[1])
        if name in FLOAT_CALL3:
            return FLOAT_CALL3[name].format(*a)
        raise NotImplementedError(f"no MSL rule for op '{name}'")

    def _wrapping(self, name: str, a: list[str], src: str, u: str) -> str:
        """Integer + - * << and negation, which Triton defines as wrapping, computed in an unsigned type: MSL
        leaves signed overflow undefined (spec 4 §3.1), and 8/16-bit operands are promoted to int, where
        e.g. 65535 * 65535 overflows. int32/int64 come back bit for bit (as_type), narrower types by a cast."""
        t = MSL_TYPE[src]
        back = "as_type" if src in ("int32", "int64") else "static_cast"
        if name in ("add", "sub", "mul"):
            return f"{back}<{t}>({u}({a[0]}) {BINARY_INFIX[name]} {u}({a[1]}))"
        if name == "shl":
            return f"{back}<{t}>({u}({a[0]}) << {a[1]})"
        if name == "neg":
            return f"{back}<{t}>({u}(0) - {u}({a[0]}))"
        if src not in ("int32", "int64"):  # abs of a narrower type is computed in int: no overflow
            return f"abs({a[0]})"
        return f"{back}<{t}>({a[0]} < 0 ? {u}(0) - {u}({a[0]}) : {u}({a[0]}))"  # abs(INT_MIN) == INT_MIN, as in Triton

    def _cast(self, src: dtype, dst: dtype, x: str, rounding: str | None = None) -> str:
        if dst.is_ptr():  # from another pointer or from a 64-bit address (docs/memory.md, integer addresses)
            return f"(({msl_type(dst)})({x}))"
        if src.is_ptr():  # the address
            return f"(({MSL_TYPE[dst.name]})({x}))"
        if src.is_fp8() or dst.is_fp8():  # through float32, in integer code (codegen_msl/fp8.py)
            self.helpers.add("enc_fp8")
            if src.is_fp8():
                x, src = fp8.decode(src, x), D.float32
                if dst.is_fp32():
                    return x
            if dst.is_fp8():
                return fp8.encode(dst, x if src.is_fp32() else f"float({x})", rounding)
        t = MSL_TYPE[dst.name]
        if dst.is_bool():
            return f"({'float(' + x + ')' if src.is_bf16() else x} != 0)"
        if src.is_bf16() or (dst.is_bf16() and not src.is_fp32()):
            return f"static_cast<{t}>(static_cast<float>({x}))"
        return f"static_cast<{t}>({x})"

    def offset_check_lines(self, first: int) -> list[list]:
        """``[msl_line, expression, op, left, right]`` for every body line (from MSL line ``first``) that holds the
        expression of an int32 offset computation, in line order and, within a line, in the order the expressions
        were made (metadata["offset_checks"])."""
        if not self.offset_exprs:
            return []
        text = "\n".join(self.body)
        exprs = list(self.offset_exprs.items())
        single = [(j, expr) for j, (expr, _) in enumerate(exprs) if "\n" not in expr]  # no line can hold the others
        if not single:
            return []
        found = []  # (position in the text, expression index) of the occurrences
        prefix = commonprefix([expr for _, expr in single]) if len(single) > 2 else ""
        if len(prefix) >= 8:
            # the usual case (they all begin "as_type<int>(uint("): one scan of the text for the common prefix, and
            # at each place the expressions that begin with the text there (grouped by their first k characters)
            k = min(len(expr) for _, expr in single)
            heads: dict[str, list[tuple[int, str]]] = {}
            for j, expr in single:
                heads.setdefault(expr[:k], []).append((j, expr))
            pos = text.find(prefix)
            while pos != -1:
                for j, expr in heads.get(text[pos:pos + k], ()):
                    if text.startswith(expr, pos):
                        found.append((pos, j))
                pos = text.find(prefix, pos + 1)
        else:  # each expression searched for in the whole text, once per line that holds it
            for j, expr in single:
                pos = text.find(expr)
                while pos != -1:
                    found.append((pos, j))
                    end = text.find("\n", pos)
                    pos = -1 if end == -1 else text.find(expr, end + 1)
        found.sort()
        hits = set()  # (the MSL line: the newlines before it, expression index): one entry per line and expression
        line = at = 0
        for pos, j in found:  # the newlines counted once through the text
            line += text.count("\n", at, pos)
            at = pos
            hits.add((line, j))
        return [[first + k, exprs[j][0], *exprs[j][1]] for k, j in sorted(hits)]

    # --- the kernel -------------------------------------------------------------------------------------------
    def generate(self) -> MSLModule:
        fn = self.fn
        params: list[Param] = []
        struct_fields: list[tuple[Param, str, int, str]] = []  # (param, MSL name, size, type name) per scalar
        buffer_names: dict[str, str] = {}  # pointer argument -> its MSL name
        slot = 0
        self.roots = self.facts.roots
        self.fn_written = set(self.facts.written)
        self._used_values = self.facts.used_values
        self.may_convert = self.values_that_may_convert()
        for a in fn.args:
            cname = safe_name(a.name)
            if a.type.is_ptr:
                params.append(Param(a.name, "buffer", "*" + a.type.element.element_ty.name, slot=slot))
                buffer_names[a.name] = cname
                slot += 1
            else:
                tname = a.type.element.name
                params.append(Param(a.name, "scalar", tname))
                struct_fields.append((params[-1], cname, _SCALAR_SIZE[tname], tname))
            self.refs[(a.id, None)] = cname
        self.emit_block(fn.body)
        self.place_barriers()
        if self.log_sites:  # the device log: a hidden buffer after the pointer arguments
            params.insert(sum(1 for p in params if p.kind == "buffer"), Param(LOG_PARAM, "buffer", "*uint32", slot=slot))
            self.fn_written.add(LOG_PARAM)
            slot += 1
        if self.uses_extents:  # msl_bounds_checks: each pointer argument's [base, end) bytes, after the log
            params.insert(sum(1 for p in params if p.kind == "buffer"), Param(EXT_PARAM, "buffer", "*uint64", slot=slot))
            slot += 1
        for p in params:
            p.writes = p.name in self.fn_written
        offset = 0
        fields = []
        args_format = []
        for p, cname, size, tname in struct_fields:
            offset = (offset + size - 1) // size * size
            p.offset = offset
            fields.append(f"    {'uchar' if tname == 'int1' else MSL_TYPE[tname]} {cname};")
            args_format.append((p.name, offset, tname))
            offset += size
        max_align = max((f[2] for f in struct_fields), default=1)
        args_size = (offset + max_align - 1) // max_align * max_align
        kname = safe_name(fn.name)
        sig_lines = []
        for p in params:
            if p.kind == "buffer":
                const = "" if p.writes else "const "
                # another threadgroup's writes become visible to this one only through coherent(device) buffers
                # (MSL spec 4 §4.8); only written buffers can carry what another threadgroup published
                coherent = "coherent(device) " if p.writes and self.device_fences else ""
                cname = _HIDDEN_BUFFERS.get(p.name) or buffer_names[p.name]
                sig_lines.append(f"    {coherent}device {const}{MSL_TYPE[p.type[1:]]}* {cname} [[buffer({p.slot})]]")
        args_slot = None
        unpack = []
        if struct_fields:
            args_slot = slot
            sig_lines.append(f"    constant {kname}_args& enc_args [[buffer({slot})]]")
            for _, cname, _, tname in struct_fields:
                if tname == "int1":
                    unpack.append(f"    const bool {cname} = enc_args.{cname} != 0;")
                else:
                    unpack.append(f"    const {MSL_TYPE[tname]} {cname} = enc_args.{cname};")
        if self.uses_pid:
            sig_lines.append("    uint3 enc_pid [[threadgroup_position_in_grid]]")
        if self.uses_npid:
            sig_lines.append("    uint3 enc_npid [[threadgroups_per_grid]]")
        sig_lines.append("    uint enc_tid [[thread_index_in_threadgroup]]")
        # lanes and SIMD groups as Metal numbers them (the spec does not promise tid % 32; MSL_AUDIT D5)
        sig_lines.append("    uint enc_lane [[thread_index_in_simdgroup]]")
        sig_lines.append("    uint enc_warp [[simdgroup_index_in_threadgroup]]")
        # IEEE-safe arithmetic whatever the compile options of the path that compiles this MSL (our Metal
        # backend, torch.mps.compile_shader, MLX): the spelling production Metal code uses (MSL 3.2, macOS 15+)
        out = [self.header, "#include <metal_stdlib>"]
        if self.uses_tensor_ops:
            out += ["#include <metal_tensor>", "#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>"]
        out += ["#pragma METAL fp math_mode(safe)", "#pragma METAL fp contract(off)", "using namespace metal;"]
        if self.uses_tensor_ops:
            out.append("using namespace mpp::tensor_ops;")
        out.append("")
        for h in sorted(self.helpers):
            out += [HELPERS[h], ""]
        for code in self.helper_code:
            out += [code, ""]
        if struct_fields:
            out += [f"struct {kname}_args {{", *fields, "};", ""]
        # the threadgroup size is fixed at compile time: the compiler may budget registers for it (MSL_AUDIT C4)
        out.append(f"[[max_total_threads_per_threadgroup({WARP_SIZE * self.num_warps})]]")
        out.append(f"kernel void {kname}(")
        out.append(",\n".join(sig_lines) + ")")
        out.append("{")
        out += unpack
        out += ["    " + d for d in self.smem_decls]
        if self.pooled:
            # float4 elements give the pool 16-byte alignment for every element type carved out of it
            out.append(f"    threadgroup float4 enc_pool4[{(self.smem_bytes + 15) // 16}];")
            out.append("    threadgroup uchar* enc_pool = (threadgroup uchar*)enc_pool4;")
        out.append("    (void)enc_lane; (void)enc_warp;")
        out += ["    " + line for line in self.preamble]
        first = "\n".join(out).count("\n") + 2  # MSL line of the first body line
        out += self.body
        out.append("}")
        tile_checks: list = []
        tiles = {id(text): entry for text, entry in self.tile_checks}
        if "\n" not in "".join(self.body):  # one MSL line per body entry
            locs = self.body_locs
            if not all(locs):  # (a line without a loc: None; every Loc is a non-empty tuple)
                lines = [[first + k, loc.lineno] for k, loc in enumerate(locs) if loc is not None]
            else:  # [MSL line, Python line] per body line, made by C iterators
                lines = list(map(list, zip(count(first), map(_LINENO, locs))))
            files = set(map(_FILENAME, filter(None, locs)))
            if tiles:  # as line_table finds them, in line order
                tile_checks = self.tile_check_lines(first, tiles)
        else:
            lines, files = self.line_table(first, tiles, tile_checks)
        offset_checks = self.offset_check_lines(first)
        line_table = {"file": files.pop(), "lines": lines} if len(files) == 1 else {}
        out.append("")  # the text ends with a newline
        return MSLModule("\n".join(out), kname, params, args_slot, args_size, args_format,
                         WARP_SIZE * self.num_warps, self.smem_bytes, self.barriers, self.accesses,
                         list(self.layout_ids), self.notes, self.log_sites, self.uses_tensor_ops,
                         list(dict.fromkeys(self.matmul2d_tiles)), line_table, list(self.facts.word_roots), offset_checks,
                         tile_checks)

    def tile_check_lines(self, first: int, tiles: dict[int, list]) -> list[list]:
        """[MSL line, *entry] for each body line (one MSL line each, from line ``first``) that ``tiles`` (id of its
        text -> entry) names, in line order."""
        body = self.body
        found = compress(count(), map(tiles.__contains__, map(id, body)))  # (the lines' indices, by C iterators)
        return [[first + k, *tiles[id(body[k])]] for k in found]

    def line_table(self, first: int, tiles: dict[int, list], tile_checks: list) -> tuple[list, set]:
        """The [MSL line, Python line] pairs of the body (from MSL line ``first``) and the files they come from;
        appends [MSL line, *entry] to ``tile_checks`` for each body line that ``tiles`` (id of its text -> entry)
        names."""
        lines, files = [], set()
        at = first
        for text, loc in zip(self.body, self.body_locs):
            n = text.count("\n") + 1
            if loc is not None:
                files.add(loc.filename)
                if n == 1:
                    lines.append([at, loc.lineno])
                else:
                    lines += [[at + k, loc.lineno] for k in range(n)]
            if id(text) in tiles and n == 1:
                tile_checks.append([at, *tiles[id(text)]])
            at += n
        return lines, files
