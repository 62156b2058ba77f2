"""Builtins of the tile language, with their documentation.

Bodies are never run: the compiler applies each builtin's rule from ``compiler/semantic.py`` and
the interpreter its NumPy implementation, both found by the builtin's name.
"""

from __future__ import annotations

import builtins as _py

from .core import builtin, constexpr, named_builtin


# --- programs ------------------------------------------------------------------------------------
@builtin
def program_id(axis):
    """The index of the running program along ``axis`` (0, 1 or 2) of the launch grid, as int32.

    Example: ``pid = tl.program_id(0)``. On Metal, a program is one threadgroup.
    """


@builtin
def num_programs(axis):
    """The number of programs along ``axis`` of the launch grid, as int32."""


# --- creation ------------------------------------------------------------------------------------
@builtin
def arange(start, end):
    """A 1-D int32 tile ``[start, start + 1, ..., end - 1]``.

    ``start`` and ``end`` must be constexprs and ``end - start`` a power of two, e.g.
    ``offs = tl.arange(0, BLOCK)``.
    """


@builtin
def full(shape, value, dtype):
    """A tile of ``shape`` (a tuple of constexpr powers of two) filled with ``value`` of ``dtype``."""


@builtin
def zeros(shape, dtype):
    """A tile of ``shape`` filled with zeros of ``dtype``: ``acc = tl.zeros((BLOCK,), tl.float32)``."""


@builtin
def zeros_like(input):
    """A tile of zeros with the shape and dtype of ``input``."""


# --- memory --------------------------------------------------------------------------------------
@builtin
def load(pointer, mask=None, other=None, *, cache_modifier="", eviction_policy="", volatile=False,
         boundary_check=None, padding_option=None):
    """Load a tile (or scalar) from the pointer tile ``pointer``.

    Lanes where ``mask`` is false do not touch memory and take ``other`` (default: undefined in
    Triton; here zero). Example::

        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)

    ``cache_modifier``, ``eviction_policy`` and ``volatile`` are accepted for compatibility and have
    no effect on Apple GPUs.
    """


@builtin
def make_block_ptr(base, shape, strides, offsets, block_shape, order):
    """A block pointer: the ``block_shape`` block at ``offsets`` of a tensor with ``shape`` and ``strides``.

    Removed from Triton 3.9 but common in existing kernels; Enceladus keeps it. Load and store with
    ``tl.load(bp, boundary_check=(0, 1), padding_option="zero")``; move with ``tl.advance``.
    """


@builtin
def advance(base, offsets):
    """The block pointer ``base`` moved by ``offsets`` (one per dimension)."""


@builtin
def make_tensor_descriptor(base, shape, strides, block_shape, padding_option="zero"):
    """A tensor descriptor: ``desc.load([i, j])`` reads the ``block_shape`` block at (i, j), zero outside the
    tensor; ``desc.store([i, j], value)`` writes only inside it."""


@builtin
def load_tensor_descriptor(desc, offsets):
    """``desc.load(offsets)``: the block of a tensor descriptor at ``offsets``, zero outside the tensor.
    Descriptors also gather rows: ``desc.gather(x_offsets, y_offset)`` (blocks of one row)."""


@builtin
def store_tensor_descriptor(desc, offsets, value):
    """``desc.store(offsets, value)``: write a block through a tensor descriptor, only inside the tensor.
    Descriptors also scatter rows: ``desc.scatter(value, x_offsets, y_offset)`` (blocks of one row)."""


@builtin
def store(pointer, value, mask=None, *, cache_modifier="", eviction_policy="", boundary_check=None):
    """Store ``value`` (converted to the pointee type) through ``pointer`` where ``mask`` is true."""


# --- selection and casts -------------------------------------------------------------------------
@builtin
def where(condition, x, y):
    """Elementwise ``x`` where ``condition`` else ``y`` (both sides are evaluated)."""


@builtin
def cast(input, dtype, fp_downcast_rounding=None, bitcast=False):
    """Convert ``input`` to ``dtype`` (also ``x.to(dtype)``).

    Float to integer truncates toward zero; float narrowing rounds to nearest even. With
    ``bitcast=True`` the bits are reinterpreted (the widths must match).
    """


