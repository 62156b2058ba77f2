"""Layout values: which thread holds which element of a tile (``BlockedLayout``, ``MmaLayout``, ``TileLayout``).

The values only, light on purpose: compiled kernels carry their layouts (``kernel.metadata["layouts"]``,
``explain()``), so loading a cached kernel reads them without importing the layout pass
(``passes/layouts.py``), which decides them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from operator import attrgetter

from ..language.dtypes import derived
from .metal_limits import SIMD_WIDTH

WARP_SIZE = SIMD_WIDTH  # lanes per SIMD group (compiler/metal_limits.py)


def order_stride(order: tuple[int, ...], sizes: tuple[int, ...], d: int) -> int:
    """The step of dimension ``d`` when ``sizes`` are laid out along ``order`` (fastest first): the product
    of the sizes of the dimensions before ``d`` in ``order``."""
    return math.prod(sizes[dd] for dd in order[: order.index(d)])


class _LayoutValue:
    """Equality and hashing of a layout by its fields, as the dataclass would give them, with the hash computed
    once per layout: layouts are immutable values used as dictionary keys on every register reference of the
    code generator. (The derived sizes are ``language.dtypes.derived``; the dataclass fields and repr are unchanged.) Subclasses
    name their fields in ``_fields``."""

    _fields: attrgetter
    _hash = None  # the instance's own once computed (set as ``derived`` sets its values)

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = hash(self._fields(self))
            object.__setattr__(self, "_hash", h)
        return h

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields(self) == self._fields(other)


@dataclass(frozen=True, eq=False)  # equality and hashing: _LayoutValue
class BlockedLayout(_LayoutValue):
    shape: tuple[int, ...]
    size_per_thread: tuple[int, ...]
    threads_per_warp: tuple[int, ...]
    warps_per_cta: tuple[int, ...]
    order: tuple[int, ...]  # dimensions from fastest- to slowest-varying

    _fields = attrgetter("shape", "size_per_thread", "threads_per_warp", "warps_per_cta", "order")

    @derived
    def cta_tile(self) -> tuple[int, ...]:
        return tuple(s * t * w for s, t, w in zip(self.size_per_thread, self.threads_per_warp, self.warps_per_cta))

    @derived
    def reps(self) -> tuple[int, ...]:
        return tuple(max(1, n // c) for n, c in zip(self.shape, self.cta_tile))

    @derived
    def per_thread(self) -> tuple[int, ...]:
        """Elements a thread holds along each dimension."""
        return tuple(s * r for s, r in zip(self.size_per_thread, self.reps))

    @derived
    def elems_per_thread(self) -> int:
        return math.prod(self.per_thread)

    @derived
    def replicated(self) -> tuple[bool, ...]:
        """Dimensions where the layout covers more than the tile (several threads hold the same element)."""
        return tuple(c > n for n, c in zip(self.shape, self.cta_tile))

    def slot_stride(self, d: int) -> int:
        """Distance between registers that differ by one step along dimension ``d`` (fastest dimension first)."""
        return order_stride(self.order, self.per_thread, d)

    def lane_stride(self, d: int) -> int:
        """Distance between lanes that differ by one step along dimension ``d``."""
        return order_stride(self.order, self.threads_per_warp, d)

    def warp_stride(self, d: int) -> int:
        """Distance between SIMD groups that differ by one step along dimension ``d``."""
        return order_stride(self.order, self.warps_per_cta, d)

    def __str__(self) -> str:
        return (f"blocked<shape={list(self.shape)}, spt={list(self.size_per_thread)}, "
                f"tpw={list(self.threads_per_warp)}, wpc={list(self.warps_per_cta)}, order={list(self.order)}>")


@dataclass(frozen=True, eq=False)
class MmaLayout(_LayoutValue):
    """The accumulator layout of ``tl.dot`` on ``simdgroup_matrix``: the [M, N] tile is cut into 8x8 fragments,
    ``warps`` = (wm, wn) SIMD groups each own a block of (M/wm) x (N/wn), and in every fragment lane l holds two
    adjacent elements of one row: row = 4*((l>>4)&1) + 2*((l>>2)&1) + ((l>>1)&1), col = 4*((l>>3)&1) + 2*(l&1) + j.

    That lane layout is what MLX, tinygrad, metal-flash-attention and a probe on M1 agree on; Apple's
    specification leaves it unspecified (docs/verification.md)."""

    shape: tuple[int, int]
    warps: tuple[int, int]

    _fields = attrgetter("shape", "warps")

    @derived
    def frags(self) -> tuple[int, int]:
        return self.shape[0] // (8 * self.warps[0]), self.shape[1] // (8 * self.warps[1])

    @derived
    def elems_per_thread(self) -> int:
        fm, fn = self.frags
        return fm * fn * 2

    # the blocked-layout vocabulary the code generator uses
    order = (1, 0)
    size_per_thread = (1, 2)
    replicated = (False, False)

    @derived
    def per_thread(self) -> tuple[int, int]:
        fm, fn = self.frags
        return fm, 2 * fn

    def slot_stride(self, d: int) -> int:
        return 1 if d == 1 else 2 * self.frags[1]

    def __str__(self) -> str:
        return f"mma<shape={list(self.shape)}, warps={list(self.warps)}, fragments={list(self.frags)}>"


def mma_layout(shape: tuple[int, ...], num_warps: int) -> MmaLayout | None:
    """The simdgroup_matrix accumulator layout for an [M, N] dot result, or None when the shape does not split
    into 8x8 fragments over all SIMD groups."""
    if len(shape) != 2:
        return None
    m, n = shape
    best = None
    wm = 1
    while wm <= num_warps:
        wn = num_warps // wm
        if m % (8 * wm) == 0 and n % (8 * wn) == 0:
            score = abs((m // wm) - (n // wn))
            if best is None or score < best[0]:
                best = (score, (wm, wn))
        wm *= 2
    return MmaLayout((m, n), best[1]) if best else None


@dataclass(frozen=True, eq=False)
class TileLayout(_LayoutValue):
    """A tile held in ``parent``'s registers; value dimension i is parent dimension ``dims[i]``."""

    parent: BlockedLayout | MmaLayout
    dims: tuple[int, ...]

    _fields = attrgetter("parent", "dims")

    def __str__(self) -> str:
        if self.dims == tuple(range(len(self.parent.shape))):
            return str(self.parent)
        return f"{self.parent}[dims={list(self.dims)}]"


