"""Which pairs of global accesses of one program may touch one address from two different threads: the
decision ``passes/device_order.py`` asks for every pair it meets in program order (``conflict``).

- **Offsets** are polynomials (``Poly``) in the tile's index variables ("#i") and the program's scalars.
- **Threads**: which thread touches which element of a tile in a layout (``element_threads``): every holder for
  a load, the owner for a store or atomic.
- **The decision**: most pairs from the offsets and layouts alone (``_never_shared``: byte ranges apart, or one
  tile in one layout holding each element in one register, addressed alike); the others element by element
  (``_exact_conflict``), or with generic values of the runtime strides (``_symbolic_conflict``). The thread maps
  and element-by-element answers are pure functions of hashable keys, memoised.
"""

from __future__ import annotations

import functools
import math
import operator
from itertools import repeat

import numpy as np

from ...language.dtypes import derived
from .. import ir
from ..layout import WARP_SIZE, BlockedLayout, MmaLayout, TileLayout

_PRIME = (1 << 31) - 1  # generic evaluation of symbolic offsets (modulo a prime: exact identities survive)

Poly = dict  # monomial (sorted tuple of symbols) -> integer coefficient; symbols "#i" are tile index variables


# --- polynomials ---------------------------------------------------------------------------------------------------
def poly_const(c: int) -> Poly:
    return {(): c} if c else {}


def _accumulate(out: Poly, terms) -> Poly:
    """``out`` plus each (monomial, coefficient) of ``terms``, without zero coefficients."""
    for m, c in terms:
        v = out.get(m, 0) + c
        if v:
            out[m] = v
        else:
            out.pop(m, None)
    return out


def poly_add(a: Poly, b: Poly, sign: int = 1) -> Poly:
    # b's terms times sign, made by C iterators (no Python frame per term: this runs for every offset value)
    return _accumulate(dict(a), b.items() if sign == 1 else zip(b, map(operator.mul, b.values(), repeat(sign))))


def poly_mul(a: Poly, b: Poly) -> Poly:
    # a monomial is a sorted tuple already: only a product of two non-constant monomials needs sorting
    return _accumulate({}, [(tuple(sorted(ma + mb)) if ma and mb else ma or mb, ca * cb)
                            for ma, ca in a.items() for mb, cb in b.items()])


def poly_scale(p: Poly, c: int) -> Poly:
    """``p`` times a non-zero integer ``c`` (``poly_mul(p, poly_const(c))``, the same terms in the same order)."""
    return {m: v * c for m, v in p.items()}


def poly_rename(p: Poly, f) -> Poly:
    """Rename index variables (``f(i)`` -> new index, or None: that variable is 0 and its monomials vanish)."""
    out: Poly = {}
    for m, c in p.items():
        new = []
        for s in m:
            if s.startswith("#"):
                j = f(int(s[1:]))
                if j is None:
                    break
                s = f"#{j}"
            new.append(s)
        else:
            key = tuple(sorted(new))
            out[key] = out.get(key, 0) + c
    return {m: c for m, c in out.items() if c}


def poly_key(p: Poly) -> tuple:
    return tuple(sorted(p.items()))


def poly_split(p: Poly) -> tuple[Poly, Poly]:
    """(the part without index variables, the part with them)."""
    outer: Poly = {}
    inner: Poly = {}
    for m, c in p.items():
        # a monomial holds an index variable if its first symbol is one: monomials are sorted tuples, and "#"
        # sorts before the first character of every other symbol (a letter)
        if m and m[0][0] == "#":
            inner[m] = c
        else:
            outer[m] = c
    return outer, inner


