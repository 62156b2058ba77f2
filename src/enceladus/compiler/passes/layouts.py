"""Layout assignment: which thread holds which element of every tile, in which register.

A ``BlockedLayout`` (Triton's model) spreads a tile over ``num_warps`` SIMD groups of 32 lanes:
each thread owns ``size_per_thread`` consecutive elements per dimension, repeated every
``size_per_thread * threads_per_warp * warps_per_cta`` elements. A tile value lives in a
``TileLayout``: a blocked layout of a *parent* shape plus the map from the value's dimensions to
the parent's. ``offs[:, None]`` broadcast into a 2-D tile, the row maxima of a 2-D tile (a
reduction), ``tl.trans(x)``: all are held in the parent's registers with no data movement.

Assignment runs backwards from the anchors (stores, and values nothing else constrains): each use
*demands* its operands in a layout. Values computed only from indices and constants (no memory
reads) are computed in every layout demanded of them (rematerialized). Any other value has one
*home* layout it is computed in; a demand for another layout is met by a conversion through
threadgroup memory (``codegen_msl`` emits it). Loop-carried values, results of control flow,
reductions and data-movement ops have homes forced by their definition.

The layout values themselves live in ``compiler/layout.py`` (light, so cached kernels load without this pass).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from .. import ir
from ..layout import BlockedLayout, TileLayout, default_blocked, fits
from ..metal_limits import MAX_THREADGROUP_MEMORY
from ..op_traits import TRANSPARENT, VIA_SMEM, VIEW, ops_where
from .axis_info import AxisInfo
from .layouts_dot import CoopCarry, DotLayouts, DotPlan

# Ops whose result is computed slot by slot from operands in the same layout (or a view of it).
_TRANSPARENT = ops_where(layout=TRANSPARENT) | ops_where(layout=VIEW)
# Ops that move data through threadgroup memory: any operand layout works, the result has a home.
_VIA_SMEM = ops_where(layout=VIA_SMEM)
# Ops with their own rule in the backward walk (_Assigner.special); every other op demands its operands in the
# layouts its result is computed in (_Assigner.op)
_LOAD_STORE = frozenset({"load", "store"})
_OWN_RULES = frozenset({"store", "yield", "print", "assert", "for", "while", "if", "reduce", "scan",
                        "map_elementwise", "split"})


@dataclass
class LayoutPlan:
    """The result of layout assignment: every decision the emitter needs, keyed by value id (never stored on
    the IR, so planning the same function again with other options gives an independent answer)."""

    needs: dict[int, list[TileLayout]] = field(default_factory=dict)  # value id -> layouts it is needed in
    homes: dict[int, TileLayout] = field(default_factory=dict)  # value id -> the layout it is computed in
    pure: dict[int, bool] = field(default_factory=dict)
    dots: dict[int, DotPlan] = field(default_factory=dict)  # dot result id -> how it is computed
    operand_layouts: dict[int, TileLayout] = field(default_factory=dict)  # reduce/scan first result id -> input's
    coop: dict[int, CoopCarry] = field(default_factory=dict)  # for-loop result id -> its accumulator kept in matmul2d
    # every op of the function, depth first (as ir.walk lists them; the pass never changes the IR)
    ops: list[ir.Op] = field(default_factory=list)

    def layout_of(self, v: ir.Value) -> TileLayout | None:
        """The layout ``v`` is computed in (its home, else the first layout demanded of it), for printing."""
        home = self.homes.get(v.id)
        if home is not None:
            return home
        needs = self.needs.get(v.id)
        return needs[0] if needs else None

    def demand(self, v: ir.Value, layout: TileLayout) -> None:
        if not v.type.is_tile:
            return
        lst = self.needs.get(v.id)
        if lst is not None and layout in lst:
            return  # demanded before (and checked then)
        if not fits(layout, v.type.shape):  # a compiler bug, never a user error: fail loudly, never miscompile
            raise ir.VerificationError(f"{v!r} of shape {list(v.type.shape)} cannot be held in {layout}")
        if lst is None:
            self.needs[v.id] = [layout]
        else:
            lst.append(layout)


class _Assigner(DotLayouts):
    """The pass over one function (the dot decisions: ``layouts_dot.DotLayouts``)."""

    def __init__(self, fn: ir.Function, num_warps: int, dot_backend: str = "simdgroup",
                 matmul2d_rejects: dict | None = None, axis: dict[int, AxisInfo] | None = None,
                 fragments_in_registers: bool = True, carried_hints: dict[int, TileLayout] | None = None):
        # loop result id -> the home its loop-carried value takes when nothing else prefers one (carried_homes)
        self.carried_hints = carried_hints or {}
        self.matmul2d_rejects = matmul2d_rejects or {}  # (M, N, K, A type, B type) -> why the device refused it
        self.axis = axis or {}
        # the device's thread_elements() lane mapping is the assumed one (a probe may say otherwise: MSL_AUDIT D4)
        self.fragments_in_registers = fragments_in_registers
        # (the op that makes a value is its ``op``: None for arguments and block arguments)
        self.loop_of: dict[int, int] = {}  # value id -> id of its innermost loop op (absent: outside every loop)
        self.op_loop: dict[int, int] = {}  # id(op) -> id of its innermost loop op (absent: outside every loop)
        self.plan = LayoutPlan()
        self.ops: list[ir.Op] = self.plan.ops  # every op, depth first (ir.walk), collected by _scan
        self._scan(fn.body, None)
        self.names = ir.names(self.ops)  # the kinds of op the function has: passes with none to act on skip
        self._uses: dict[int, int] | None = None
        self.feeds_a = self._dots_feeding_a(fn) if "dot" in self.names else set()
        self.fn = fn
        self.num_warps = num_warps
        self.dot_backend = dot_backend
        self.itemsize: dict[tuple[int, ...], int] = {}
        self.blocked: dict[tuple[tuple[int, ...], int], BlockedLayout] = {}
        self.anchors: dict[tuple[tuple[int, ...], int], TileLayout] = {}
        for op in ir.select(self.ops, _LOAD_STORE):
            if op.operands[0].type.shape:
                shape = op.operands[0].type.shape
                size = op.operands[0].type.element.element_ty.itemsize
                self.itemsize[shape] = min(self.itemsize.get(shape, size), size)

    def _scan(self, block: ir.Block, loop: int | None) -> None:
        """One walk of the IR: the op list, the loop each op and value is defined in, and which values are pure
        (``plan.pure``: computed only from indices, constants and scalars; a block argument never is)."""
        ops, pure = self.ops, self.plan.pure
        for op in block.ops:
            ops.append(op)
            # scalars are uniform: a splat of any scalar is available in every layout
            ok = op.name in _TRANSPARENT
            if ok:
                for o in op.operands:
                    if not pure.get(o.id, True) and o.type.is_tile:
                        ok = False
                        break
            for r in op.results:
                pure[r.id] = ok or not r.type.is_tile
            if loop is not None:
                self.op_loop[id(op)] = loop
                for r in op.results:
                    self.loop_of[r.id] = loop
            if op.regions:
                inner = id(op) if op.name in ("for", "while") else loop
                for region in op.regions:
                    for a in region.args:
                        if inner is not None:
                            self.loop_of[a.id] = inner
                        pure[a.id] = False
                    self._scan(region, inner)



    def operand_anchor(self, v: ir.Value) -> TileLayout:
        """The layout a dot operand is loaded in when nothing else decides: the default blocked layout, or, for a
        2-D load whose pointers run contiguously down the columns (K^T read from a row-major K), its transpose
        (a view of the blocked layout of the transposed shape), so that each thread's run follows memory and
        the load is 16-byte vectorized."""
        op = v.op
        shape = v.type.shape
        if op is not None and op.name == "load" and len(shape) == 2 and op.operands[0].id in self.axis:
            contig = self.axis[op.operands[0].id].contiguity
            if contig[0] > 1 and contig[1] == 1:
                key = ((shape[1], shape[0]), 1)
                if key not in self.blocked:
                    size = op.operands[0].type.element.element_ty.itemsize
                    self.blocked[key] = default_blocked(key[0], size, self.num_warps)
                return TileLayout(self.blocked[key], (1, 0))
        return self.anchor(shape)


    def anchor(self, shape: tuple[int, ...], min_last: int = 1) -> TileLayout:
        key = (shape, min_last)
        layout = self.anchors.get(key)
        if layout is None:  # one value per key (its hash computed once): self.blocked[key] never changes once made
            if key not in self.blocked:
                self.blocked[key] = default_blocked(shape, self.itemsize.get(shape, 4), self.num_warps, min_last)
            layout = self.anchors[key] = TileLayout(self.blocked[key], tuple(range(len(shape))))
        return layout

    def first_need(self, v: ir.Value) -> TileLayout | None:
        lst = self.plan.needs.get(v.id)
        return lst[0] if lst else None

    def home(self, v: ir.Value, layout: TileLayout) -> TileLayout:
        self.plan.homes[v.id] = layout
        self.plan.demand(v, layout)
        return layout

    # --- the backward walk ---------------------------------------------------------------------------


    def use_counts(self) -> dict[int, int]:
        """Value id -> how many operands (of every op, terminators included) it is (counted once: the pass never
        changes the IR)."""
        if self._uses is None:
            self._uses = ir.use_counts(self.ops)
        return self._uses

    def run(self) -> LayoutPlan:
        self.pref: dict[int, TileLayout] = {}
        if "dot" in self.names:  # every preference starts at a dot's accumulator: without one there is none
            self.prefer_block(self.fn.body)
        self.block_walk()
        return self.plan

    def again(self, carried_hints: dict[int, TileLayout]) -> _Assigner:
        """A new assigner for the same function and options with ``carried_hints``, sharing this one's scan of
        the IR and its forward walks (purity, preferences, the dots' decisions: the same whatever the hints)."""
        other = object.__new__(_Assigner)
        for name in ("matmul2d_rejects", "axis", "fragments_in_registers", "loop_of", "op_loop", "ops",
                     "names", "_uses", "feeds_a", "fn", "num_warps", "dot_backend", "itemsize"):
            setattr(other, name, getattr(self, name))
        other.carried_hints = carried_hints
        other.plan = LayoutPlan(ops=self.ops)
        other.blocked, other.anchors = {}, {}  # filled in the order of first use, which the hints may change
        other.plan.pure = dict(self.plan.pure)  # _scan's, never changed after it
        other.pref = self.pref  # prefer_block's, never changed after it
        # each dot's decision as prefer_block made it (dot_layout); the backward walk adds the operands' layouts
        # (a_layout already made there when A comes from registers) and carry_accumulators the carried loop
        other.plan.dots = {k: replace(d, a_layout=d.a_layout if d.a_registers else None, b_layout=None, carried=None)
                           for k, d in self.plan.dots.items()}
        return other

    def block_walk(self) -> None:
        """The backward walk (after ``run``'s forward walks, or ``again``'s copy of them)."""
        self.atomic_layouts = self.lane_contiguous_atomics() if "atomic" in self.names else {}
        self.block(self.fn.body)
        if any(d.matmul2d for d in self.plan.dots.values()):  # only matmul2d accumulators are carried
            self.carry_accumulators()




    # --- atomics onto consecutive addresses: consecutive lanes on consecutive elements ------------------------
    def lane_contiguous_atomics(self) -> dict[int, TileLayout]:
        """id(atomic op) -> the layout it is done in instead of the default blocked one, for atomics whose
        pointers are contiguous along the tile's fastest dimension.

        Metal has no vector atomics (its atomic objects are ``atomic_int``/``atomic_uint``/``atomic_bool``/
        ``atomic_float`` and ``atomic_ulong`` for max/min, each ``atomic_*_explicit`` call one element: MSL
        spec §6.15.4), so a tile atomic is one scalar atomic per element per lane, and a SIMD group issues the
        e-th one of its 32 lanes together. In the default layout each lane holds 16 contiguous bytes, so those
        32 atomics lie 16 bytes apart and spread over 512 bytes (fp32); with one element per lane (one 32-bit
        word for 16-bit atomics, which loop on the containing word) they are 128 contiguous bytes, the fewest
        cache lines a SIMD-group memory instruction can touch, the same coalescing rule loads and stores follow.

        Taken only where it costs no conversion through threadgroup memory: the old values are unused, and every
        value that is not index arithmetic feeding the atomic's operands comes, through elementwise ops of the
        same shape, from loads, and is used nowhere else (so the loads are done in this layout too: 4-byte
        accesses per lane, still 128 contiguous bytes per SIMD group, where they were 16-byte ones). Histograms
        (pointers made from loaded data: contiguity 1) and atomics on one address keep their layout."""
        users = self.use_counts()
        out: dict[int, TileLayout] = {}
        for op in self.ops:
            if op.name != "atomic" or not op.result.type.is_tile or users.get(op.result.id):
                continue
            ptr = op.operands[0]
            shape = ptr.type.shape
            info = self.axis.get(ptr.id)
            anchor = self.anchor(shape)
            fast = anchor.parent.order[0]
            itemsize = ptr.type.element.element_ty.itemsize
            per_lane = max(4 // itemsize, 1)  # elements of one 32-bit word: 16-bit atomics rewrite whole words
            if (info is None or len(info.contiguity) != len(shape)
                    or anchor.parent.size_per_thread[fast] <= per_lane or info.contiguity[fast] < 2 * per_lane):
                continue
            cone = self._private_inputs(op, users)
            if cone is None:
                continue
            layout = TileLayout(default_blocked(shape, itemsize, self.num_warps, vector_bytes=per_lane * itemsize),
                                tuple(range(len(shape))))
            out[id(op)] = layout
        return out

    def _private_inputs(self, op: ir.Op, users: dict[int, int]) -> set[int] | None:
        """The values, other than index arithmetic, that the operands of ``op`` are computed from, when each
        comes from loads through elementwise ops of ``op``'s shape, has no layout preference and has ``op``'s
        chain as its only user; else None."""
        shape = op.result.type.shape
        cone: set[int] = set()
        todo = [o for o in op.operands if o.type.is_tile and not self.plan.pure.get(o.id, True)]
        uses_inside: dict[int, int] = {}
        while todo:
            v = todo.pop()
            uses_inside[v.id] = uses_inside.get(v.id, 0) + 1
            if v.id in cone:
                continue
            d = v.op
            if d is None or v.type.shape != shape or v.id in self.pref \
                    or not (d.name == "load" or (d.name in ir.ELEMENTWISE and len(d.results) == 1)):
                return None  # a loop-carried value, a reduction, a dot, a broadcast row, ...
            cone.add(v.id)
            todo += [o for o in d.operands if o.type.is_tile and not self.plan.pure.get(o.id, True)]
        if any(users.get(v, 0) != uses_inside[v] for v in cone):
            return None  # also used outside the chain: it would be needed in two layouts
        return cone

    def block(self, block: ir.Block) -> None:
        for op in reversed(block.ops):
            self.op(op)

    def op(self, op: ir.Op) -> None:
        name = op.name
        plan = self.plan
        if name in _OWN_RULES:
            self.special(op)
            return
        results = op.results
        if not results:
            return
        r = results[0]
        if not r.type.is_tile:
            return
        layouts = plan.needs.get(r.id) or []  # (read before self.home below adds to that list)
        if name == "dot":
            self.dot(op)
            return
        if not layouts:
            if plan.pure[r.id]:
                return  # dead index arithmetic
            layouts = [self.anchor(r.type.shape)]  # e.g. a load whose value is unused still happens
        if name == "gather":
            home = self.home(r, layouts[0] if isinstance(layouts[0].parent, BlockedLayout) else
                             self.anchor(r.type.shape))
            plan.demand(op.operands[0], self.anchor(op.operands[0].type.shape))
            plan.demand(op.operands[1], home)
            return
        if name in _VIA_SMEM:
            self.home(r, layouts[0])
            for o in op.operands:
                if o.type.is_tile:
                    plan.demand(o, self.anchor(o.type.shape))
            return
        if not plan.pure[r.id]:
            home = self.pref.get(r.id) or self.atomic_layouts.get(id(op))
            if home is None and name == "load":
                home = self.coalesced_load(op, layouts[0])
            layouts = [self.home(r, home or layouts[0])]  # computed once; others are conversions
        operands = op.operands
        if name in _RESHAPES:
            for layout in layouts:
                for i, o in enumerate(operands):
                    if o.type.is_tile:
                        plan.demand(o, operand_layout(op, i, layout))
            return
        for layout in layouts:
            for o in operands:
                if o.type.is_tile:
                    plan.demand(o, layout)

    def special(self, op: ir.Op) -> None:
        """The ops of ``_OWN_RULES``: stores, terminators, debug output, control flow, reductions, scans,
        map_elementwise and split."""
        name = op.name
        plan = self.plan
        if name == "store":
            ptr = op.operands[0]
            if ptr.type.is_tile:
                # store straight from the layout the value is produced in (e.g. dot accumulators) when it has one,
                # unless that is a fragment layout and the store runs once: then 16-byte rows pay for converting
                layout = self.pref.get(op.operands[1].id)
                if layout is None or self.store_converts(op, layout):
                    layout = self.anchor(ptr.type.shape)
                for o in op.operands:
                    plan.demand(o, layout)
            return
        if name == "yield":
            return  # handled by the op that owns the region
        if name in ("print", "assert"):  # tiles are reported from their default layout
            for o in op.operands:
                if o.type.is_tile:
                    plan.demand(o, self.anchor(o.type.shape))
            return
        if name in ("for", "while", "if"):
            self.control_flow(op)
            return
        if name in ("reduce", "scan"):
            self.reduction(op)
            return
        if name == "map_elementwise":  # every element where it is: operands and results in one layout
            r0, pack = op.results[0], op.attrs["pack"]
            home = (self.pref.get(op.operands[0].id) or self.first_need(r0) or self.anchor(r0.type.shape)) \
                if pack == 1 else self.anchor(r0.type.shape, min_last=pack)  # packs: consecutive registers
            for r in op.results:
                self.home(r, home)
            for o in op.operands:
                plan.demand(o, home)
            return  # the region holds only scalars
        if name == "split":
            x = op.operands[0]
            lx = self.anchor(x.type.shape, min_last=2)
            plan.demand(x, lx)
            for r in op.results:
                self.home(r, TileLayout(lx.parent, lx.dims[:-1]))

    def coalesced_load(self, op: ir.Op, wanted: TileLayout) -> TileLayout | None:
        """The layout a load whose result is wanted in ``wanted`` is better done in, or None to load in ``wanted``.

        A tile used along another dimension than the one its addresses are contiguous in (``tl.trans(x)``
        stored, a permuted load, a column-major tile stored row-major) would be read in the user's layout,
        each thread taking one element of every contiguous run: scalar accesses, a SIMD group touching many
        short segments. Loading it in the layout that follows memory (``operand_anchor``: 16 bytes per thread
        along the contiguous dimension) and converting through threadgroup memory makes both the load and the
        later store 16-byte vectors and coalesced, as Triton's convert_layout does, for one barrier and a
        threadgroup-memory round trip. Only when the conversion's buffer fits in threadgroup memory on its
        own (32 KB); otherwise the load stays as it was."""
        r, ptr = op.result, op.operands[0]
        shape = r.type.shape
        info = self.axis.get(ptr.id)
        if (len(shape) < 2 or not isinstance(wanted.parent, BlockedLayout) or info is None
                or r.type.element.is_ptr() or len(info.contiguity) != len(shape)):
            return None
        itemsize = r.type.element.itemsize
        runs = [min(c, s) * itemsize for c, s in zip(info.contiguity, shape)]
        contiguous = max(range(len(shape)), key=lambda d: runs[d])
        if runs[contiguous] < 16:
            return None  # no 16-byte runs to gain
        better = self.operand_anchor(r)
        if _fastest(better) != contiguous or better == wanted:
            return None  # no layout here follows memory better (e.g. contiguous down a middle dimension)
        if _fastest(wanted) == contiguous:
            return None  # already walks the contiguous dimension
        count = 1
        for i, s in enumerate(shape):
            count *= s + (1 if i == len(shape) - 1 else 0)  # emit_conversion pads the last dimension by one
        if count * max(itemsize, 1) > MAX_THREADGROUP_MEMORY:
            return None
        return better

    def control_flow(self, op: ir.Op) -> None:
        plan = self.plan
        n_bounds = 3 if op.name == "for" else (1 if op.name == "if" else 0)
        homes = []
        for r in op.results:
            if r.type.is_tile:
                homes.append(self.home(r, self.pref.get(r.id) or self.carried_hints.get(r.id) or self.first_need(r)
                                       or self.anchor(r.type.shape)))
            else:
                homes.append(None)
        for region in op.regions:
            term = region.terminator
            if op.name == "while" and region is op.regions[0]:
                pass  # the condition block yields a scalar
            else:
                for y, h in zip(term.operands, homes):
                    if h is not None:
                        plan.demand(y, h)
            carried = region.args[1:] if op.name == "for" else region.args
            for a, h in zip(carried, homes):
                if h is not None:
                    self.home(a, h)
            self.block(region)
        if op.name != "if":
            for init, h in zip(op.operands[n_bounds:], homes):
                if h is not None:
                    plan.demand(init, h)

    def reduction(self, op: ir.Op) -> None:
        plan = self.plan
        axis = op.attrs["axis"]
        x0 = op.operands[0]
        r0 = op.results[0]
        if op.name == "scan":
            lx = self.first_need(r0)
            if lx is None or not isinstance(lx.parent, BlockedLayout):
                lx = self.anchor(x0.type.shape)  # scans walk blocked layouts
            for r in op.results:
                self.home(r, lx)
        else:
            want = self.first_need(r0) if r0.type.is_tile else None
            lx = self.pref.get(x0.id)
            if lx is not None and not fits(lx, x0.type.shape):
                lx = None
            if lx is None and want is not None and len(want.parent.shape) == len(x0.type.shape):
                free = [d for d in range(len(want.parent.shape)) if d not in want.dims]
                if len(free) == 1:
                    lx = TileLayout(want.parent, want.dims[:axis] + (free[0],) + want.dims[axis:])
                    if not fits(lx, x0.type.shape):  # e.g. keep_dims: the parent has size 1 where x does not
                        lx = None
            if lx is None:
                lx = self.anchor(x0.type.shape)
            for r in op.results:
                if r.type.is_tile:
                    self.home(r, TileLayout(lx.parent, lx.dims[:axis] + lx.dims[axis + 1:]))
        plan.operand_layouts[r0.id] = lx
        for x in op.operands:
            plan.demand(x, lx)
        # combine regions hold only scalars




def _fastest(layout: TileLayout) -> int | None:
    """The value dimension a layout's threads walk first (its parent's fastest dimension), or None when that
    parent dimension holds no dimension of the value (a broadcast)."""
    fastest = layout.parent.order[0]
    return layout.dims.index(fastest) if fastest in layout.dims else None


def store_layout(plan: LayoutPlan, op: ir.Op) -> TileLayout:
    """The layout a tile store is performed in: the first layout its pointers are needed in that the stored
    value is also available in (the layout pass demands both in the store's layout)."""
    ptr, val = op.operands[0], op.operands[1]
    needs = plan.needs[ptr.id]
    return next((lay for lay in needs if not val.type.is_tile or lay in plan.needs.get(val.id, ())), needs[0])


_RESHAPES = frozenset({"expand_dims", "squeeze", "permute", "join"})  # the ops operand_layout changes a layout for


def operand_layout(op: ir.Op, i: int, layout: TileLayout) -> TileLayout:
    """The layout operand ``i`` of a transparent op must be in for the result to be in ``layout`` (itself unless
    the op is one of ``_RESHAPES``)."""
    name = op.name
    if name == "expand_dims":
        axis = op.attrs["axis"]
        return TileLayout(layout.parent, layout.dims[:axis] + layout.dims[axis + 1:])
    if name == "squeeze":
        axis = op.attrs["axis"]  # the removed size-1 dimension maps to no parent dimension
        return TileLayout(layout.parent, layout.dims[:axis] + (-1,) + layout.dims[axis:])
    if name == "permute":
        perm = op.attrs["order"]
        dims = [0] * len(perm)
        for j, p in enumerate(perm):
            dims[p] = layout.dims[j]
        return TileLayout(layout.parent, tuple(dims))
    if name == "join":
        return TileLayout(layout.parent, layout.dims[:-1])
    return layout


def carried_homes(fn: ir.Function, plan: LayoutPlan, ops: list[ir.Op] | None = None) -> dict[int, TileLayout]:
    """Loop results whose carried value the body needs in another layout than its home: result id -> that layout.

    The backward walk homes a loop-carried value before it walks the body: in the layout the code after the loop
    needs it in, else the default blocked layout. A pointer tile advanced by the loop and used only inside it
    (``b_ptrs += BLOCK_K * stride_bk``) whose load is done in another layout (a column-major B, loaded along
    its columns) would then be converted through threadgroup memory on every iteration (a [64, 128] tile of
    pointers: 66 KB, over Metal's 32 KB). Homing it where the body uses it removes the conversion."""
    hints: dict[int, TileLayout] = {}
    for op in ir.walk(fn.ops) if ops is None else ops:
        if op.name not in ("for", "while"):
            continue
        for region in op.regions:
            carried = region.args[1:] if op.name == "for" else region.args
            for a, r in zip(carried, op.results):
                home = plan.homes.get(a.id)
                other = [lay for lay in plan.needs.get(a.id, ()) if lay != home]
                if home is not None and other and r.id not in hints:
                    hints[r.id] = other[0]
    return hints


def conversion_cost(fn: ir.Function, plan: LayoutPlan) -> int:
    """Bytes a plan moves through threadgroup memory for layout conversions (a value computed in its home and
    needed in other layouts), a conversion inside a loop counting 16 times per level of nesting."""
    cost = 0

    def walk(block: ir.Block, weight: int) -> None:
        nonlocal cost
        for op in block.ops:
            inner = weight * 16 if op.name in ("for", "while") else weight
            for region in op.regions:
                for v in region.args:
                    cost += _extra(v) * inner
                walk(region, inner)
            for v in op.results:
                cost += _extra(v) * weight

    def _extra(v: ir.Value) -> int:
        home = plan.homes.get(v.id)
        if home is None or not v.type.is_tile:
            return 0
        n = sum(1 for lay in plan.needs.get(v.id, ()) if lay != home)
        size = 8 if v.type.element.is_ptr() else max(v.type.element.itemsize, 1)  # pointers move as 64-bit offsets
        return n * v.type.numel * size

    walk(fn.body, 1)
    return cost


def assign_layouts(fn: ir.Function, num_warps: int, dot_backend: str = "simdgroup",
                   matmul2d_rejects: dict | None = None, axis: dict[int, AxisInfo] | None = None,
                   fragments_in_registers: bool = True) -> LayoutPlan:
    """Decide the layout(s) of every tile value of ``fn`` (``axis``: the axis analysis, which orients dot operands'
    loads along memory; ``fragments_in_registers``: False when the device's fragment lane mapping is not the
    assumed one, so no dot takes its A fragments from registers).

    When the body of a loop needs a carried value in another layout than its home (``carried_homes``), the plan is
    made again with those values homed where the body uses them, and the plan that converts fewer bytes (loops
    weighted) is kept."""
    first = _Assigner(fn, num_warps, dot_backend, matmul2d_rejects, axis, fragments_in_registers)
    plan = first.run()
    hints = carried_homes(fn, plan, first.ops) if "for" in first.names or "while" in first.names else None
    if not hints:
        return plan
    second = first.again(hints)
    second.block_walk()
    again = second.plan
    return again if conversion_cost(fn, again) < conversion_cost(fn, plan) else plan