def default_blocked(shape: tuple[int, ...], itemsize: int, num_warps: int, min_last: int = 1,
                    vector_bytes: int = 16) -> BlockedLayout:
    """Triton's default coalesced layout: ``vector_bytes`` (16) per thread along the last dimension when the tile
    allows."""
    rank = len(shape)
    order = tuple(reversed(range(rank)))
    nthreads = WARP_SIZE * num_warps
    numel = math.prod(shape)
    fast = order[0]
    spt = [1] * rank
    spt[fast] = max(min_last, min(max(vector_bytes // itemsize, 1), max(numel // nthreads, 1), shape[fast]))
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


_IDENTITY = {n: tuple(range(n)) for n in range(1, 9)}  # rank -> the dims of a layout that is its parent's shape


def fits(layout: TileLayout, shape: tuple[int, ...]) -> bool:
    """Whether a tile of ``shape`` can live in ``layout`` (each dimension is 1 or its parent dimension's size)."""
    dims = layout.dims
    if len(dims) != len(shape):
        return False
    parent_shape = layout.parent.shape
    if parent_shape == shape and dims == _IDENTITY.get(len(dims)):
        return True  # the common case: a tile in the blocked layout of its own shape
    for s, d in zip(shape, dims):  # noqa: SIM110 - a loop, not all(...): it runs for every demand of every value
        if s != 1 and (d < 0 or parent_shape[d] != s):
            return False
    return True