# --- which thread touches which element -------------------------------------------------------------------------
@functools.lru_cache(maxsize=64)  # a 128x128 tile's maps are 256 KiB: 64 of them at most stay alive
def element_threads(layout: TileLayout, shape: tuple[int, ...], owners_only: bool) -> tuple[np.ndarray, np.ndarray]:
    """(thread, row-major element index) of every register of a ``shape`` tile held in ``layout``: all holders
    (a load: replicas load too), or only each element's owner (a store or atomic; ``MSLEmitter.owner``).

    A pure function of its (hashable) arguments, memoised: the same layouts recur across the accesses of a kernel
    and across kernels. The arrays returned are read-only (shared by every caller)."""
    p = layout.parent
    nthreads = WARP_SIZE * (p.warps[0] * p.warps[1] if isinstance(p, MmaLayout) else int(np.prod(p.warps_per_cta)))
    tid, e = np.meshgrid(np.arange(nthreads), np.arange(p.elems_per_thread), indexing="ij")
    tid, e = tid.ravel(), e.ravel()
    lane, warp = tid % WARP_SIZE, tid // WARP_SIZE
    rank = len(p.shape)
    raw = [_raw_coord(p, d, lane, warp, e) for d in range(rank)]
    keep = np.ones(tid.shape, dtype=bool)
    coords = []
    for i, n in enumerate(shape):
        d = layout.dims[i]
        if n == 1 or d < 0:
            coords.append(np.zeros_like(tid))
        else:
            coords.append(raw[d] % p.shape[d] if p.replicated[d] else raw[d])
    if owners_only:
        for d in range(rank):
            if d in layout.dims:
                i = layout.dims.index(d)
                if isinstance(p, BlockedLayout) and shape[i] == 1 and p.cta_tile[d] * p.per_thread[d] > 1:
                    keep &= raw[d] == 0
                elif p.replicated[d]:
                    keep &= raw[d] < p.shape[d]
            else:
                keep &= raw[d] == 0
    flat = np.zeros_like(tid)
    for i, n in enumerate(shape):
        flat = flat * n + coords[i]
    return _frozen(tid[keep]), _frozen(flat[keep])


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


@functools.lru_cache(maxsize=512)
def _thread_facts(threads: tuple) -> tuple[bool, int | None]:
    """(some element is touched by several threads, the one thread making every access or None) of a thread map
    ``threads`` (see ``Access.threads``)."""
    tids, elems = _thread_map(threads)
    return bool(np.bincount(elems).max() > 1), (int(tids[0]) if tids.min() == tids.max() else None)


def _thread_map(threads: tuple) -> tuple[np.ndarray, np.ndarray]:
    """(tids, elems) of a thread-map key: ("tile", layout, shape, owners_only), ("all", nthreads) -- every thread
    touches element 0 -- or ("one",): thread 0 touches element 0."""
    if threads[0] == "tile":
        return element_threads(*threads[1:])
    n = threads[1] if threads[0] == "all" else 1
    return _all_threads(n)


@functools.lru_cache(maxsize=64)
def _all_threads(n: int) -> tuple[np.ndarray, np.ndarray]:
    return _frozen(np.arange(n)), _frozen(np.zeros(n, dtype=np.int64))


