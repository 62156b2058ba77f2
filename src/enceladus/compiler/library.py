"""Builtins written in the tile language itself: the compiler inlines these ``@jit`` functions.

Random numbers follow Triton's Philox-4x32 scheme (the published Philox round constants and key
schedule, 10 rounds by default) so that the same (seed, offset) gives the same numbers as upstream
Triton and as the interpreter, whatever the block size or grid.
"""

import enceladus.language as tl

from .source import KernelSource

PHILOX_KEY_A = 0x9E3779B9
PHILOX_KEY_B = 0xBB67AE85
PHILOX_ROUND_A = 0xD2511F53
PHILOX_ROUND_B = 0xCD9E8D57


class TileFunction:
    """A function written in the tile language that the frontend inlines: what ``@enceladus.jit`` gives the
    frontend (``fn``, ``source``), without the runtime's launch machinery (the compiler never imports it)."""

    __enceladus_jit__ = True

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = fn.__name__
        self.source = KernelSource(fn)


def jit(fn):
    return TileFunction(fn)


@jit
def philox(seed, c0, c1, c2, c3, n_rounds=10):
    seed = tl.cast(seed, tl.uint64)
    k0 = tl.cast(seed & 0xFFFFFFFF, tl.uint32)
    k1 = tl.cast((seed >> 32) & 0xFFFFFFFF, tl.uint32)
    c0 = tl.cast(c0, tl.uint32)
    c1 = tl.cast(c1, tl.uint32)
    c2 = tl.cast(c2, tl.uint32)
    c3 = tl.cast(c3, tl.uint32)
    return philox_impl(c0, c1, c2, c3, k0, k1, n_rounds)


@jit
def randint4x(seed, offset, n_rounds=10):
    lo = tl.cast(offset, tl.uint32)
    zero = lo * 0
    hi = zero
    if offset.dtype.primitive_bitwidth > 32:  # 64-bit offsets use their high half as the second counter
        hi = tl.cast(offset >> 32, tl.uint32)
    return philox(seed, lo, hi, zero, zero, n_rounds)


@jit
def randint(seed, offset, n_rounds=10):
    r0, r1, r2, r3 = randint4x(seed, offset, n_rounds)
    return r0


@jit
def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds=10):
    if c0.dtype == tl.uint64:  # Philox-4x64: 64-bit counters, keys and constants
        key_a = 0x9E3779B97F4A7C15
        key_b = 0xBB67AE8584CAA73B
        round_a = 0xD2E7470EE14C6C93
        round_b = 0xCA5A826395121157
    else:
        tl.static_assert(c0.dtype == tl.uint32, "tl.philox_impl takes uint32 or uint64 counters")
        key_a = PHILOX_KEY_A
        key_b = PHILOX_KEY_B
        round_a = PHILOX_ROUND_A
        round_b = PHILOX_ROUND_B
    for _ in tl.static_range(n_rounds):
        prev_c0 = c0
        prev_c2 = c2
        c0 = tl.umulhi(round_b, prev_c2) ^ c1 ^ k0
        c2 = tl.umulhi(round_a, prev_c0) ^ c3 ^ k1
        c1 = round_b * prev_c2
        c3 = round_a * prev_c0
        k0 = k0 + key_a
        k1 = k1 + key_b
    return c0, c1, c2, c3


@jit
def uint_to_uniform_float(x):
    # the top bits, as a float32 in [0, 1)
    if x.dtype == tl.uint64 or x.dtype == tl.int64:
        x = tl.cast(x, tl.int64, bitcast=True)
        x = tl.where(x < 0, -x - 1, x)
        return x * 1.0842020432385337e-19
    x = tl.cast(x, tl.int32, bitcast=True)
    x = tl.where(x < 0, -x - 1, x)
    return x * 4.6566127342e-10


@jit
def pair_uniform_to_normal(u1, u2):
    u1 = tl.maximum(1.0e-7, u1)
    th = 6.283185307179586 * u2
    r = tl.sqrt(-2.0 * tl.log(u1))
    return r * tl.cos(th), r * tl.sin(th)


@jit
def rand4x(seed, offsets, n_rounds=10):
    r0, r1, r2, r3 = randint4x(seed, offsets, n_rounds)
    return uint_to_uniform_float(r0), uint_to_uniform_float(r1), uint_to_uniform_float(r2), uint_to_uniform_float(r3)


@jit
def randn4x(seed, offset, n_rounds=10):
    u1, u2, u3, u4 = rand4x(seed, offset, n_rounds)
    n1, n2 = pair_uniform_to_normal(u1, u2)
    n3, n4 = pair_uniform_to_normal(u3, u4)
    return n1, n2, n3, n4


@jit
def rand(seed, offset, n_rounds=10):
    return uint_to_uniform_float(randint(seed, offset, n_rounds))


@jit
def randn(seed, offset, n_rounds=10):
    r0, r1, r2, r3 = randint4x(seed, offset, n_rounds)
    u1 = tl.maximum(1.0e-7, uint_to_uniform_float(r0))
    u2 = uint_to_uniform_float(r1)
    return tl.sqrt(-2.0 * tl.log(u1)) * tl.cos(6.283185307179586 * u2)


@jit
def swizzle2d(i, j, size_i, size_j, size_g):
    ij = i * size_j + j
    size_gj = size_g * size_j
    group_id = ij // size_gj
    off_i = group_id * size_g
    size_g = tl.minimum(size_i - off_i, size_g)
    ij = ij % size_gj
    return off_i + ij % size_g, ij // size_g


@jit
def softmax(x, dim=None, keep_dims=None, ieee_rounding=False):
    axis = 0 if dim is None else dim
    z = x - tl.max(x, axis, keep_dims=True)
    num = tl.exp(z)
    den = tl.sum(num, axis, keep_dims=True)
    return tl.fdiv(num, den, ieee_rounding)


@jit
def bitonic_merge(x, dim=None, descending=0):
    # Triton's network: for strides n/2, n/4, ..., 1 along the last dimension, each pair (i, i + stride) with bit
    # `stride` of i clear compares and swaps (the smaller first when ascending), with Triton's where() rules
    last = len(x.shape) - 1
    tl.static_assert(dim is None or dim == last or dim == -1, "bitonic_merge: only the last dimension is supported")
    n = x.shape[last]
    tl.static_assert(n & (n - 1) == 0, "bitonic_merge: the last dimension must be a power of two")
    for s in tl.static_range(16):
        if n >> (s + 1) >= 1:
            j = n >> (s + 1)
            pairs = tl.permute(tl.reshape(x, [x.numel // (2 * j), 2, j]), (0, 2, 1))
            lo, hi = tl.split(pairs)
            if descending:
                new_lo = tl.where(lo > hi, lo, hi)
                new_hi = tl.where(hi > lo, lo, hi)
            else:
                new_lo = tl.where(lo > hi, hi, lo)
                new_hi = tl.where(hi > lo, hi, lo)
            x = tl.reshape(tl.permute(tl.join(new_lo, new_hi), (0, 2, 1)), x.shape)
    return x


LIBRARY = {"bitonic_merge": bitonic_merge, "philox": philox, "randint4x": randint4x, "randint": randint, "rand": rand, "randn": randn,
           "swizzle2d": swizzle2d, "philox_impl": philox_impl, "uint_to_uniform_float": uint_to_uniform_float,
           "pair_uniform_to_normal": pair_uniform_to_normal, "rand4x": rand4x, "randn4x": randn4x, "softmax": softmax}
