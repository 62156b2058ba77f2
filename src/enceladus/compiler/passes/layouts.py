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
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import ir

WARP_SIZE = 32


@dataclass(frozen=True)
class BlockedLayout:
    shape: tuple[int, ...]
    size_per_thread: tuple[int, ...]
    threads_per_warp: tuple[int, ...]
    warps_per_cta: tuple[int, ...]
    order: tuple[int, ...]  # dimensions from fastest- to slowest-varying

    @property
    def cta_tile(self) -> tuple[int, ...]:
        return tuple(s * t * w for s, t, w in zip(self.size_per_thread, self.threads_per_warp, self.warps_per_cta))

    @property
    def reps(self) -> tuple[int, ...]:
        return tuple(max(1, n // c) for n, c in zip(self.shape, self.cta_tile))

    @property
    def per_thread(self) -> tuple[int, ...]:
        """Elements a thread holds along each dimension."""
        return tuple(s * r for s, r in zip(self.size_per_thread, self.reps))

    @property
    def elems_per_thread(self) -> int:
        return math.prod(self.per_thread)

    @property
    def replicated(self) -> tuple[bool, ...]:
        """Dimensions where the layout covers more than the tile (several threads hold the same element)."""
        return tuple(c > n for n, c in zip(self.shape, self.cta_tile))

    def slot_stride(self, d: int) -> int:
        """Distance between registers that differ by one step along dimension ``d`` (fastest dimension first)."""
        stride = 1
        for dd in self.order:
            if dd == d:
                return stride
            stride *= self.per_thread[dd]
        raise ValueError(d)

    def __str__(self) -> str:
        return (f"blocked<shape={list(self.shape)}, spt={list(self.size_per_thread)}, "
                f"tpw={list(self.threads_per_warp)}, wpc={list(self.warps_per_cta)}, order={list(self.order)}>")


@dataclass(frozen=True)
class TileLayout:
    """A tile held in ``parent``'s registers; value dimension i is parent dimension ``dims[i]``."""

    parent: BlockedLayout
    dims: tuple[int, ...]

    def __str__(self) -> str:
        if self.dims == tuple(range(len(self.parent.shape))):
            return str(self.parent)
        return f"{self.parent}[dims={list(self.dims)}]"


def default_blocked(shape: tuple[int, ...], itemsize: int, num_warps: int, min_last: int = 1) -> BlockedLayout:
    """Triton's default coalesced layout: 16 bytes per thread along the last dimension when the tile allows."""
    rank = len(shape)
    order = tuple(reversed(range(rank)))
    nthreads = WARP_SIZE * num_warps
    numel = math.prod(shape)
    fast = order[0]
    spt = [1] * rank
    spt[fast] = max(min_last, min(16 // itemsize, max(numel // nthreads, 1), shape[fast]))
    tpw = [1] * rank
    remaining = WARP_SIZE
    for d in order:
        t = min(remaining, max(shape[d] // spt[d], 1))
        tpw[d] = t
        remaining //= t
    tpw[order[-1]] *= remaining  # a tile smaller than a SIMD group: lanes hold copies
    wpc = [1] * rank
    remaining = num_warps
    for d in order:
        w = min(remaining, max(shape[d] // (spt[d] * tpw[d]), 1))
        wpc[d] = w
        remaining //= w
    wpc[order[-1]] *= remaining
    return BlockedLayout(tuple(shape), tuple(spt), tuple(tpw), tuple(wpc), order)


# Ops whose result is computed slot by slot from operands in the same layout (or a view of it).
_TRANSPARENT = ir.ELEMENTWISE | {"splat", "broadcast", "expand_dims", "squeeze", "permute", "join", "multiple_of",
                                 "max_contiguous", "arange", "const"}
# Ops that move data through threadgroup memory: any operand layout works, the result has a home.
_VIA_SMEM = {"reshape", "cat", "flip", "convert"}


@dataclass
class LayoutPlan:
    """The result of layout assignment."""

    needs: dict[int, list[TileLayout]] = field(default_factory=dict)  # value id -> layouts it is needed in
    homes: dict[int, TileLayout] = field(default_factory=dict)  # value id -> the layout it is computed in
    pure: dict[int, bool] = field(default_factory=dict)
    parents: list[BlockedLayout] = field(default_factory=list)

    def demand(self, v: ir.Value, layout: TileLayout) -> None:
        if not v.type.is_tile:
            return
        lst = self.needs.setdefault(v.id, [])
        if layout not in lst:
            lst.append(layout)
        if layout.parent not in self.parents:
            self.parents.append(layout.parent)


class _Assigner:
    def __init__(self, fn: ir.Function, num_warps: int):
        self.fn = fn
        self.num_warps = num_warps
        self.plan = LayoutPlan()
        self.itemsize: dict[tuple[int, ...], int] = {}
        self.blocked: dict[tuple[tuple[int, ...], int], BlockedLayout] = {}
        for op in ir.walk(fn.ops):
            if op.name in ("load", "store") and op.operands[0].type.shape:
                shape = op.operands[0].type.shape
                size = op.operands[0].type.element.element_ty.itemsize
                self.itemsize[shape] = min(self.itemsize.get(shape, size), size)

    def anchor(self, shape: tuple[int, ...], min_last: int = 1) -> TileLayout:
        key = (shape, min_last)
        if key not in self.blocked:
            self.blocked[key] = default_blocked(shape, self.itemsize.get(shape, 4), self.num_warps, min_last)
        return TileLayout(self.blocked[key], tuple(range(len(shape))))

    # --- purity: values computed only from indices, constants and scalars ---------------------------
    def mark_pure(self, ops: list[ir.Op]) -> None:
        pure = self.plan.pure
        for op in ops:
            for region in op.regions:
                for a in region.args:
                    pure[a.id] = False
                self.mark_pure(region.ops)
            # scalars are uniform: a splat of any scalar is available in every layout
            ok = op.name in _TRANSPARENT and all(pure.get(o.id, True) or not o.type.is_tile for o in op.operands)
            for r in op.results:
                pure[r.id] = ok or not r.type.is_tile

    def first_need(self, v: ir.Value) -> TileLayout | None:
        lst = self.plan.needs.get(v.id)
        return lst[0] if lst else None

    def home(self, v: ir.Value, layout: TileLayout) -> TileLayout:
        self.plan.homes[v.id] = layout
        self.plan.demand(v, layout)
        v.layout = layout
        return layout

    # --- the backward walk ---------------------------------------------------------------------------
    def run(self) -> LayoutPlan:
        self.mark_pure(self.fn.ops)
        self.block(self.fn.body)
        return self.plan

    def block(self, block: ir.Block) -> None:
        for op in reversed(block.ops):
            self.op(op)

    def op(self, op: ir.Op) -> None:
        name = op.name
        plan = self.plan
        if name == "store":
            ptr = op.operands[0]
            if ptr.type.is_tile:
                layout = self.anchor(ptr.type.shape)
                for o in op.operands:
                    plan.demand(o, layout)
            return
        if name == "yield":
            return  # handled by the op that owns the region
        if name in ("for", "while", "if"):
            self.control_flow(op)
            return
        if name in ("reduce", "scan"):
            self.reduction(op)
            return
        if name == "split":
            x = op.operands[0]
            lx = self.anchor(x.type.shape, min_last=2)
            plan.demand(x, lx)
            for r in op.results:
                self.home(r, TileLayout(lx.parent, lx.dims[:-1]))
            return
        r = op.result
        if r is None or not r.type.is_tile:
            return
        layouts = list(plan.needs.get(r.id, []))
        if not layouts:
            if plan.pure[r.id]:
                return  # dead index arithmetic
            layouts = [self.anchor(r.type.shape)]  # e.g. a load whose value is unused still happens
        if name in _VIA_SMEM:
            self.home(r, layouts[0])
            for o in op.operands:
                if o.type.is_tile:
                    plan.demand(o, self.anchor(o.type.shape))
            return
        if not plan.pure[r.id]:
            layouts = [self.home(r, layouts[0])]  # computed once; other demands are conversions
        else:
            r.layout = layouts[0]
        for layout in layouts:
            for i, o in enumerate(op.operands):
                if o.type.is_tile:
                    plan.demand(o, operand_layout(op, i, layout))

    def control_flow(self, op: ir.Op) -> None:
        plan = self.plan
        n_bounds = 3 if op.name == "for" else (1 if op.name == "if" else 0)
        homes = []
        for r in op.results:
            if r.type.is_tile:
                homes.append(self.home(r, self.first_need(r) or self.anchor(r.type.shape)))
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
            lx = self.first_need(r0) or self.anchor(x0.type.shape)
            for r in op.results:
                self.home(r, lx)
        else:
            want = self.first_need(r0) if r0.type.is_tile else None
            lx = None
            if want is not None and len(want.parent.shape) == len(x0.type.shape):
                free = [d for d in range(len(want.parent.shape)) if d not in want.dims]
                if len(free) == 1:
                    lx = TileLayout(want.parent, want.dims[:axis] + (free[0],) + want.dims[axis:])
            if lx is None:
                lx = self.anchor(x0.type.shape)
            for r in op.results:
                if r.type.is_tile:
                    self.home(r, TileLayout(lx.parent, lx.dims[:axis] + lx.dims[axis + 1:]))
        op.attrs["_operand_layout"] = lx
        for x in op.operands:
            plan.demand(x, lx)
        # combine regions hold only scalars


def operand_layout(op: ir.Op, i: int, layout: TileLayout) -> TileLayout:
    """The layout operand ``i`` of a transparent op must be in for the result to be in ``layout``."""
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


def assign_layouts(fn: ir.Function, num_warps: int) -> LayoutPlan:
    """Decide the layout(s) of every tile value of ``fn``."""
    return _Assigner(fn, num_warps).run()
