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