# --- math ----------------------------------------------------------------------------------------
def _math_doc(name: str, what: str):
    def rule(x):
        pass

    from .dtypes import FP32_ONLY_MATH

    doc = (f"Elementwise {what} of a float32 tile; float16/bfloat16 and integer tiles are refused, as in Triton "
           "(convert with ``x.to(tl.float32)`` first)." if name in FP32_ONLY_MATH else
           f"Elementwise {what}. Integer inputs are refused; float16/bfloat16 compute in float32.")
    return named_builtin(rule, name, doc)


exp = _math_doc("exp", "e**x")
exp2 = _math_doc("exp2", "2**x")
log = _math_doc("log", "natural logarithm")
log2 = _math_doc("log2", "base-2 logarithm")
sqrt = _math_doc("sqrt", "square root")
rsqrt = _math_doc("rsqrt", "1 / sqrt(x) (within 2 ulp, as Triton on NVIDIA; ``libdevice.rsqrt_rn`` is correctly rounded)")
sin = _math_doc("sin", "sine")
cos = _math_doc("cos", "cosine")
floor = _math_doc("floor", "floor")
ceil = _math_doc("ceil", "ceiling")
erf = _math_doc("erf", "error function (Metal has none: Enceladus emits a polynomial)")
sigmoid = _math_doc("sigmoid", "1 / (1 + exp(-x))")


@builtin
def abs(x):
    """Elementwise absolute value (integers wrap like C: ``abs(INT_MIN) == INT_MIN``)."""


@builtin
def fma(x, y, z):
    """Elementwise fused multiply-add ``x * y + z`` with one rounding."""


@builtin
def maximum(x, y, propagate_nan=None):
    """Elementwise maximum. As in Triton, NaN handling is the hardware's unless ``propagate_nan`` is ALL."""


@builtin
def minimum(x, y, propagate_nan=None):
    """Elementwise minimum. As in Triton, NaN handling is the hardware's unless ``propagate_nan`` is ALL."""


@builtin
def clamp(x, min, max, propagate_nan=None):
    """Elementwise ``minimum(maximum(x, min), max)``."""


@builtin
def fdiv(x, y, ieee_rounding=False):
    """Floating-point division ``x / y``; ``ieee_rounding=True`` always divides correctly rounded (as ``tl.div_rn``).

    Without it, an fp32 quotient whose divisor many elements share (a scalar, or a tile broadcast from a
    lower-rank one) may be computed as ``x * (1 / d)``, within 1.5 ulp of the exact quotient, as ``x / y`` is
    (docs/floating_point.md, "Division"); Triton's NVIDIA lowering is ``div.full.f32`` (2 ulp)."""


@builtin
def div_rn(x, y):
    """Float division rounded to nearest, always (Metal's division in safe math mode is correctly rounded)."""


@builtin
def sqrt_rn(x):
    """Square root rounded to nearest (``metal::precise::sqrt``)."""


@builtin
def umulhi(x, y):
    """The high 32 bits of the 64-bit product of two 32-bit integer tiles."""


@builtin
def cdiv(x, div):
    """Ceiling division ``(x + div - 1) // div``, on tiles, scalars and constexprs."""


# --- hints and compile-time helpers ----------------------------------------------------------------
@builtin
def multiple_of(input, values):
    """Promise the compiler that the first element of every run of ``input`` is a multiple of ``values``."""


@builtin
def max_contiguous(input, values):
    """Promise the compiler that ``input`` holds runs of ``values`` consecutive integers."""


@builtin
def static_assert(cond, msg=""):
    """Assert a constexpr condition while compiling; a false one is a CompilationError."""


@builtin
def static_print(*values, sep=" ", end="\n"):
    """Print constexprs and types while compiling (once per compilation)."""


# --- iteration -----------------------------------------------------------------------------------
class static_range:
    """A range that is unrolled at compile time; its bounds must be constexprs.

    ``for i in tl.static_range(4): ...``
    """

    def __init__(self, arg1, arg2=None, step=None):
        self.args = (arg1, arg2, step)

    def __iter__(self):
        a, b, s = (x.value if isinstance(x, constexpr) else x for x in self.args)
        return iter(_py.range(a) if b is None else _py.range(a, b, s or 1))


