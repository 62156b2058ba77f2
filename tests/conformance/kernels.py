"""Kernels of the conformance suite. Each checks many behaviours per compile (constexpr switches)."""

import enceladus
import enceladus.language as tl


@enceladus.jit
def binary_ops(x_ptr, y_ptr, add_ptr, sub_ptr, mul_ptr, cmp_ptr, max_ptr, min_ptr, div_ptr, fdiv_ptr, mod_ptr,
               and_ptr, or_ptr, xor_ptr, shl_ptr, shr_ptr, BLOCK: tl.constexpr, RES: tl.constexpr,
               IS_INT: tl.constexpr, DIVIDE: tl.constexpr, SHIFT_MASK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.static_assert((x + y).dtype == RES)
    tl.store(add_ptr + offs, x + y)
    tl.store(sub_ptr + offs, x - y)
    tl.store(mul_ptr + offs, x * y)
    # the six comparisons as six bits of one int32
    bits = ((x < y).to(tl.int32) | ((x <= y).to(tl.int32) << 1) | ((x > y).to(tl.int32) << 2)
            | ((x >= y).to(tl.int32) << 3) | ((x == y).to(tl.int32) << 4) | ((x != y).to(tl.int32) << 5))
    tl.store(cmp_ptr + offs, bits)
    tl.store(max_ptr + offs, tl.maximum(x, y))
    tl.store(min_ptr + offs, tl.minimum(x, y))
    if DIVIDE:
        tl.static_assert((x / y).dtype == tl.float32)
        tl.store(div_ptr + offs, x / y)
        tl.store(mod_ptr + offs, x % y)
        if IS_INT:
            tl.store(fdiv_ptr + offs, x // y)
    if IS_INT:
        tl.store(and_ptr + offs, x & y)
        tl.store(or_ptr + offs, x | y)
        tl.store(xor_ptr + offs, x ^ y)
        tl.store(shl_ptr + offs, x << (y & SHIFT_MASK))
        tl.store(shr_ptr + offs, x >> (y & SHIFT_MASK))


@enceladus.jit
def unary_float(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    a = tl.abs(x)
    # Triton's exp/log/sin/... take fp32 only: half-precision inputs convert first and round back once
    f, af = x.to(tl.float32), a.to(tl.float32)
    results = (-x, a, tl.exp(f).to(x.dtype), tl.exp2(f).to(x.dtype), tl.log(af + 1).to(x.dtype),
               tl.log2(af + 1).to(x.dtype), tl.sqrt(af).to(x.dtype), tl.rsqrt(af + 1).to(x.dtype),
               tl.sin(f).to(x.dtype), tl.cos(f).to(x.dtype), tl.floor(f).to(x.dtype), tl.ceil(f).to(x.dtype),
               tl.sigmoid(f).to(x.dtype), tl.erf(f).to(x.dtype), tl.fma(x, x, x))
    for i in tl.static_range(len(results)):
        tl.store(out_ptr + i * BLOCK + offs, results[i])


@enceladus.jit
def unary_int(x_ptr, neg_ptr, not_ptr, abs_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(neg_ptr + offs, -x)
    tl.store(not_ptr + offs, ~x)
    tl.store(abs_ptr + offs, tl.abs(x))


@enceladus.jit
def cast_all(x_ptr, i1, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(i1 + offs, x.to(tl.int1))
    tl.store(i8 + offs, x.to(tl.int8))
    tl.store(i16 + offs, x.to(tl.int16))
    tl.store(i32 + offs, x.to(tl.int32))
    tl.store(i64 + offs, x.to(tl.int64))
    tl.store(u8 + offs, x.to(tl.uint8))
    tl.store(u16 + offs, x.to(tl.uint16))
    tl.store(u32 + offs, x.to(tl.uint32))
    tl.store(u64 + offs, x.to(tl.uint64))
    tl.store(f16 + offs, x.to(tl.float16))
    tl.store(bf16 + offs, x.to(tl.bfloat16))
    tl.store(f32 + offs, x.to(tl.float32))


@enceladus.jit
def bitcast(x_ptr, out_ptr, BLOCK: tl.constexpr, TO: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs).to(TO, bitcast=True))


@enceladus.jit
def literals_u8(x_ptr, a_ptr, b_ptr, c_ptr, d_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.static_assert((255 - x).dtype == tl.uint8)
    tl.store(a_ptr + offs, 255 - x)
    tl.store(b_ptr + offs, x + 250)
    tl.store(c_ptr + offs, x * 2.5)  # a float literal promotes to fp32
    tl.store(d_ptr + offs, (x.to(tl.uint32) * 0x9E3779B9) >> 7)


@enceladus.jit
def broadcasting(r_ptr, c_ptr, out_ptr, s, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)
    cols = tl.arange(0, N)
    r = tl.load(r_ptr + rows)
    c = tl.load(c_ptr + cols)
    base = out_ptr + rows[:, None] * N + cols[None, :]
    tl.store(base, r[:, None] * 10 + c[None, :])
    tl.store(base + M * N, tl.broadcast_to(r[:, None], (M, N)) + s)
    tl.store(base + 2 * M * N, tl.expand_dims(c, 0) - tl.expand_dims(r, 1) + s * 2)
    tl.store(base + 3 * M * N, tl.where(r[:, None] > c[None, :], r[:, None], c[None, :]))
    tl.store(base + 4 * M * N, tl.where(s > 2, r[:, None] + c[None, :], 0.0))


@enceladus.jit
def reductions3d(x_ptr, sum_ptr, max_ptr, min_ptr, amax_ptr, amin_ptr, xor_ptr,
                 A: tl.constexpr, B: tl.constexpr, C: tl.constexpr, AXIS: tl.constexpr, IS_INT: tl.constexpr,
                 OUT: tl.constexpr):
    a = tl.arange(0, A)[:, None, None]
    b = tl.arange(0, B)[None, :, None]
    c = tl.arange(0, C)[None, None, :]
    x = tl.load(x_ptr + a * B * C + b * C + c)
    o = tl.arange(0, OUT)
    tl.store(sum_ptr + o, tl.reshape(tl.sum(x, axis=AXIS), (OUT,)))
    tl.store(max_ptr + o, tl.reshape(tl.max(x, axis=AXIS), (OUT,)))
    tl.store(min_ptr + o, tl.reshape(tl.min(x, axis=AXIS), (OUT,)))
    tl.store(amax_ptr + o, tl.reshape(tl.argmax(x, axis=AXIS), (OUT,)))
    tl.store(amin_ptr + o, tl.reshape(tl.argmin(x, axis=AXIS), (OUT,)))
    if IS_INT:
        tl.store(xor_ptr + o, tl.reshape(tl.xor_sum(x, axis=AXIS), (OUT,)))


@enceladus.jit
def keep_dims_3d(x_ptr, out_ptr):
    a = tl.arange(0, 2)[:, None, None]
    b = tl.arange(0, 4)[None, :, None]
    c = tl.arange(0, 8)[None, None, :]
    x = tl.load(x_ptr + a * 32 + b * 8 + c)
    tl.store(out_ptr + b * 8 + c, tl.sum(x, axis=0, keep_dims=True))


@enceladus.jit
def reduce_all(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(out_ptr, tl.sum(x))
    tl.store(out_ptr + 1, tl.max(x))
    tl.store(out_ptr + 2, tl.min(x))
    tl.store(out_ptr + 3, tl.sum(x, dtype=tl.float32) * 0.5)


@enceladus.jit
def _add_pair(a0, a1, b0, b1):
    return a0 + b0, tl.maximum(a1, b1)


@enceladus.jit
def _mul_combine(a, b):
    return a * b


@enceladus.jit
def scans(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr):
    idx = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + idx)
    tl.store(out_ptr + idx, tl.cumsum(x, axis=AXIS))
    tl.store(out_ptr + M * N + idx, tl.cumsum(x, axis=AXIS, reverse=True))
    tl.store(out_ptr + 2 * M * N + idx, tl.cumprod(x % 3 + 1, axis=AXIS))
    tl.store(out_ptr + 3 * M * N + idx, tl.associative_scan(x, AXIS, _mul_combine, reverse=True) % 1000)
    s, m = tl.associative_scan((x, x), AXIS, _add_pair)
    tl.store(out_ptr + 4 * M * N + idx, s - m)
    t0, t1 = tl.reduce((x, x), AXIS, _add_pair)
    if AXIS == 0:
        tl.store(out_ptr + 5 * M * N + tl.arange(0, N), t0 * 1000 + t1)
    else:
        tl.store(out_ptr + 5 * M * N + tl.arange(0, M), t0 * 1000 + t1)


@enceladus.jit
def shape_ops(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    idx = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tidx = tl.arange(0, N)[:, None] * M + tl.arange(0, M)[None, :]
    x = tl.load(x_ptr + idx)
    size = M * N
    tl.store(out_ptr + tidx, tl.trans(x))
    tl.store(out_ptr + size + tidx, tl.permute(x, (1, 0)))
    tl.store(out_ptr + 2 * size + tl.arange(0, size), tl.ravel(x))
    tl.store(out_ptr + 3 * size + tl.arange(0, size), tl.reshape(x, (size,)))
    tl.store(out_ptr + 4 * size + idx, tl.flip(x, 1))
    a, b = tl.split(tl.reshape(x, (M, N // 2, 2)))
    tl.store(out_ptr + 5 * size + tl.arange(0, M)[:, None] * (N // 2) + tl.arange(0, N // 2)[None, :], a - b)
    j = tl.join(x, x + 1)  # (M, N, 2)
    tl.store(out_ptr + 6 * size + tl.arange(0, size * 2), tl.reshape(j, (size * 2,)))
    r = tl.arange(0, M)
    tl.store(out_ptr + 8 * size + tl.arange(0, 2 * M), tl.interleave(r, r * 10))
    tl.store(out_ptr + 8 * size + 2 * M + tl.arange(0, 2 * M), tl.cat(r, r * 10, can_reorder=True))


@enceladus.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               USE_ACC: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    if USE_ACC:
        acc = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
        d = tl.dot(a, b, acc)
    else:
        d = tl.dot(a, b)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], d)


@enceladus.jit
def masked_strided(x_ptr, out_ptr, M, N, stride_m, stride_n, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * stride_m + rn[None, :] * stride_n, mask=mask, other=-1.0)
    tl.store(out_ptr + rm[:, None] * BN + rn[None, :], x)  # the padding shows `other`
    tl.store(out_ptr + BM * BN + rm[:, None] * BN + rn[None, :], x * 2, mask=mask & (rm[:, None] % 2 == 0))
    first = tl.load(x_ptr, mask=M > 0, other=0.0)  # a scalar load with a scalar mask
    tl.store(out_ptr + 2 * BM * BN, first)
    tl.store(out_ptr + 2 * BM * BN + 1, tl.load(x_ptr + stride_m + stride_n))


@enceladus.jit
def atomics(counter_ptr, fcounter_ptr, max_ptr, min_ptr, old_ptr, cas_ptr, xchg_ptr, vals_ptr,
            BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    v = tl.load(vals_ptr + pid * BLOCK + offs)
    tl.atomic_add(counter_ptr + offs % 4, v)
    tl.atomic_add(fcounter_ptr, 0.5)
    tl.atomic_max(max_ptr + offs, v)
    tl.atomic_min(min_ptr + offs, v, mask=offs < BLOCK // 2)
    old = tl.atomic_add(old_ptr + pid, 1)
    tl.atomic_cas(cas_ptr + pid, 0, pid + 100)
    tl.atomic_xchg(xchg_ptr + pid, old + 5)


@enceladus.jit
def _clamp_twice(x, lo, hi):
    return tl.minimum(tl.maximum(x, lo), hi), lo + hi


@enceladus.jit
def _early(x_ptr, n):
    if n < 0:
        return
    tl.store(x_ptr, n)


@enceladus.jit
def control_flow(x_ptr, out_ptr, n, flag, BLOCK: tl.constexpr, UNROLL: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    acc = tl.zeros((BLOCK,), tl.int32)
    for i in range(0, n, 2):  # runtime bounds with a step
        acc += x * i
    tl.store(out_ptr + offs, acc)
    j = 0
    total = 0
    while j < n:
        total += j
        j += 1
    tl.store(out_ptr + BLOCK, total)
    if flag == 0:
        y = x + 1
    elif flag == 1:
        y = x * 2
    else:
        y = -x
    tl.store(out_ptr + BLOCK + 1 + offs, y)
    for k in tl.static_range(UNROLL):
        y = y + k
    tl.store(out_ptr + 2 * BLOCK + 1 + offs, y)
    c, s = _clamp_twice(x, 2, 5)  # a @jit callee returning a tuple
    tl.store(out_ptr + 3 * BLOCK + 1 + offs, c * 100 + s)
    _early(out_ptr + 4 * BLOCK + 1, n - 3)  # stores only when n >= 3
    v = x if n > 2 else x * 0  # a ternary on a scalar condition
    tl.store(out_ptr + 4 * BLOCK + 2 + offs, v)
    if n > 100:
        return  # early return in the kernel itself
    tl.store(out_ptr + 5 * BLOCK + 2, 77)


@enceladus.jit
def constexpr_rules(out_ptr, BLOCK: tl.constexpr, SCALE: tl.constexpr, MODE: tl.constexpr, FLAG: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    half: tl.constexpr = BLOCK // 2
    tl.static_assert(half * 2 == BLOCK)
    v = offs * SCALE
    if MODE == "neg":  # a string constexpr picks a branch at compile time
        v = -v
    if FLAG:
        v = v + enceladus.cdiv(BLOCK, 3) + enceladus.next_power_of_2(BLOCK - 1)
    else:
        v = v.to(tl.float32).to(tl.int32, bitcast=True) & 0xFFFF  # FLAG=False: this branch is never built
    tl.store(out_ptr + offs, v)
    tl.store(out_ptr + BLOCK + tl.arange(0, half), tl.arange(0, half) + min(BLOCK, 5) + max(SCALE, 1))


@enceladus.jit
def specialization(x_ptr, n, big, ubig, flag, f, none_arg, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    base = (offs * n).to(tl.int64) + big
    tl.store(x_ptr + offs, base)
    tl.store(x_ptr + BLOCK, (ubig >> 1).to(tl.int64))
    tl.store(x_ptr + BLOCK + 1, flag.to(tl.int64) + (none_arg is None))
    tl.store(x_ptr + BLOCK + 2, (f * 4).to(tl.int64))


@enceladus.jit
def sort_gather_histogram(x_ptr, out_ptr, OP: tl.constexpr):
    offs = tl.arange(0, 8)
    x = tl.load(x_ptr + offs)
    if OP == "sort":
        y = tl.sort(x)
    elif OP == "gather":
        y = tl.gather(x, 7 - offs, 0)
    else:
        y = tl.histogram(x, 8)
    tl.store(out_ptr + offs, y)


@enceladus.jit
def device_checks(x_ptr, OP: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 8))
    if OP == "device_assert":
        tl.device_assert(x >= 0, "x must be non-negative")
    else:
        tl.device_print("x = ", x)
    tl.store(x_ptr + tl.arange(0, 8), x + 1)


@enceladus.jit
def branch_scalar_or_tile(x_ptr, n):
    if n > 0:
        y = 1.5
    else:
        y = tl.arange(0, 4)
    tl.store(x_ptr + tl.arange(0, 4), y)


@enceladus.jit
def rand_int_offset(x_ptr):
    tl.store(x_ptr, tl.rand(0, 1))
