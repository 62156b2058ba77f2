"""``tl.rand``/``randn``/``randint``: Philox 4x32 counter-based random numbers, as in Triton.

The values depend only on (seed, offset), never on the block size or the grid split.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..language import dtypes as D
from .ops import const_int, op
from .tensor import Tile, align, cast_array, to_tile, unwrap

KEY_A, KEY_B = np.uint32(0x9E3779B9), np.uint32(0xBB67AE85)
ROUND_A, ROUND_B = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)


def _philox(seed: Any, offset: Any, n_rounds: Any) -> tuple[list[np.ndarray], int]:
    s, off = to_tile(seed), to_tile(offset)
    if not s.dtype.is_int() or not off.dtype.is_int():
        raise TypeError(f"tl.rand* needs an integer seed and integer offsets, got {s.dtype} and {off.dtype}")
    rounds = const_int(unwrap(n_rounds), "n_rounds")
    rank = len(off.shape)
    s64 = align(cast_array(s.data, s.dtype, D.uint64), rank)
    k0 = (s64 & _M32).astype(np.uint32)
    k1 = (s64 >> _S32).astype(np.uint32)
    c0 = cast_array(off.data, off.dtype, D.uint32)
    c1 = (cast_array(off.data, off.dtype, D.uint64) >> _S32).astype(np.uint32) if off.dtype.primitive_bitwidth > 32 \
        else np.zeros_like(c0)
    c2 = np.zeros_like(c0)
    c3 = np.zeros_like(c0)
    return _rounds(c0, c1, c2, c3, k0, k1, rounds), rank


def _rounds(c0: np.ndarray, c1: np.ndarray, c2: np.ndarray, c3: np.ndarray, k0: np.ndarray, k1: np.ndarray,
            rounds: int) -> list[np.ndarray]:
    """Philox-4x32 rounds on uint32 counters and keys."""
    with np.errstate(all="ignore"):
        for _ in range(rounds):
            p0 = ROUND_A * c0.astype(np.uint64)
            p2 = ROUND_B * c2.astype(np.uint64)
            c0, c1, c2, c3 = ((p2 >> _S32).astype(np.uint32) ^ c1 ^ k0, (p2 & _M32).astype(np.uint32),
                              (p0 >> _S32).astype(np.uint32) ^ c3 ^ k1, (p0 & _M32).astype(np.uint32))
            k0 = k0 + KEY_A
            k1 = k1 + KEY_B
    return [np.asarray(c) for c in (c0, c1, c2, c3)]


def _uniform(x: np.ndarray) -> np.ndarray:
    i = x.view(np.int32)
    i = np.where(i < 0, ~i, i)
    return (i.astype(np.float32) * np.float32(4.6566127342e-10)).astype(np.float32)


def _normal(u1: np.ndarray, u2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    u1 = np.maximum(np.float32(1.0e-7), u1)
    th = np.float32(6.283185307179586) * u2
    r = np.sqrt(np.float32(-2.0) * np.log(u1))
    return (r * np.cos(th)).astype(np.float32), (r * np.sin(th)).astype(np.float32)


@op("philox")
def philox(seed: Any, c0: Any, c1: Any, c2: Any, c3: Any, n_rounds: Any = 10) -> tuple[Tile, ...]:
    s = to_tile(seed)
    cs = [to_tile(c) for c in (c0, c1, c2, c3)]
    rounds = const_int(unwrap(n_rounds), "n_rounds")
    rank = max(len(c.shape) for c in cs)
    s64 = align(cast_array(s.data, s.dtype, D.uint64), rank)
    k0 = (s64 & _M32).astype(np.uint32)
    k1 = (s64 >> _S32).astype(np.uint32)
    c = [align(cast_array(x.data, x.dtype, D.uint32), rank) for x in cs]
    shape = np.broadcast_shapes(*(x.shape for x in c))
    c0, c1, c2, c3 = (np.broadcast_to(x, shape).copy() for x in c)
    return tuple(Tile(x, D.uint32) for x in _rounds(c0, c1, c2, c3, k0, k1, rounds))


@op("randint")
def randint(seed: Any, offset: Any, n_rounds: Any = 10) -> Tile:
    c, _ = _philox(seed, offset, n_rounds)
    return Tile(c[0], D.uint32)


@op("randint4x")
def randint4x(seed: Any, offset: Any, n_rounds: Any = 10) -> tuple[Tile, ...]:
    c, _ = _philox(seed, offset, n_rounds)
    return tuple(Tile(v, D.uint32) for v in c)


@op("rand")
def rand(seed: Any, offset: Any, n_rounds: Any = 10) -> Tile:
    c, _ = _philox(seed, offset, n_rounds)
    return Tile(_uniform(c[0]), D.float32)


@op("rand4x")
def rand4x(seed: Any, offset: Any, n_rounds: Any = 10) -> tuple[Tile, ...]:
    c, _ = _philox(seed, offset, n_rounds)
    return tuple(Tile(_uniform(v), D.float32) for v in c)


@op("randn")
def randn(seed: Any, offset: Any, n_rounds: Any = 10) -> Tile:
    c, _ = _philox(seed, offset, n_rounds)
    return Tile(_normal(_uniform(c[0]), _uniform(c[1]))[0], D.float32)


@op("randn4x")
def randn4x(seed: Any, offset: Any, n_rounds: Any = 10) -> tuple[Tile, ...]:
    c, _ = _philox(seed, offset, n_rounds)
    u = [_uniform(v) for v in c]
    n1, n2 = _normal(u[0], u[1])
    n3, n4 = _normal(u[2], u[3])
    return tuple(Tile(v, D.float32) for v in (n1, n2, n3, n4))


@op("uint_to_uniform_float")
def uint_to_uniform_float(x: Any) -> Tile:
    t = to_tile(x)
    if t.dtype.name in ("uint32", "int32"):
        return Tile(_uniform(cast_array(t.data, t.dtype, D.uint32)), D.float32)
    if t.dtype.name in ("uint64", "int64"):
        i = cast_array(t.data, t.dtype, D.uint64).view(np.int64)
        i = np.where(i < 0, ~i, i)
        return Tile((i.astype(np.float32) * np.float32(1.0842020432385337e-19)).astype(np.float32), D.float32)
    raise TypeError(f"tl.uint_to_uniform_float needs 32- or 64-bit integers, got {t.dtype}")


@op("pair_uniform_to_normal")
def pair_uniform_to_normal(u1: Any, u2: Any) -> tuple[Tile, Tile]:
    a, b = to_tile(u1), to_tile(u2)
    if not (a.dtype.is_fp32() and b.dtype.is_fp32()):
        raise TypeError(f"tl.pair_uniform_to_normal needs float32 tiles, got {a.dtype} and {b.dtype}")
    rank = max(len(a.shape), len(b.shape))
    n1, n2 = _normal(align(a.data, rank), align(b.data, rank))
    return Tile(n1, D.float32), Tile(n2, D.float32)


@op("philox_impl")
def philox_impl(c0: Any, c1: Any, c2: Any, c3: Any, k0: Any, k1: Any, n_rounds: Any = 10) -> tuple[Tile, ...]:
    ts = [to_tile(v) for v in (c0, c1, c2, c3, k0, k1)]
    ty = ts[0].dtype
    if ty.name not in ("uint32", "uint64"):
        raise TypeError(f"tl.philox_impl takes uint32 or uint64 counters, got {ty}")
    rounds = const_int(unwrap(n_rounds), "n_rounds")
    rank = max(len(t.shape) for t in ts)
    vals = [align(cast_array(t.data, t.dtype, ty), rank) for t in ts]
    shape = np.broadcast_shapes(*(v.shape for v in vals))
    c = [np.broadcast_to(v, shape).astype(ty.to_numpy()) for v in vals]
    if ty.name == "uint32":
        return tuple(Tile(v, D.uint32) for v in _rounds(*c, rounds))
    ka, kb = 0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B
    ra, rb = 0xD2E7470EE14C6C93, 0xCA5A826395121157
    m = (1 << 64) - 1
    x0, x1, x2, x3, key0, key1 = ([int(v) for v in arr.ravel()] for arr in c)
    out = [[], [], [], []]
    for i in range(len(x0)):  # Python integers: exact 128-bit products
        a0, a1, a2, a3, q0, q1 = x0[i], x1[i], x2[i], x3[i], key0[i], key1[i]
        for _ in range(rounds):
            p0, p2 = ra * a0, rb * a2
            a0, a1, a2, a3 = (p2 >> 64) ^ a1 ^ q0, p2 & m, (p0 >> 64) ^ a3 ^ q1, p0 & m
            q0, q1 = (q0 + ka) & m, (q1 + kb) & m
        for o, v in zip(out, (a0, a1, a2, a3)):
            o.append(v)
    return tuple(Tile(np.array(o, np.uint64).reshape(shape), D.uint64) for o in out)