class range:
    """A runtime loop range, like Python's ``range``; extra tuning arguments are accepted.

    ``for k in tl.range(0, K, BLOCK_K, num_stages=2): ...``
    """

    def __init__(self, arg1, arg2=None, step=None, num_stages=None, loop_unroll_factor=None,
                 disallow_acc_multi_buffer=False, flatten=False, warp_specialize=False):
        self.args = (arg1, arg2, step)

    def __iter__(self):
        a, b, s = (x.value if isinstance(x, constexpr) else x for x in self.args)
        return iter(_py.range(a) if b is None else _py.range(a, b, s or 1))


# --- ops the interpreter implements ahead of the compiler -------------------------------------------------
# The compiler reports "not supported by the compiler yet" for these; ENCELADUS_INTERPRET=1 runs them.

@builtin
def sum(input, axis=None, keep_dims=False, dtype=None):
    """Sum along ``axis`` (all axes when None): ``tl.sum(x, axis=0)``.

    Integers narrower than 32 bits are summed in, and returned as, int32 (uint32 if unsigned);
    floats keep their dtype; ``dtype=`` overrides both.
    """


@builtin
def max(input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
    """Maximum along ``axis``; with ``return_indices=True`` also the (int32) index of the maximum."""


@builtin
def min(input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
    """Minimum along ``axis``; with ``return_indices=True`` also the (int32) index of the minimum."""


@builtin
def argmax(input, axis, tie_break_left=True, keep_dims=False):
    """The int32 index of the maximum along ``axis`` (ties: the lowest index)."""


@builtin
def argmin(input, axis, tie_break_left=True, keep_dims=False):
    """The int32 index of the minimum along ``axis`` (ties: the lowest index)."""


@builtin
def xor_sum(input, axis=None, keep_dims=False):
    """Bitwise xor of an integer tile along ``axis``."""


@builtin
def add(x, y, sanitize_overflow=True):
    """``x + y`` with Triton's promotion (``sanitize_overflow``: Triton's debug-mode overflow check; accepted, no
    check is made)."""


@builtin
def sub(x, y, sanitize_overflow=True):
    """``x - y`` with Triton's promotion (``sanitize_overflow`` accepted, as for ``tl.add``)."""


@builtin
def mul(x, y, sanitize_overflow=True):
    """``x * y`` with Triton's promotion (``sanitize_overflow`` accepted, as for ``tl.add``)."""


@builtin
def to_tensor(x):
    """A Python scalar as a scalar value of the type it takes alone (``int`` -> int32, then uint32, int64,
    uint64; ``float`` -> float32; ``bool`` -> int1); a tile or scalar value unchanged."""


@builtin
def expect_zero(x, mask):
    """``x`` unchanged; in debug mode (``debug=True``, ``ENCELADUS_DEBUG=1``) a device assert that ``x == 0``
    wherever ``mask`` is true, as in Triton (which marks values expected to have underflowed to zero)."""


@builtin
def softmax(x, dim=None, keep_dims=None, ieee_rounding=False):
    """``exp(x - max) / sum(exp(x - max))`` along ``dim`` (default 0, as in Triton); the result keeps ``x``'s
    shape (``keep_dims`` is accepted and ignored, as in Triton 3.9)."""


@builtin
def map_elementwise(scalar_fn, *args, pack=1):
    """Apply the ``@jit`` function ``scalar_fn`` to each element of the tiles ``args`` (broadcast to one shape);
    returns a tile, or a tuple of tiles when ``scalar_fn`` returns a tuple. Inside ``scalar_fn`` the arguments
    are scalars, so ``if``/``while`` on them decide per element and only the branch taken runs.
    ``pack=k`` hands ``scalar_fn`` k elements of each argument at once (``f(a0, a1, b0, b1)`` for two arguments
    and ``pack=2``) and takes k results per output back (``(r0, r1)``, or ``(r0, r1, s0, s1)`` for two outputs).

    Example: ``y = tl.map_elementwise(selu_scalar, x, alpha)`` with ``selu_scalar`` returning ``x`` if
    ``x > 0`` and ``alpha * (tl.exp(x) - 1)`` otherwise.
    """


@builtin
def reduce_or(input, axis, keep_dims=False):
    """Bitwise or of an integer (or boolean) tile along ``axis``, in the tile's own dtype.

    Example: ``any_set = tl.reduce_or(flags, 0)`` or ``flags.reduce_or(1, keep_dims=True)``.
    """


@builtin
def reduce(input, axis, combine_fn, keep_dims=False):
    """Reduce ``input`` (a tile or a tuple of tiles) along ``axis`` with the ``@jit`` function ``combine_fn``.

    ``combine_fn(a0, ..., b0, ...)`` must be associative; example: ``tl.reduce(x, 0, my_max)``.
    """


@builtin
def cumsum(input, axis=0, reverse=False, dtype=None):
    """Inclusive prefix sum along ``axis`` (accumulator dtype as in ``tl.sum``)."""


@builtin
def cumprod(input, axis=0, reverse=False, dtype=None):
    """Inclusive prefix product along ``axis``."""


@builtin
def associative_scan(input, axis, combine_fn, reverse=False):
    """Inclusive scan of a tile (or tuple of tiles) along ``axis`` with the ``@jit`` function ``combine_fn``."""


@builtin
def reshape(input, *shape, can_reorder=False):
    """The same elements in a new shape (row-major): ``tl.reshape(x, (4, 64))``."""


@builtin
def view(input, *shape):
    """Deprecated spelling of ``tl.reshape``."""


@builtin
def ravel(x, can_reorder=False):
    """The tile as 1-D (row-major)."""


@builtin
def trans(input, *dims):
    """Transpose a 2-D tile, or permute ``dims``: ``tl.trans(x)``, ``tl.trans(x, 1, 0, 2)``."""


@builtin
def permute(input, *dims):
    """Permute the dimensions: ``tl.permute(x, (2, 0, 1))``."""


@builtin
def broadcast_to(input, *shape):
    """Broadcast ``input`` (dimensions of size 1, or a scalar) to ``shape``."""


@builtin
def broadcast(input, other):
    """Broadcast two tiles to their common shape; returns both."""


@builtin
def expand_dims(input, axis):
    """Insert dimensions of size 1 at ``axis`` (an int or a sequence): like ``x[:, None]``."""


@builtin
def squeeze(input, dim):
    """Remove the size-1 dimension ``dim`` (an Enceladus extension; Triton spells it ``tl.reshape``)."""


@builtin
def unsqueeze(input, dim):
    """Insert a size-1 dimension at ``dim`` (an Enceladus extension, the same as ``tl.expand_dims``)."""


@builtin
def join(a, b):
    """Stack two tiles along a new last dimension of size 2."""


@builtin
def split(a):
    """Split a tile whose last dimension is 2 into two tiles: the inverse of ``tl.join`` (a 1-D tile of 2 elements
    splits into two scalars)."""


@builtin
def interleave(a, b):
    """Interleave the last dimension of two tiles: ``[a0, b0, a1, b1, ...]``."""


@builtin
def cat(input, other, can_reorder=False, dim=0):
    """Concatenate two tiles along ``dim``."""


@builtin
def flip(x, dim=None):
    """Reverse a tile along ``dim`` (default: the last dimension)."""


@builtin
def sort(x, dim=None, descending=False):
    """Sort along ``dim`` (default: the last dimension)."""


@builtin
def topk(x, k, dim=None, descending=True):
    """The ``k`` largest values along ``dim`` (default: the last), largest first (``k`` a power of two);
    with ``descending=False`` the ``k`` smallest, smallest first."""


@builtin
def gather(src, index, axis):
    """``src`` gathered along ``axis`` at ``index`` (same rank as ``src``), like ``np.take_along_axis``."""


@builtin
def histogram(input, num_bins, mask=None):
    """Counts (int32, shape ``(num_bins,)``) of the values of a 1-D integer tile in ``[0, num_bins)``."""


@builtin
def swizzle2d(i, j, size_i, size_j, size_g):
    """Map row-major program coordinates to grouped (column-major within groups of ``size_g`` rows) ones."""


@builtin
def bitonic_merge(x, dim=None, descending=0):
    """Merge along the last dimension (a power of two, ``n``) with Triton's bitonic network: for strides ``n/2``,
    ``n/4``, ..., 1, each pair of elements ``(i, i + stride)`` whose index ``i`` has the stride's bit clear is
    compared and swapped so that the smaller comes first (the larger with ``descending=True``). A bitonic input
    row (ascending then descending) comes out sorted; ``tl.sort`` and ``tl.topk`` are built from these steps in
    Triton. ``dim`` must be the last dimension (or None). Example: ``tl.bitonic_merge(tl.join(up, down_flipped))``.
    """


@builtin
def dot(input, other, acc=None, input_precision=None, allow_tf32=None, max_num_imprecise_acc=None, out_dtype=None):
    """Matrix product of 2-D (or batched 3-D) tiles, plus ``acc`` if given.

    fp16/bf16 inputs accumulate in fp32, int8 in int32; ``out_dtype``/``acc`` fix the accumulator.
    fp32 inputs are multiplied exactly in fp32 (no tf32), as Apple's simdgroup matrices do.
    Example: ``acc = tl.dot(a, b, acc)``.
    """


@builtin
def dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc=None, fast_math=False, lhs_k_pack=True,
               rhs_k_pack=True, out_dtype=None):
    """Matrix product of microscaled (OCP MX) operands, in float32: ``lhs`` [M, K] times ``rhs`` [K, N] (or batched
    [B, M, K] times [B, K, N]), plus ``acc``.

    Formats (``lhs_format``/``rhs_format``, constexpr strings): ``"e2m1"`` (mxfp4: two 4-bit codes per uint8, the
    first element in the low nibble, packed along K, or along M/N with ``lhs_k_pack``/``rhs_k_pack=False``),
    ``"e4m3"``/``"e5m2"`` (mxfp8: tl.float8e4nv/tl.float8e5 tiles, or their uint8 codes), ``"bf16"``, ``"fp16"``.
    Scales are e8m0 (uint8, 2**(s - 127); 255 is NaN) per group of 32 along K: ``lhs_scale`` [M, K // 32],
    ``rhs_scale`` [N, K // 32] (not transposed), or None. Apple GPUs have no MX units: the operands are
    dequantized into float32 and multiplied by ``tl.dot``. Example:
    ``acc = tl.dot_scaled(a_fp4, a_scale, "e2m1", b_fp8, b_scale, "e4m3", acc)``.
    """


def _atomic_doc(name: str, what: str):
    def rule(pointer, val, mask=None, sem=None, scope=None):
        pass

    sub_word = (" On float16/bfloat16 pointers: a compare-and-swap loop on the containing 32-bit word."
                if name in ("atomic_add", "atomic_max", "atomic_min", "atomic_xchg") else "")
    return named_builtin(rule, name, f"Atomically {what} at ``pointer`` where ``mask`` is true; returns the old "
                         f"values. Example: ``old = tl.{name}(ptr + offs, v, mask=m)``.{sub_word}")


atomic_add = _atomic_doc("atomic_add", "add ``val``")
atomic_max = _atomic_doc("atomic_max", "store the maximum of memory and ``val``")
atomic_min = _atomic_doc("atomic_min", "store the minimum of memory and ``val``")
atomic_and = _atomic_doc("atomic_and", "and ``val`` into memory")
atomic_or = _atomic_doc("atomic_or", "or ``val`` into memory")
atomic_xor = _atomic_doc("atomic_xor", "xor ``val`` into memory")
atomic_xchg = _atomic_doc("atomic_xchg", "exchange memory with ``val``")


@builtin
def atomic_cas(pointer, cmp, val, sem=None, scope=None):
    """Atomically store ``val`` where memory equals ``cmp`` (bit for bit); returns the old values. 16-bit
    elements (float16, bfloat16, int16, uint16) use a compare-and-swap loop on the containing 32-bit word."""


@builtin
def inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack):
    """Elementwise inline code. On Apple GPUs the "assembly" is **one MSL expression**: ``$i`` names the i-th
    operand of ``constraints`` with the outputs first, as in Triton (with one output, ``$1`` is ``args[0]``).
    The arguments are broadcast together; one output of ``dtype``; ``pack`` must be 1. PTX text is refused.
    Example: ``tl.inline_asm_elementwise("fma($1, $2, 1.0f)", "=r,r,r", [x, y], dtype=tl.float32,
    is_pure=True, pack=1)``. The interpreter runs the expression as a small MSL kernel on the current backend."""


