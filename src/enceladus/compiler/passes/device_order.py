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

Most pairs are decided from the offsets and layouts alone (``_never_shared``), without building the thread
maps: byte ranges that are apart (a loop's next block), or one tile in one layout that holds each element in
exactly one register, addressed alike (its load's holder is its store's owner). The thread maps decide the rest.

A ``tl.dot`` consumes its operands: each thread writes the values it loaded to threadgroup memory before a
threadgroup barrier, so a later store by any thread cannot change what those loads returned (the loads are
dropped from the pending set when their layouts hold each element once). ``tl.debug_barrier`` orders device
memory itself. Barriers never order different programs (threadgroups); Triton gives no such guarantee either.
"""

from __future__ import annotations

import functools
import math
import operator
from dataclasses import dataclass, field
from itertools import chain, compress, repeat

import numpy as np

from .. import ir
from ..layout import WARP_SIZE, BlockedLayout, MmaLayout, TileLayout
from ..op_traits import TRANSPARENT, VIEW, ops_where
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
_PRIME = (1 << 31) - 1  # generic evaluation of symbolic offsets (modulo a prime: exact identities survive)

Poly = dict  # monomial (sorted tuple of symbols) -> integer coefficient; symbols "#i" are tile index variables


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


# --- polynomials ---------------------------------------------------------------------------------------------------
def _const(c: int) -> Poly:
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


def _add(a: Poly, b: Poly, sign: int = 1) -> Poly:
    # b's terms times sign, made by C iterators (no Python frame per term: this runs for every offset value)
    return _accumulate(dict(a), b.items() if sign == 1 else zip(b, map(operator.mul, b.values(), repeat(sign))))


def _mul(a: Poly, b: Poly) -> Poly:
    # a monomial is a sorted tuple already: only a product of two non-constant monomials needs sorting
    return _accumulate({}, [(tuple(sorted(ma + mb)) if ma and mb else ma or mb, ca * cb)
                            for ma, ca in a.items() for mb, cb in b.items()])


def _rename(p: Poly, f) -> Poly:
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


def _key(p: Poly) -> tuple:
    return tuple(sorted(p.items()))


def _split(p: Poly) -> tuple[Poly, Poly]:
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
    ``threads`` (see ``_Access.threads``)."""
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


class _Access:
    """One global load, store or atomic (in one iteration of its loops): its bytes and the threads touching them."""

    def __init__(self, op: ir.Op, writes: bool, commutative: bool, poly_of, shape: tuple[int, ...],
                 itemsize: int, threads: tuple):
        self.op, self.writes, self.commutative = op, writes, commutative
        self._poly_of = poly_of  # () -> its offset polynomial: found only for pairs with a write (``conflict``)
        self.shape, self.itemsize = shape, itemsize
        self.threads = threads  # the key of every (thread, element) pair that touches memory (``_thread_map``)

    @functools.cached_property
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
        if t[0] == "tile" and _one_register_per_element(t[1], t[2]):
            return False
        return _thread_facts(t)[0]

    @property
    def one_thread(self) -> int | None:
        """The thread making every access, if only one does."""
        t = self.threads
        if t[0] == "tile" and _one_register_per_element(t[1], t[2]):
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


def conflict(a: _Access, b: _Access) -> str | None:
    """Why ``a`` then ``b`` need a device barrier between them (None: they never touch one address from two
    different threads, or neither writes)."""
    if not (a.writes or b.writes) or (a.commutative and b.commutative):
        return None
    reason = None
    if a.poly is None or b.poly is None:
        reason = "their addresses are not known at compile time"
    else:
        ca, ga = _split(a.poly)
        cb, gb = _split(b.poly)
        diff = _add(ca, cb, -1)
        symbolic = any(not s.startswith("#") for p in (ga, gb) for m in p for s in m)
        if any(m for m in diff) or (symbolic and _key(ga) != _key(gb)):
            # the same block of the same shape, addressed the same way (strides may be different arguments): it
            # is assumed to be the same memory element for element (an array passed twice) or disjoint memory
            if not (a.shape == b.shape and a.itemsize == b.itemsize and _form(ga) == _form(gb)):
                reason = "their addresses differ by a runtime value" if any(m for m in diff) else \
                    "their addresses may coincide (different runtime strides)"
            gb = ga  # compared as one block (a constant shift inside it still counts)
        d = diff.get((), 0)
        if reason is None and _never_shared(a, b, _key(ga), _key(gb), d, symbolic):
            return None  # shown without the thread maps below (their NumPy work is most of this pass's time)
    ta = a.one_thread
    if ta is not None and ta == b.one_thread:
        return None  # one thread does both, in program order
    if reason is not None:
        return reason
    if not symbolic:
        return _exact_conflict(_key(ga), _key(gb), d, tuple(a.shape), tuple(b.shape), a.itemsize, b.itemsize,
                               a.threads, b.threads)
    # runtime strides: taken as generic values (distinct elements of a tile never share an address unless the
    # offsets say so for every value of the strides)
    return _symbolic_conflict(_key(ga), d, tuple(a.shape), a.threads, b.threads)


def _never_shared(a: _Access, b: _Access, ga: tuple, gb: tuple, d: int, symbolic: bool) -> bool:
    """Whether ``ga + d`` over ``a``'s elements and ``gb`` over ``b``'s (index terms as ``_key`` tuples) provably
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


def _same_owner_of_each_address(a: _Access, b: _Access, g: tuple) -> bool:
    """Whether ``a`` and ``b`` (whose offsets have no difference outside their index terms) provably never touch
    one address from two threads, decided without the thread maps: the answer ``_exact_conflict`` and
    ``_symbolic_conflict`` give for the most common pair (a load and a store of ``ptr + offs`` in one layout),
    found with no NumPy work. It holds when both are tiles of one shape in one layout that holds each element
    in exactly one register of one thread (so the holders of a load are the owners of a store: the same thread
    for the same element), with the same index terms, and when those terms give distinct elements disjoint
    bytes (``_disjoint_elements``). False means "not shown": the caller then compares the maps."""
    ta, tb = a.threads, b.threads
    return (ta[0] == "tile" == tb[0] and ta[1] == tb[1] and ta[2] == tb[2] and a.itemsize == b.itemsize
            and _one_register_per_element(ta[1], ta[2]) and _disjoint_elements(g, ta[2], a.itemsize))


@functools.lru_cache(maxsize=256)
def _one_register_per_element(layout: TileLayout, shape: tuple[int, ...]) -> bool:
    """Whether a ``shape`` tile in ``layout`` has as many registers (threads x elements per thread) as elements:
    since every element is held by some register, each is then held by exactly one (no replica), and that
    register's thread is also its owner (``element_threads`` with and without ``owners_only`` agree)."""
    p = layout.parent
    nthreads = WARP_SIZE * (p.warps[0] * p.warps[1] if isinstance(p, MmaLayout) else math.prod(p.warps_per_cta))
    return nthreads * p.elems_per_thread == math.prod(shape)


@functools.lru_cache(maxsize=1024)
def _disjoint_elements(g: tuple, shape: tuple[int, ...], itemsize: int) -> bool:
    """Whether the index terms ``g`` (a ``_key``) give every two distinct elements of ``shape`` addresses that
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
    symbols over the elements of ``threads_a`` against ``ga`` over those of ``threads_b`` (``ga`` as a ``_key``
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
    those of ``threads_b`` (index-only polynomials as ``_key`` tuples). Pure in its hashable arguments, memoised:
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
        self.scope: dict[int, ir.Op | None] = {}  # value id -> the innermost loop defining it
        self.roots = roots
        self.written = written
        self.records: dict[tuple[int, str], _Access] = {}
        self.conflicts: dict[tuple[int, int], str | None] = {}  # (earlier, later access) -> why they conflict
        self._steps: dict[int, list[ir.Op]] = {}  # id(block) -> its ops that walk and collect look at
        # a loop without results is named by the order in which the walk meets it (never by id(): symbol names
        # order the generic values of _symbolic_conflict, so they must not depend on memory addresses)
        self._unnamed_loops: dict[int, int] = {}
        self._scopes(fn.body, None)
        for a in fn.args:
            self.scope[a.id] = None

    def _scopes(self, block: ir.Block, loop: ir.Op | None) -> None:
        scope = self.scope
        for a in block.args:
            scope.setdefault(a.id, loop)
        ops = block.ops
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
                return _const(int(val)) if isinstance(val, (bool, int)) else self._atom(v, ctx)
            if name == "arange":
                start, end = op.attrs["start"], op.attrs["end"]
                return _add(_const(start), {("#0",): 1}) if end - start > 1 else _const(start)
            if v.type.is_tile:  # (not in _COMBINED): what _combine gives it, then _atom for a tile; operands unused
                return None
        ops = [self.poly(o, ctx) for o in op.operands]
        shape = v.type.shape
        known = None not in ops
        p = self._combine(op, ops, shape) if known else None
        if p is None and not v.type.is_tile and known and all(not o.type.is_tile for o in op.operands):
            # the same pure function of the same scalars is the same scalar (e.g. pid // 4 computed twice)
            return {(f"{name}{sorted(op.attrs.items())}{[_key(q) for q in ops]}",): 1}
        if p is None:
            return self._atom(v, ctx)
        if 1 not in shape:
            return p  # no index variable of a size-1 dimension to drop (monomials are kept sorted, without zeros)
        for m in p:
            for s in m:  # the index variables of a monomial come first (see _split)
                if s[0] != "#":
                    break
                if shape[int(s[1:])] == 1:
                    return _rename(p, lambda i: None if shape[i] == 1 else i)
        return p  # nothing to drop: _rename would give p back as it is

    def _combine(self, op: ir.Op, ops: list[Poly], shape: tuple[int, ...]) -> Poly | None:
        """The polynomial of ``op``'s result from its operands' (None for every op outside ``_COMBINED``)."""
        name = op.name
        if name in ("splat", "multiple_of", "max_contiguous"):
            return ops[0]
        if name == "add":
            return _add(ops[0], ops[1])
        if name == "sub":
            return _add(ops[0], ops[1], -1)
        if name == "mul":
            return _mul(ops[0], ops[1])
        if name == "neg":
            return _add({}, ops[0], -1)
        if name == "addptr":
            return _add(ops[0], _mul(ops[1], _const(op.operands[0].type.element.element_ty.itemsize)))
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
            return _rename(ops[0], lambda i: i + k)
        if name == "expand_dims":
            axis = op.attrs["axis"]
            return _rename(ops[0], lambda i: i + 1 if i >= axis else i)
        if name == "squeeze":
            axis = op.attrs["axis"]
            return _rename(ops[0], lambda i: None if i == axis else (i - 1 if i > axis else i))
        if name == "permute":
            order = op.attrs["order"]
            return _rename(ops[0], lambda i: order.index(i))
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
                        first.values[a.id] = _add(init, {(f"c{a.id}@{first.tag}",): 1})
                    else:
                        first.values[a.id] = None
            if is_for:
                first.values[body.args[0].id] = {(f"iv{body.args[0].id}@{first.tag}",): 1}
            again = False
            for k, (a, y) in enumerate(zip(carried[-1], yields)):
                if a.type.is_tile and uniform_shift[k]:
                    py, pa = self.poly(y, first), first.values[a.id]
                    if py is None or pa is None or _split(_add(py, pa, -1))[1]:
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
            second.values[iv.id] = _add(first.values[iv.id], step) if step is not None else {
                (f"iv{iv.id}@{second.tag}",): 1}

    # --- accesses ----------------------------------------------------------------------------------------------------
    def record(self, op: ir.Op, ctx: _Context) -> _Access:
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
        rec = _Access(op, writes, kind in _COMMUTATIVE_ATOMICS, lambda: self.poly(ptr, ctx), ptr.type.shape, itemsize,
                      threads)
        self.records[key] = rec
        return rec

    def collect(self, block: ir.Block, ctx: _Context) -> list[_Access]:
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
    def need_barrier(self, op: ir.Op, pending: list[_Access], accesses: list[_Access]) -> bool:
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

    def walk(self, block: ir.Block, ctx: _Context, pending: list[_Access]) -> list[_Access]:
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

    def collect_regions(self, op: ir.Op, ctx: _Context) -> list[_Access]:
        return [a for region in op.regions for a in self.collect(region, ctx)]

    def walk_loop(self, op: ir.Op, ctx: _Context, pending: list[_Access]) -> list[_Access]:
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
        return self.order


def _union(*lists: list[_Access]) -> list[_Access]:
    seen: dict[int, _Access] = {}
    for lst in lists:
        for a in lst:
            seen.setdefault(id(a), a)
    return list(seen.values())


def _describe(a: _Access, b: _Access, why: str) -> str:
    def what(x: _Access) -> str:
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
    roots = pointer_roots(fn) if roots is None else roots
    return _Analysis(fn, plan, num_warps, roots, written_roots(fn, roots, ops) if written is None else written).run()