def _raw_coord(p: BlockedLayout | MmaLayout, d: int, lane, warp, e):
    """The coordinate along parent dimension ``d`` of register ``e`` of each thread (``MSLEmitter.raw_coord``)."""
    if isinstance(p, MmaLayout):
        fm, fn = p.frags
        wm, wn = p.warps
        block = p.shape[d] // p.warps[d]
        if d == 0:
            w = warp // wn if wm > 1 else 0
            fr = 4 * ((lane >> 4) & 1) + 2 * ((lane >> 2) & 1) + ((lane >> 1) & 1)
            return w * block + ((e // (2 * fn)) * 8 if fm > 1 else 0) + fr
        w = warp % wn if wn > 1 else 0
        fc = 4 * ((lane >> 3) & 1) + 2 * (lane & 1)
        local = e % (2 * fn) if fm > 1 else e
        return w * block + ((local // 2) * 8 if fn > 1 else 0) + fc + local % 2
    spt, tpw, wpc = p.size_per_thread[d], p.threads_per_warp[d], p.warps_per_cta[d]
    base = ((warp // p.warp_stride(d)) % wpc) * spt * tpw + ((lane // p.lane_stride(d)) % tpw) * spt
    local = (e // p.slot_stride(d)) % p.per_thread[d]
    return base + local % spt + (local // spt) * p.cta_tile[d]


class Access:
    """One global load, store or atomic (in one iteration of its loops): its bytes and the threads touching them."""

    def __init__(self, op: ir.Op, writes: bool, commutative: bool, poly_of, shape: tuple[int, ...],
                 itemsize: int, threads: tuple):
        self.op, self.writes, self.commutative = op, writes, commutative
        self._poly_of = poly_of  # () -> its offset polynomial: found only for pairs with a write (``conflict``)
        self.shape, self.itemsize = shape, itemsize
        self.threads = threads  # the key of every (thread, element) pair that touches memory (``_thread_map``)

    @derived  # (functools.cached_property takes a lock and reads the instance's __dict__: see derived)
    def poly(self) -> Poly | None:
        return self._poly_of()

    @property
    def tids(self) -> np.ndarray:
        return _thread_map(self.threads)[0]

    @property
    def elems(self) -> np.ndarray:
        return _thread_map(self.threads)[1]

    @property
    def replicated(self) -> bool:
        """Some element is touched by several threads."""
        t = self.threads
        if t[0] == "tile" and one_register_per_element(t[1], t[2]):
            return False
        return _thread_facts(t)[0]

    @property
    def one_thread(self) -> int | None:
        """The thread making every access, if only one does."""
        t = self.threads
        if t[0] == "tile" and one_register_per_element(t[1], t[2]):
            return None  # every thread of the threadgroup (32 or more) holds a register of the tile
        return _thread_facts(t)[1]


def _cross_thread(addr_a, tid_a, addr_b, tid_b) -> bool:
    """Whether some address occurs in both with two different threads."""
    def spans(addr, tid):  # each distinct address with the lowest and highest thread touching it
        order = np.argsort(addr, kind="stable")
        addr, tid = addr[order], tid[order]
        starts = np.flatnonzero(np.concatenate(([True], addr[1:] != addr[:-1])))
        return addr[starts], np.minimum.reduceat(tid, starts), np.maximum.reduceat(tid, starts)

    ua, loa, hia = spans(addr_a, tid_a)
    ub, lob, hib = spans(addr_b, tid_b)
    _, ia, ib = np.intersect1d(ua, ub, assume_unique=True, return_indices=True)
    if not len(ia):
        return False
    return bool(np.any((loa[ia] != hia[ia]) | (lob[ib] != hib[ib]) | (loa[ia] != lob[ib])))


def _evaluate(p: Poly, shape: tuple[int, ...], atoms: dict[str, int] | None) -> np.ndarray:
    """``p`` at every element of ``shape`` (row-major): exactly (no atoms), or modulo a prime with ``atoms``."""
    idx = np.indices(shape, dtype=np.int64).reshape(len(shape), -1) if shape else np.zeros((0, 1), np.int64)
    out = np.zeros(idx.shape[1] if shape else 1, dtype=np.int64)
    for m, c in p.items():
        term = np.full(out.shape, c % _PRIME if atoms is not None else c, dtype=np.int64)
        for s in m:
            v = idx[int(s[1:])] if s.startswith("#") else atoms[s]
            term = term * v
            if atoms is not None:
                term %= _PRIME
        out = out + term
        if atoms is not None:
            out %= _PRIME
    return out


def _generic_atoms(*polys: Poly) -> dict[str, int]:
    return dict(_generic_values(tuple(sorted({s for p in polys for m in p for s in m if not s.startswith("#")}))))


@functools.lru_cache(maxsize=256)
def _generic_values(names: tuple[str, ...]) -> tuple[tuple[str, int], ...]:
    """A fixed pseudo-random value for each symbol (a pure function of the sorted names: a fixed seed, so that
    compiling twice gives the same MSL)."""
    rng = np.random.default_rng(20261203)
    return tuple((n, int(v)) for n, v in zip(names, rng.integers(1 << 20, _PRIME, len(names))))


def _form(g: Poly) -> tuple:
    """The index terms of an offset, with every runtime coefficient (a stride argument) written as "s"."""
    out: dict[tuple, object] = {}
    for m, c in g.items():
        idx = tuple(x for x in m if x.startswith("#"))
        symbolic = len(idx) < len(m)
        out[idx] = "s" if symbolic or out.get(idx) == "s" else out.get(idx, 0) + c
    return tuple(sorted(out.items()))


def conflict(a: Access, b: Access) -> str | None:
    """Why ``a`` then ``b`` need a device barrier between them (None: they never touch one address from two
    different threads, or neither writes)."""
    if not (a.writes or b.writes) or (a.commutative and b.commutative):
        return None
    reason = None
    if a.poly is None or b.poly is None:
        reason = "their addresses are not known at compile time"
    else:
        ca, ga = poly_split(a.poly)
        cb, gb = poly_split(b.poly)
        diff = poly_add(ca, cb, -1)
        # a runtime symbol in an index term: its monomial's last symbol (sorted: index variables "#i" come first)
        symbolic = any(m[-1][0] != "#" for m in ga) or any(m[-1][0] != "#" for m in gb)
        key_a, key_b = poly_key(ga), poly_key(gb)
        if any(diff) or (symbolic and key_a != key_b):  # (any(diff): a monomial other than the constant one)
            # the same block of the same shape, addressed the same way (strides may be different arguments): it
            # is assumed to be the same memory element for element (an array passed twice) or disjoint memory
            if not (a.shape == b.shape and a.itemsize == b.itemsize and _form(ga) == _form(gb)):
                reason = "their addresses differ by a runtime value" if any(diff) else \
                    "their addresses may coincide (different runtime strides)"
            key_b = key_a  # compared as one block (a constant shift inside it still counts)
        d = diff.get((), 0)
        if reason is None and _never_shared(a, b, key_a, key_b, d, symbolic):
            return None  # shown without the thread maps below (their NumPy work is most of this pass's time)
    ta = a.one_thread
    if ta is not None and ta == b.one_thread:
        return None  # one thread does both, in program order
    if reason is not None:
        return reason
    if not symbolic:
        return _exact_conflict(key_a, key_b, d, tuple(a.shape), tuple(b.shape), a.itemsize, b.itemsize,
                               a.threads, b.threads)
    # runtime strides: taken as generic values (distinct elements of a tile never share an address unless the
    # offsets say so for every value of the strides)
    return _symbolic_conflict(key_a, d, tuple(a.shape), a.threads, b.threads)


def _never_shared(a: Access, b: Access, ga: tuple, gb: tuple, d: int, symbolic: bool) -> bool:
    """Whether ``ga + d`` over ``a``'s elements and ``gb`` over ``b``'s (index terms as ``poly_key`` tuples) provably
    never put one address in two threads, decided from the offsets and layouts alone: the answer
    ``_exact_conflict`` / ``_symbolic_conflict`` would give, for the common pairs, with no NumPy work. Either
    the two byte ranges are apart (exact offsets: a loop's next block, another row), or both are one tile in
    one layout, addressed alike (``_same_owner_of_each_address``). False means "not shown": the caller then
    compares the thread maps."""
    if not symbolic and _apart(ga, gb, d, tuple(a.shape), tuple(b.shape), a.itemsize, b.itemsize):
        return True
    return d == 0 and ga == gb and _same_owner_of_each_address(a, b, ga)


@functools.lru_cache(maxsize=1024)
def _apart(ga: tuple, gb: tuple, d: int, shape_a: tuple, shape_b: tuple, itemsize_a: int, itemsize_b: int) -> bool:
    """Whether the bytes of ``ga + d`` (elements of ``shape_a``) and of ``gb`` (``shape_b``) lie in two disjoint
    intervals, bounded term by term (terms with a product of index variables: not shown)."""
    spans = []
    for g, shape in ((ga, shape_a), (gb, shape_b)):
        lo = hi = 0
        for m, c in g:
            if len(m) != 1:
                return False
            ext = c * (shape[int(m[0][1:])] - 1)
            lo, hi = lo + min(0, ext), hi + max(0, ext)
        spans.append((lo, hi))
    (lo_a, hi_a), (lo_b, hi_b) = spans
    return hi_a + d + itemsize_a <= lo_b or hi_b + itemsize_b <= lo_a + d


def _same_owner_of_each_address(a: Access, b: Access, g: tuple) -> bool:
    """Whether ``a`` and ``b`` (whose offsets have no difference outside their index terms) provably never touch
    one address from two threads, decided without the thread maps: the answer ``_exact_conflict`` and
    ``_symbolic_conflict`` give for the most common pair (a load and a store of ``ptr + offs`` in one layout),
    found with no NumPy work. It holds when both are tiles of one shape in one layout that holds each element
    in exactly one register of one thread (so the holders of a load are the owners of a store: the same thread
    for the same element), with the same index terms, and when those terms give distinct elements disjoint
    bytes (``_disjoint_elements``). False means "not shown": the caller then compares the maps."""
    ta, tb = a.threads, b.threads
    return (ta[0] == "tile" == tb[0] and ta[1] == tb[1] and ta[2] == tb[2] and a.itemsize == b.itemsize
            and one_register_per_element(ta[1], ta[2]) and _disjoint_elements(g, ta[2], a.itemsize))


@functools.lru_cache(maxsize=256)
def one_register_per_element(layout: TileLayout, shape: tuple[int, ...]) -> bool:
    """Whether a ``shape`` tile in ``layout`` has as many registers (threads x elements per thread) as elements:
    since every element is held by some register, each is then held by exactly one (no replica), and that
    register's thread is also its owner (``element_threads`` with and without ``owners_only`` agree)."""
    p = layout.parent
    nthreads = WARP_SIZE * (p.warps[0] * p.warps[1] if isinstance(p, MmaLayout) else math.prod(p.warps_per_cta))
    return nthreads * p.elems_per_thread == math.prod(shape)


@functools.lru_cache(maxsize=1024)
def _disjoint_elements(g: tuple, shape: tuple[int, ...], itemsize: int) -> bool:
    """Whether the index terms ``g`` (a ``poly_key``) give every two distinct elements of ``shape`` addresses that
    are ``itemsize`` bytes apart or more (exact terms), or that differ for generic values of the runtime symbols
    (terms with strides: the model of ``_symbolic_conflict``). Shown for linear terms, each index variable of a
    dimension longer than 1 in one monomial of degree 1: grouped by their runtime factor, each group's integer
    coefficients must form a mixed radix (sorted by size, each at least the span of the smaller ones plus the
    separation: itemsize for exact terms, 1 for symbolic ones). Anything else is "not shown"."""
    groups: dict[tuple, list[tuple[int, int]]] = {}
    seen = set()
    for m, c in g:
        idx = [s for s in m if s[0] == "#"]
        if len(idx) != 1 or idx[0] in seen:
            return False
        seen.add(idx[0])
        groups.setdefault(tuple(s for s in m if s[0] != "#"), []).append((abs(c), shape[int(idx[0][1:])]))
    if len(seen) != sum(1 for n in shape if n > 1):
        return False  # a dimension longer than 1 that the address does not depend on: its elements coincide
    for factor, terms in groups.items():
        gap = 1 if factor else itemsize
        span = 0
        for c, n in sorted(terms):
            if c < span + gap:
                return False
            span += c * (n - 1)
    return True


@functools.lru_cache(maxsize=1024)
def _symbolic_conflict(ga: tuple, d: int, shape_a: tuple, threads_a: tuple, threads_b: tuple) -> str | None:
    """``conflict`` for offsets with runtime symbols (strides): ``ga + d`` evaluated with generic values of the
    symbols over the elements of ``threads_a`` against ``ga`` over those of ``threads_b`` (``ga`` as a ``poly_key``
    tuple). Pure in its hashable arguments, memoised as ``_exact_conflict`` is."""
    tids_a, elems_a = _thread_map(threads_a)
    tids_b, elems_b = _thread_map(threads_b)
    g = dict(ga)
    addr = _evaluate(g, shape_a, _generic_atoms(g))
    return "another thread touches the same element" if _cross_thread(
        (addr[elems_a] + d) % _PRIME, tids_a, addr[elems_b], tids_b) else None


@functools.lru_cache(maxsize=1024)
def _exact_conflict(ga: tuple, gb: tuple, d: int, shape_a: tuple, shape_b: tuple, itemsize_a: int, itemsize_b: int,
                    threads_a: tuple, threads_b: tuple) -> str | None:
    """``conflict`` for offsets known exactly: ``ga + d`` over the elements of ``threads_a`` against ``gb`` over
    those of ``threads_b`` (index-only polynomials as ``poly_key`` tuples). Pure in its hashable arguments, memoised:
    the same pairs recur (every elementwise kernel's loads against its store)."""
    tids_a, elems_a = _thread_map(threads_a)
    tids_b, elems_b = _thread_map(threads_b)
    addr_a = _evaluate(dict(ga), shape_a, None)[elems_a] + d
    addr_b = _evaluate(dict(gb), shape_b, None)[elems_b]
    z = itemsize_a
    if z == itemsize_b and np.all(addr_a % z == 0) and np.all(addr_b % z == 0):  # whole elements
        return "another thread touches the same element" if _cross_thread(
            addr_a // z, tids_a, addr_b // z, tids_b) else None
    bytes_a = (addr_a[:, None] + np.arange(itemsize_a)).ravel()
    bytes_b = (addr_b[:, None] + np.arange(itemsize_b)).ravel()
    return "another thread touches the same bytes" if _cross_thread(
        bytes_a, np.repeat(tids_a, itemsize_a), bytes_b, np.repeat(tids_b, itemsize_b)) else None