@builtin
def atomic_load(pointer, mask=None, sem=None, scope=None):
    """Atomically load from ``pointer`` where ``mask`` is true (masked-off lanes give 0). ``sem``: ``"acquire"``
    (default) or ``"relaxed"``. 32-, 16- and 8-bit elements (int8, uint8, bool; narrower than 32 bits: one atomic
    load of the containing word); Metal has no 64-bit atomic load. Example: ``flag = tl.atomic_load(flags_ptr + pid)``.
    """


@builtin
def atomic_store(pointer, val, mask=None, sem=None, scope=None):
    """Atomically store ``val`` at ``pointer`` where ``mask`` is true. ``sem``: ``"release"`` (default) or
    ``"relaxed"``. 32-, 16- and 8-bit elements (narrower than 32 bits: a compare-and-swap loop on the containing
    word that keeps its other bytes); Metal has no 64-bit atomic store. Example: ``tl.atomic_store(flags_ptr + pid, 1)``.
    """


@builtin
def atomic_poll(pointer, expected_value, sem=None, scope=None, timeout_ns=None):
    """Wait until every element at ``pointer`` equals ``expected_value``; returns a boolean tile (all true).
    Integer elements of 16, 32 or 64 bits (64: its two 32-bit words, read high-low-high); ``sem``: ``"acquire"`` (default) or ``"relaxed"``. ``timeout_ns`` is refused:
    Metal shaders have no clock. Example: ``tl.atomic_poll(flags_ptr + pid - 1, 1)``."""


