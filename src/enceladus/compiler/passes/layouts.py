"""Layout assignment: which thread holds which element of every tile, in which register.

A ``BlockedLayout`` (Triton's model) spreads a tile over ``num_warps`` SIMD groups of 32 lanes:
each thread owns ``size_per_thread`` consecutive elements per dimension, repeated every
``size_per_thread * threads_per_warp * warps_per_cta`` elements. A tile value lives in a
``TileLayout``: a blocked layout of an *anchor* shape plus the map from the value's dimensions to the
anchor's. So ``offs[:, None]`` broadcast into a 2-D tile is held in the 2-D layout's registers with
no data movement, and lower-rank tiles that feed 2-D tiles are computed directly in that layout.

Anchors are stores, and every tile that nothing demands. Values without loads in their inputs
(index arithmetic) can be computed in several layouts (rematerialized); a loaded value needed in two
different layouts would need a conversion through threadgroup memory, which comes with reductions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...errors import CompilationError
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


def default_blocked(shape: tuple[int, ...], itemsize: int, num_warps: int) -> BlockedLayout:
    """Triton's default coalesced layout: 16 bytes per thread along the last dimension when the tile allows."""
    rank = len(shape)
    order = tuple(reversed(range(rank)))
    nthreads = WARP_SIZE * num_warps
    numel = math.prod(shape)
    fast = order[0]
    spt = [1] * rank
    spt[fast] = max(1, min(16 // itemsize, max(numel // nthreads, 1), shape[fast]))
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


def _is_pure(op: ir.Op, pure: dict[int, bool]) -> bool:
    if op.name in ("load", "store"):
        return False
    return all(pure.get(o.id, True) for o in op.operands)


def assign_layouts(fn: ir.Function, num_warps: int) -> dict[int, set[TileLayout]]:
    """Give every tile value the layouts it is needed in. Returns value id -> layouts (all of them,
    for rematerialized values); ``Value.layout`` is set to the first."""
    # One blocked layout per tile shape, sized for the narrowest element moved through memory at that shape,
    # so that all anchors of one shape agree.
    itemsize: dict[tuple[int, ...], int] = {}
    for op in fn.ops:
        if op.name in ("load", "store"):
            shape = op.operands[0].type.shape
            if shape:
                size = op.operands[0].type.element.element_ty.itemsize
                itemsize[shape] = min(itemsize.get(shape, size), size)
    blocked: dict[tuple[int, ...], BlockedLayout] = {}

    def anchor(shape: tuple[int, ...]) -> TileLayout:
        if shape not in blocked:
            blocked[shape] = default_blocked(shape, itemsize.get(shape, 4), num_warps)
        return TileLayout(blocked[shape], tuple(range(len(shape))))

    pure: dict[int, bool] = {}
    for op in fn.ops:
        if op.result is not None:
            pure[op.result.id] = _is_pure(op, pure)

    demands: dict[int, set[TileLayout]] = {}
    order_seen: dict[int, list[TileLayout]] = {}

    def demand(v: ir.Value, layout: TileLayout) -> None:
        if not v.type.is_tile:
            return
        s = demands.setdefault(v.id, set())
        if layout not in s:
            s.add(layout)
            order_seen.setdefault(v.id, []).append(layout)

    for op in reversed(fn.ops):
        r = op.result
        if op.name == "store":
            layout = anchor(op.operands[0].type.shape) if op.operands[0].type.is_tile else None
            if layout is not None:
                for o in op.operands:
                    demand(o, layout)
            continue
        if r is None or not r.type.is_tile:
            continue
        layouts = order_seen.get(r.id)
        if not layouts:
            if not pure[r.id]:
                layouts = [anchor(r.type.shape)]  # a load whose value is unused still happens
                demand(r, layouts[0])
            else:
                continue  # dead index arithmetic
        if len(layouts) > 1 and not pure[r.id]:
            loc = op.loc
            raise CompilationError(
                "this loaded tile is used in tiles of different shapes, which needs a layout conversion through "
                "threadgroup memory (not supported yet)",
                filename=loc.filename if loc else None, lineno=loc.lineno if loc else None,
                col=loc.col if loc else None, source_line=_line(loc), kernel=fn.name,
                fix="load the tile once per shape it is used in (e.g. load it directly in its 2-D form)",
            )
        for layout in layouts:
            for o in op.operands:
                if not o.type.is_tile:
                    continue
                if op.name == "expand_dims":
                    axis = op.attrs["axis"]
                    demand(o, TileLayout(layout.parent, layout.dims[:axis] + layout.dims[axis + 1:]))
                else:
                    demand(o, layout)
    for op in fn.ops:
        if op.result is not None and op.result.id in order_seen:
            op.result.layout = order_seen[op.result.id][0]
    return demands


def _line(loc: ir.Loc | None) -> str | None:
    if loc is None:
        return None
    import linecache

    return linecache.getline(loc.filename, loc.lineno) or None
