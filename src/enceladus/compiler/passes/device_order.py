"""Device-memory order inside one program: where a ``threadgroup_barrier(mem_flags::mem_device)`` must go.

Triton's semantics: within one program, global loads, stores and atomics take effect in program order (a load
then a store of the same address sees the old value). A program is a threadgroup of many threads, and the
layouts decide which thread touches which element: the thread that loads ``Z[0, j]`` to broadcast it over a
tile is not the thread that later stores ``Z[0, j]``. Nothing orders two threads' device accesses except a
barrier with ``mem_device`` (MSL spec 4 §6.9.1), so this pass finds every pair of accesses, at least one a
write, that may touch the same bytes from two different threads with no such barrier between them, and asks
the emitter for one before the later access (hoisted before the loop or ``if`` that holds it when the earlier
access is outside; loop-carried pairs are checked across one iteration to the next).

What "may touch the same bytes" means (docs/memory.md, "Order of device-memory accesses in a program"):

- **Aliasing**: any two pointer arguments may be the same array (the same NumPy array passed twice), so every
  address is an offset from one common base; arguments that overlap only partly (``x`` and ``x[1:]``) are
  outside the model, as with Triton on a GPU.
- **Offsets** are polynomials in the tile's index variables and the program's scalars (arguments, program
  ids, loop variables, loaded scalars). Two accesses whose offsets differ by an integer and whose index
  terms have integer coefficients are compared exactly, element by element. Two accesses with the same
  symbolic offsets (e.g. ``row * stride + cols`` in both) touch the same address only for the same element
  -- assuming, as every Triton kernel does, that runtime strides do not make distinct elements of one
  tile overlap. Anything else (offsets that differ by a runtime value, gathers through loaded indices) may
  coincide anywhere.
- **Threads**: a load is performed by every thread holding an element (replicas too), a store or atomic by
  the element's owner only (``layout`` of the access, as the emitter lowers it). Pairs where one thread does
  both accesses of every shared address need no barrier: elementwise kernels and matmul epilogues get none.

Whether one pair of accesses needs a barrier is decided in ``passes/access_pairs.py`` (``conflict``): most pairs
from the offsets and layouts alone, without building the thread maps (byte ranges that are apart, or one tile in
one layout that holds each element in exactly one register, addressed alike); the thread maps decide the rest.
This module walks the program in order and asks it for the pairs it meets.

A ``tl.dot`` consumes its operands: each thread writes the values it loaded to threadgroup memory before a
threadgroup barrier, so a later store by any thread cannot change what those loads returned (the loads are
dropped from the pending set when their layouts hold each element once). ``tl.debug_barrier`` orders device
memory itself. Barriers never order different programs (threadgroups); Triton gives no such guarantee either.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from itertools import chain, compress, repeat

from .. import ir
from ..layout import WARP_SIZE
from ..op_traits import TRANSPARENT, VIEW, ops_where
from .access_pairs import (
    Access,
    Poly,
    conflict,
    one_register_per_element,
    poly_add,
    poly_const,
    poly_key,
    poly_mul,
    poly_rename,
    poly_scale,
    poly_split,
)
from .layouts import LayoutPlan, store_layout

# atomics that only read memory (tl.atomic_load, tl.atomic_poll): their buffers are not written
READ_ONLY_ATOMICS = ("load", "poll")
# read-modify-writes whose final memory value does not depend on their order
_COMMUTATIVE_ATOMICS = ("add", "max", "min", "and", "or", "xor")
_THROUGH = ops_where(layout=TRANSPARENT) | ops_where(layout=VIEW)  # a thread's own registers in, its own out
_MEMORY = ("load", "store", "atomic")
_WRITES = frozenset({"store", "atomic"})  # the ops that may write device memory (atomics unless READ_ONLY_ATOMICS)
# the ops whose result's polynomial _combine derives from its operands' (the others: a new symbol, or None)
_COMBINED = frozenset({"splat", "multiple_of", "max_contiguous", "add", "sub", "mul", "neg", "addptr", "cast",
                       "bitcast", "broadcast", "expand_dims", "squeeze", "permute"})
_NAME, _REGIONS = operator.attrgetter("name"), operator.attrgetter("regions")
_RESULTS, _ID = operator.attrgetter("results"), operator.attrgetter("id")
_STEPS = frozenset((*_MEMORY, "dot", "barrier"))  # with the ops that have regions: what the program-order walk sees


@dataclass
class DeviceOrderPlan:
    """The device-memory barriers a function needs: the op each one goes before, with the reason."""

    barriers_before: dict[ir.Op, str] = field(default_factory=dict)


def pointer_roots(fn: ir.Function) -> dict[int, str]:
    """For every pointer value, the pointer argument it is derived from (through loops too)."""
    roots: dict[int, str] = {a.id: a.name for a in fn.args if a.type.is_ptr}

    def block(b: ir.Block) -> None:
        for op in b.ops:
            if op.name in ("for", "while", "if"):
                inits = op.operands[3:] if op.name == "for" else (op.operands if op.name == "while" else [])
                for region in op.regions:
                    args = region.args[1:] if op.name == "for" else region.args
                    for a, i in zip(args, inits):
                        if i.id in roots:
                            roots[a.id] = roots[i.id]
                    block(region)
                if op.name == "if":
                    inits = op.regions[0].terminator.operands
                for r, i in zip(op.results, inits):
                    if i.id in roots:
                        roots[r.id] = roots[i.id]
            else:  # (an operand in roots is a pointer: that test first, it fails for most ops)
                operands = op.operands
                if operands and operands[0].id in roots:
                    results = op.results
                    if results and results[0].type.is_ptr:
                        roots[results[0].id] = roots[operands[0].id]

    block(fn.body)
    return roots


def written_roots(fn: ir.Function, roots: dict[int, str], ops: list[ir.Op] | None = None) -> set[str]:
    """The pointer arguments the kernel stores to or changes atomically (``ops``: ``ir.walk(fn.ops)`` if known)."""
    return {roots.get(op.operands[0].id) for op in ir.select(ir.walk(fn.ops) if ops is None else ops, _WRITES)
            if op.name == "store" or op.attrs["kind"] not in READ_ONLY_ATOMICS} - {None}


# --- offsets as polynomials ------------------------------------------------------------------------------------------
class _Context:
    """One iteration of a loop (or the kernel body): the polynomial of every value defined in it."""

    def __init__(self, tag: str, parent: _Context | None, loop: ir.Op | None):
        self.tag, self.parent, self.loop = tag, parent, loop
        self.values: dict[int, Poly | None] = {}
        self.prepare = None  # a loop's iterations: fills in the loop variables when a polynomial is first asked for


class _Analysis:
    def __init__(self, fn: ir.Function, plan: LayoutPlan, num_warps: int, roots: dict[int, str],
                 written: set[str] | frozenset[str]):
        self.fn, self.plan, self.num_warps = fn, plan, num_warps
        self.order = DeviceOrderPlan()
        self.scope: dict[int, ir.Op] = {}  # value id -> the innermost loop defining it (absent: outside every loop)
        self.roots = roots
        self.written = written
        self.records: dict[tuple[int, str], Access] = {}
        self.conflicts: dict[tuple[int, int], str | None] = {}  # (earlier, later access) -> why they conflict
        self._steps: dict[int, list[ir.Op]] = {}  # id(block) -> its ops that walk and collect look at
        # a loop without results is named by the order in which the walk meets it (never by id(): symbol names
        # order the generic values of _symbolic_conflict, so they must not depend on memory addresses)
        self._unnamed_loops: dict[int, int] = {}
        self._contexts: list[_Context] = []  # the loops' contexts (run() drops their closures)
        self._scopes(fn.body, None)  # (arguments are outside every loop)

    def _scopes(self, block: ir.Block, loop: ir.Op | None) -> None:
        scope = self.scope
        ops = block.ops
        if loop is not None:  # (a value outside every loop is left out: scope.get gives None)
            for a in block.args:
                scope.setdefault(a.id, loop)
            # every result of the block's ops, by C iterators (no Python step per op); then the ops with regions
            scope.update(zip(map(_ID, chain.from_iterable(map(_RESULTS, ops))), repeat(loop)))
        for op in compress(ops, map(_REGIONS, ops)):
            for region in op.regions:
                self._scopes(region, op if op.name in ("for", "while") else loop)

    # --- polynomials of values -----------------------------------------------------------------------------------
    def poly(self, v: ir.Value, ctx: _Context) -> Poly | None:
        home = ctx
        loop = self.scope.get(v.id)
        while home.loop is not loop and home.parent is not None:
            home = home.parent
        if home.prepare is not None:
            home.prepare()
        values = home.values
        if v.id not in values:
            values[v.id] = self._define(v, home)
        return values[v.id]

    def _atom(self, v: ir.Value, ctx: _Context) -> Poly | None:
        return None if v.type.is_tile else {(f"v{v.id}@{ctx.tag}",): 1}

    def _define(self, v: ir.Value, ctx: _Context) -> Poly | None:
        op = v.op
        if op is None:  # a kernel argument (block arguments are bound by their loop's context)
            return {} if v.type.is_ptr else ({(f"arg:{v.name}",): 1} if not v.type.is_tile else None)
        name = op.name
        if name not in _COMBINED or op.regions or len(op.results) != 1:  # (the common ops go straight below)
            if name == "program_id" or name == "num_programs":
                return {(f"{name}{op.attrs['axis']}",): 1}
            if op.regions or name in ("load", "atomic") or len(op.results) != 1:
                return self._atom(v, ctx)
            if name == "const":
                val = op.attrs["value"]
                return poly_const(int(val)) if isinstance(val, (bool, int)) else self._atom(v, ctx)
            if name == "arange":
                start, end = op.attrs["start"], op.attrs["end"]
                return poly_add(poly_const(start), {("#0",): 1}) if end - start > 1 else poly_const(start)
            if v.type.is_tile:  # (not in _COMBINED): what _combine gives it, then _atom for a tile; operands unused
                return None
        ops = [self.poly(o, ctx) for o in op.operands]
        shape = v.type.shape
        known = None not in ops
        p = self._combine(op, ops, shape) if known else None
        if p is None and not v.type.is_tile and known and all(not o.type.is_tile for o in op.operands):
            # the same pure function of the same scalars is the same scalar (e.g. pid // 4 computed twice)
            return {(f"{name}{sorted(op.attrs.items())}{[poly_key(q) for q in ops]}",): 1}
        if p is None:
            return self._atom(v, ctx)
        if 1 not in shape:
            return p  # no index variable of a size-1 dimension to drop (monomials are kept sorted, without zeros)
        for m in p:
            for s in m:  # the index variables of a monomial come first (see poly_split)
                if s[0] != "#":
                    break
                if shape[int(s[1:])] == 1:
                    return poly_rename(p, lambda i: None if shape[i] == 1 else i)
        return p  # nothing to drop: poly_rename would give p back as it is

    def _combine(self, op: ir.Op, ops: list[Poly], shape: tuple[int, ...]) -> Poly | None:
        """The polynomial of ``op``'s result from its operands' (None for every op outside ``_COMBINED``)."""
        name = op.name
        if name in ("splat", "multiple_of", "max_contiguous"):
            return ops[0]
        if name == "add":
            return poly_add(ops[0], ops[1])
        if name == "sub":
            return poly_add(ops[0], ops[1], -1)
        if name == "mul":
            return poly_mul(ops[0], ops[1])
        if name == "neg":
            return poly_add({}, ops[0], -1)
        if name == "addptr":
            return poly_add(ops[0], poly_scale(ops[1], op.operands[0].type.element.element_ty.itemsize))
        if name in ("cast", "bitcast"):
            src, dst = op.operands[0].type.element, op.result.type.element
            if src.is_ptr() and dst.is_ptr():
                return ops[0]  # the same address
            if name == "cast" and src.is_int() and dst.is_int() and not src.is_bool() and (
                    src.name == dst.name or (dst.itemsize > src.itemsize and
                                             (src.is_int_unsigned() or dst.is_int_signed()))):
                return ops[0]  # a widening integer cast keeps the value
            return None
        if name == "broadcast":
            k = len(shape) - len(op.operands[0].type.shape)
            return poly_rename(ops[0], lambda i: i + k)
        if name == "expand_dims":
            axis = op.attrs["axis"]
            return poly_rename(ops[0], lambda i: i + 1 if i >= axis else i)
        if name == "squeeze":
            axis = op.attrs["axis"]
            return poly_rename(ops[0], lambda i: None if i == axis else (i - 1 if i > axis else i))
        if name == "permute":
            order = op.attrs["order"]
            return poly_rename(ops[0], lambda i: order.index(i))
        return None

    def loop_contexts(self, op: ir.Op, ctx: _Context) -> tuple[_Context, _Context]:
        """Two consecutive iterations of a loop: the second's loop variables written in terms of the first's.
        Filled in when a polynomial of either is first asked for: a loop whose accesses never meet a write (the
        loads of a matmul's K loop) costs no polynomial at all."""
        unnamed = self._unnamed_loops
        name = op.results[0].id if op.results else f"n{unnamed.setdefault(id(op), len(unnamed))}"
        first = _Context(f"{ctx.tag}/{name}.0", ctx, op)
        second = _Context(first.tag[:-1] + "1", ctx, op)

        def prepare() -> None:
            first.prepare = second.prepare = None
            self._fill_loop_contexts(op, ctx, first, second)

        first.prepare = second.prepare = prepare
        self._contexts += (first, second)
        return first, second

    def _fill_loop_contexts(self, op: ir.Op, ctx: _Context, first: _Context, second: _Context) -> None:
        is_for = op.name == "for"
        inits = op.operands[3:] if is_for else op.operands
        body = op.regions[-1]
        carried = [region.args[1:] if is_for else region.args for region in op.regions]
        yields = body.terminator.operands
        uniform_shift = [v.type.is_tile for v in op.results]  # tiles advanced by a scalar each iteration
        while True:
            first.values = {}
            for args in carried:
                for k, a in enumerate(args):
                    init = self.poly(inits[k], ctx)
                    if not a.type.is_tile:
                        first.values[a.id] = {(f"c{a.id}@{first.tag}",): 1}
                    elif uniform_shift[k] and init is not None:
                        first.values[a.id] = poly_add(init, {(f"c{a.id}@{first.tag}",): 1})
                    else:
                        first.values[a.id] = None
            if is_for:
                first.values[body.args[0].id] = {(f"iv{body.args[0].id}@{first.tag}",): 1}
            again = False
            for k, (a, y) in enumerate(zip(carried[-1], yields)):
                if a.type.is_tile and uniform_shift[k]:
                    py, pa = self.poly(y, first), first.values[a.id]
                    if py is None or pa is None or poly_split(poly_add(py, pa, -1))[1]:
                        uniform_shift[k] = False
                        again = True
            if not again:
                break
        for args in carried:
            for a, y in zip(args, yields):
                second.values[a.id] = self.poly(y, first)
        if is_for:
            iv = body.args[0]
            step = self.poly(op.operands[2], ctx)
            second.values[iv.id] = poly_add(first.values[iv.id], step) if step is not None else {
                (f"iv{iv.id}@{second.tag}",): 1}

    # --- accesses ----------------------------------------------------------------------------------------------------
    def record(self, op: ir.Op, ctx: _Context) -> Access:
        key = (id(op), ctx.tag)
        if key in self.records:
            return self.records[key]
        ptr = op.operands[0]
        itemsize = ptr.type.element.element_ty.itemsize
        kind = op.attrs.get("kind") if op.name == "atomic" else None
        writes = op.name == "store" or (op.name == "atomic" and kind not in READ_ONLY_ATOMICS)
        nthreads = WARP_SIZE * self.num_warps
        if ptr.type.is_tile:
            layout = store_layout(self.plan, op) if op.name == "store" else self.plan.homes[op.result.id]
            threads: tuple = ("tile", layout, tuple(ptr.type.shape), op.name != "load")
        elif op.name == "load" and self.roots.get(ptr.id) is not None and self.roots[ptr.id] not in self.written:
            threads = ("all", nthreads)  # every thread loads it
        else:
            threads = ("one",)  # thread 0 performs it (a scalar store or atomic, or a load the others receive from it)
        rec = Access(op, writes, kind in _COMMUTATIVE_ATOMICS, lambda: self.poly(ptr, ctx), ptr.type.shape, itemsize,
                      threads)
        self.records[key] = rec
        return rec

    def collect(self, block: ir.Block, ctx: _Context) -> list[Access]:
        """Every access in ``block`` (both iterations of its loops)."""
        out = []
        for op in self.steps(block):
            if op.name in _MEMORY:
                out.append(self.record(op, ctx))
            elif op.name in ("for", "while"):
                for c in self.loop_contexts(op, ctx):
                    for region in op.regions:
                        out += self.collect(region, c)
            elif op.name == "if":
                for region in op.regions:
                    out += self.collect(region, ctx)
        return out

    # --- the walk in program order --------------------------------------------------------------------------------
    def need_barrier(self, op: ir.Op, pending: list[Access], accesses: list[Access]) -> bool:
        for a in pending:
            for b in accesses:
                key = (id(a), id(b))
                if key not in self.conflicts:
                    self.conflicts[key] = conflict(a, b)
                why = self.conflicts[key]
                if why is not None:
                    self.order.barriers_before.setdefault(op, _describe(a, b, why))
                    return True
        return False

    def steps(self, block: ir.Block) -> list[ir.Op]:
        """The ops of ``block`` that ``walk`` acts on (memory accesses, dots, barriers, ops with regions): the others
        change nothing pending and never get a barrier. Found once per block (loop bodies are walked many times)."""
        found = self._steps.get(id(block))
        if found is None:  # op.name in _STEPS or op.regions, evaluated by C iterators (no Python step per op)
            ops = block.ops
            found = self._steps[id(block)] = list(compress(ops, map(operator.or_, map(_STEPS.__contains__, map(_NAME, ops)),
                                                                    map(bool, map(_REGIONS, ops)))))
        return found

    def walk(self, block: ir.Block, ctx: _Context, pending: list[Access]) -> list[Access]:
        for op in self.steps(block):
            if op in self.order.barriers_before or op.name == "barrier":
                pending = []  # tl.debug_barrier orders device memory too
            if op.name in _MEMORY:
                rec = self.record(op, ctx)
                if self.need_barrier(op, pending, [rec]):
                    pending = []
                pending = [*pending, rec]
            elif op.name == "dot":
                feeding = self.fed_by(op.operands[0]) | self.fed_by(op.operands[1])
                pending = [a for a in pending if a.writes or a.replicated or id(a.op) not in feeding]
            elif op.name == "if":
                if self.need_barrier(op, pending, self.collect_regions(op, ctx)):
                    pending = []
                outs = [self.walk(region, ctx, pending) for region in op.regions]
                if len(op.regions) < 2:
                    outs.append(pending)
                pending = _union(*outs)
            elif op.name in ("for", "while"):
                pending = self.walk_loop(op, ctx, pending)
            elif op.regions and any(o.name in _MEMORY for region in op.regions for o in ir.walk(region.ops)):
                raise ir.VerificationError(f"internal error: memory access inside the region of '{op.name}'")
        return pending

    def collect_regions(self, op: ir.Op, ctx: _Context) -> list[Access]:
        return [a for region in op.regions for a in self.collect(region, ctx)]

    def walk_loop(self, op: ir.Op, ctx: _Context, pending: list[Access]) -> list[Access]:
        first, second = self.loop_contexts(op, ctx)
        inside = [a for c in (first, second) for region in op.regions for a in self.collect(region, c)]
        if self.need_barrier(op, pending, inside):
            pending = []
        for _ in range(4):  # barriers placed inside change what is pending around the back edge
            known = len(self.order.barriers_before)
            p = pending
            for c in (first, second):
                for region in op.regions:
                    p = self.walk(region, c, p)
            if len(self.order.barriers_before) == known:
                break
        return _union(pending, p)

    def fed_by(self, v: ir.Value) -> set[int]:
        """The loads whose values reach ``v`` through each thread's own registers (elementwise ops and views)."""
        out: set[int] = set()
        stack = [v]
        while stack:
            x = stack.pop()
            op = x.op
            if op is None:
                continue
            if op.name == "load":
                out.add(id(op))
            elif op.name in _THROUGH:
                stack += op.operands
        return out

    def run(self) -> DeviceOrderPlan:
        self.walk(self.fn.body, _Context("k", None, None), [])
        # each record's offset closure refers back to this analysis, and a loop's contexts to their own (prepare):
        # dropped here, the analysis is freed as soon as it is unused, without waiting for the garbage collector
        self.records.clear()
        for c in self._contexts:
            c.prepare = None
        return self.order


def _union(*lists: list[Access]) -> list[Access]:
    seen: dict[int, Access] = {}
    for lst in lists:
        for a in lst:
            seen.setdefault(id(a), a)
    return list(seen.values())


def _describe(a: Access, b: Access, why: str) -> str:
    def what(x: Access) -> str:
        kind = x.op.name if x.op.name != "atomic" else f"atomic_{x.op.attrs.get('kind')}"
        return f"the {kind}" + (f" at line {x.op.loc.lineno}" if x.op.loc else "")

    return f"{what(a)} and {what(b)} may touch one address from two threads ({why})"


def plan_device_order(fn: ir.Function, plan: LayoutPlan, num_warps: int, roots: dict[int, str] | None = None,
                      written: set[str] | frozenset[str] | None = None,
                      ops: list[ir.Op] | None = None) -> DeviceOrderPlan:
    """Where ``fn`` needs device-memory barriers so that its global accesses take effect in program order.
    ``roots``, ``written`` and ``ops``: ``pointer_roots(fn)``, ``written_roots(fn, roots)`` and ``ir.walk(fn.ops)``
    when the caller has them."""
    for op in ir.select(ir.walk(fn.ops) if ops is None else ops, _WRITES):
        if op.name == "store" or op.attrs["kind"] not in READ_ONLY_ATOMICS:
            break
    else:
        return DeviceOrderPlan()  # nothing is written: no pair of accesses can conflict (``conflict``)
    if _one_thread_per_address(fn, plan, ir.select(ir.walk(fn.ops) if ops is None else ops, _MEMORY_SET)):
        return DeviceOrderPlan()
    roots = pointer_roots(fn) if roots is None else roots
    return _Analysis(fn, plan, num_warps, roots, written_roots(fn, roots, ops) if written is None else written).run()


_MEMORY_SET = frozenset(_MEMORY)


def _one_thread_per_address(fn: ir.Function, plan: LayoutPlan, accesses: list[ir.Op]) -> bool:
    """Whether every device access is a tile load or store at the kernel's top level through ``base + offs``, where
    ``base`` is a scalar pointer, ``offs`` is one value for all accesses (a scalar plus ``tl.arange``, or the
    ``arange`` alone: distinct elements at distinct offsets) and the bases' offsets from the arguments have one
    constant term; with one element size, and one layout that holds each element in one register. Then each pair
    of accesses is either the same addresses element for element, touched by the one thread that holds the
    element, or (bases apart by a runtime value, as ``row * stride_x`` and ``row * stride_y``) the same or disjoint
    memory by the analysis's model (module docstring): no pair needs a barrier. That is the answer ``_Analysis``
    gives such kernels (the elementwise family, and row kernels such as softmax), found without the pairs and their
    tiles' polynomials. Anything else: False, and the full analysis decides."""
    if not accesses or len(ir.select(fn.body.ops, _MEMORY_SET)) != len(accesses):
        return False  # (none, or some inside a loop or branch)
    first = accesses[0]
    found = _scalar_base_plus(first.operands[0])
    if found is None or not _distinct_run(found[1]):
        return False
    offs = found[1]
    shift = _constant_term(found[0])
    itemsize = first.operands[0].type.element.element_ty.itemsize
    layout = None
    for op in accesses:
        name = op.name
        ptr = op.operands[0]
        found = _scalar_base_plus(ptr)
        if name == "atomic" or found is None or found[1] is not offs \
                or ptr.type.element.element_ty.itemsize != itemsize or _constant_term(found[0]) != shift:
            return False
        here = store_layout(plan, op) if name == "store" else plan.homes.get(op.result.id)
        if layout is None:
            layout = here
            if layout is None or not one_register_per_element(layout, ptr.type.shape):
                return False
        elif here != layout:
            return False
    return True


def _scalar_base_plus(ptr: ir.Value) -> tuple[ir.Value, ir.Value] | None:
    """``(base, offs)`` when ``ptr`` is ``addptr(splat(base), offs)`` (``base`` a scalar pointer), else None."""
    op = ptr.op
    if op is None or op.name != "addptr":
        return None
    splat = op.operands[0].op
    if splat is None or splat.name != "splat":
        return None
    return splat.operands[0], op.operands[1]


def _constant_term(v: ir.Value) -> int:
    """The constant term of the polynomial ``_Analysis`` gives the scalar ``v`` (``_define``): its value with every
    runtime symbol at 0 (arguments, program ids, loaded values, and every other function of scalars, which that
    polynomial names by a symbol of its own). For a pointer: bytes from the arguments' common base."""
    op = v.op
    if op is None:
        return 0  # an argument (block arguments belong to loops: never a top-level access's base)
    name = op.name
    if name == "const":
        value = op.attrs["value"]
        return int(value) if isinstance(value, (bool, int)) else 0
    operands = op.operands
    if name in ("splat", "multiple_of", "max_contiguous"):
        return _constant_term(operands[0])
    if name == "add":
        return _constant_term(operands[0]) + _constant_term(operands[1])
    if name == "sub":
        return _constant_term(operands[0]) - _constant_term(operands[1])
    if name == "mul":  # (the constant term of a product is the product of the constant terms)
        return _constant_term(operands[0]) * _constant_term(operands[1])
    if name == "neg":
        return -_constant_term(operands[0])
    if name == "addptr":
        return _constant_term(operands[0]) + _constant_term(operands[1]) * operands[0].type.element.element_ty.itemsize
    if name in ("cast", "bitcast"):
        src, dst = operands[0].type.element, v.type.element
        if (src.is_ptr() and dst.is_ptr()) or (name == "cast" and src.is_int() and dst.is_int() and not src.is_bool()
                                                and (src.name == dst.name or (dst.itemsize > src.itemsize and (
                                                    src.is_int_unsigned() or dst.is_int_signed())))):
            return _constant_term(operands[0])  # the same value (as ``_combine``)
    return 0  # a symbol of its own


def _distinct_run(offs: ir.Value) -> bool:
    """Whether ``offs`` is a 1-D ``tl.arange`` with one element per index, or a scalar plus one (a splat of a
    scalar added to it): its elements are distinct integers."""
    if len(offs.type.shape) != 1:
        return False
    op = offs.op
    if op is not None and op.name == "add":
        a, b = op.operands
        if b.op is not None and b.op.name == "splat":
            a, b = b, a
        if a.op is None or a.op.name != "splat":
            return False
        op = b.op
    return op is not None and op.name == "arange" and op.attrs["end"] - op.attrs["start"] == offs.type.shape[0]