@builtin
def rand(seed, offset, n_rounds=10):
    """Uniform float32 in [0, 1) from Philox, a function of (seed, offset) only: ``tl.rand(seed, offs)``."""


@builtin
def randn(seed, offset, n_rounds=10):
    """Standard-normal float32 from Philox (Box-Muller), a function of (seed, offset) only."""


@builtin
def randint(seed, offset, n_rounds=10):
    """Random uint32 from Philox, a function of (seed, offset) only."""


@builtin
def philox(seed, c0, c1, c2, c3, n_rounds=10):
    """The Philox-4x32 generator: four uint32 tiles from a 64-bit ``seed`` and four 32-bit counters."""


@builtin
def randint4x(seed, offset, n_rounds=10):
    """Four independent random uint32 tiles from one Philox evaluation."""


@builtin
def rand4x(seed, offsets, n_rounds=10):
    """Four independent uniform float32 tiles in [0, 1) from one Philox evaluation (``tl.rand``'s is the first)."""


@builtin
def randn4x(seed, offset, n_rounds=10):
    """Four independent standard-normal float32 tiles from one Philox evaluation (two Box-Muller pairs)."""


@builtin
def uint_to_uniform_float(x):
    """A uniform float32 in [0, 1) from random 32- or 64-bit integers (the top bits, as ``tl.rand`` uses them)."""


@builtin
def pair_uniform_to_normal(u1, u2):
    """Two standard-normal float32 tiles from two uniform ones (the Box-Muller transform ``tl.randn`` uses)."""


@builtin
def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds=10):
    """``n_rounds`` Philox rounds on the counters ``c0..c3`` with the key ``(k0, k1)``, all uint32 (Philox-4x32) or
    all uint64 (Philox-4x64); returns the four new counters."""


@builtin
def device_print(prefix, *args, hex=False):
    """Print each element of ``args`` at run time, one line per element, prefixed with the program id."""


@builtin
def device_assert(cond, msg="", mask=None):
    """In debug mode (``debug=True``, ``ENCELADUS_DEBUG=1``), fail the launch (with the program id and element)
    where ``cond`` is false at run time; outside debug mode it is not compiled, as in Triton."""


@builtin
def debug_barrier():
    """Synchronize the threads of a program (a no-op for program-level semantics)."""


@builtin
def max_constancy(input, values):
    """Promise the compiler that ``input`` holds runs of ``values`` equal elements."""


@builtin
def assume(cond):
    """Promise the compiler that ``cond`` holds."""


class PropagateNan:
    """How ``tl.maximum``/``tl.minimum`` treat NaN: ``NONE`` (the hardware's) or ``ALL`` (NaN wins)."""

    NONE = 0
    ALL = 0xFFFF
