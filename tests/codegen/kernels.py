"""Kernels shared by the compiler tests (kernels must live in a file for inspect.getsource)."""

import enceladus
import enceladus.language as tl


@enceladus.jit
def binary_kernel(x_ptr, y_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask, other=1)
    if OP == "add":
        z = x + y
    elif OP == "sub":
        z = x - y
    elif OP == "mul":
        z = x * y
    elif OP == "truediv":
        z = x / y
    elif OP == "floordiv":
        z = x // y
    elif OP == "mod":
        z = x % y
    elif OP == "and":
        z = x & y
    elif OP == "or":
        z = x | y
    elif OP == "xor":
        z = x ^ y
    elif OP == "shl":
        z = x << y
    elif OP == "shr":
        z = x >> y
    elif OP == "maximum":
        z = tl.maximum(x, y)
    elif OP == "minimum":
        z = tl.minimum(x, y)
    elif OP == "lt":
        z = x < y
    elif OP == "le":
        z = x <= y
    elif OP == "gt":
        z = x > y
    elif OP == "ge":
        z = x >= y
    elif OP == "eq":
        z = x == y
    elif OP == "ne":
        z = x != y
    elif OP == "umulhi":
        z = tl.umulhi(x, y)
    elif OP == "where":
        z = tl.where(x > y, x, y)
    else:
        tl.static_assert(False, "unknown op")
    tl.store(out_ptr + offs, z, mask=mask)


@enceladus.jit
def unary_kernel(x_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1)
    xf = x.to(tl.float32)  # Triton's exp/log/... take fp32 only; the store rounds fp16 results back
    if OP == "neg":
        z = -x
    elif OP == "invert":
        z = ~x
    elif OP == "exp":
        z = tl.exp(xf)
    elif OP == "exp2":
        z = tl.exp2(xf)
    elif OP == "log":
        z = tl.log(xf)
    elif OP == "log2":
        z = tl.log2(xf)
    elif OP == "sqrt":
        z = tl.sqrt(xf)
    elif OP == "rsqrt":
        z = tl.rsqrt(xf)
    elif OP == "sin":
        z = tl.sin(xf)
    elif OP == "cos":
        z = tl.cos(xf)
    elif OP == "abs":
        z = tl.abs(x)
    elif OP == "floor":
        z = tl.floor(xf)
    elif OP == "ceil":
        z = tl.ceil(xf)
    elif OP == "erf":
        z = tl.erf(xf)
    elif OP == "sigmoid":
        z = tl.sigmoid(xf)
    elif OP == "math_exp":
        z = tl.math.exp(xf)
    else:
        tl.static_assert(False, "unknown op")
    tl.store(out_ptr + offs, z, mask=mask)


@enceladus.jit
def cast_kernel(x_ptr, out_ptr, n, BITCAST: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x.to(out_ptr.dtype.element_ty, bitcast=BITCAST), mask=mask)


@enceladus.jit
def copy2d_kernel(x_ptr, out_ptr, M, N, stride_xm, stride_xn, stride_om, stride_on,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    x = tl.load(x_ptr + offs_m[:, None] * stride_xm + offs_n[None, :] * stride_xn, mask=mask)
    tl.store(out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on, x * 2, mask=mask)


@enceladus.jit
def fma_clamp_kernel(x_ptr, y_ptr, z_ptr, out_ptr, n, lo, hi, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    z = tl.load(z_ptr + offs, mask=mask)
    r = tl.clamp(tl.fma(x, y, z), lo, hi)
    tl.store(out_ptr + offs, r, mask=mask)


@enceladus.jit
def creation_kernel(out_ptr, out2_ptr, out3_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.full((BLOCK,), 7, tl.int32)
    b = tl.zeros((BLOCK,), tl.float32) + 0.5
    c = tl.zeros_like(b) - 1.5
    tl.store(out_ptr + offs, a + offs)
    tl.store(out2_ptr + offs, b)
    tl.store(out3_ptr + offs, c)


@enceladus.jit
def program_ids_kernel(out_ptr):
    pid0 = tl.program_id(0)
    pid1 = tl.program_id(1)
    pid2 = tl.program_id(2)
    n0 = tl.num_programs(0)
    n1 = tl.num_programs(1)
    n2 = tl.num_programs(2)
    linear = (pid2 * n1 + pid1) * n0 + pid0
    offs = tl.arange(0, 4)
    vals = tl.where(offs == 0, pid0, tl.where(offs == 1, pid1, tl.where(offs == 2, pid2, n0 * n1 * n2)))
    tl.store(out_ptr + linear * 4 + offs, vals)


@enceladus.jit
def divmod_chain_kernel(out_ptr, n, BLOCK: tl.constexpr):
    # (idx // 65536) % 6: an Apple compiler once miscompiled this chain (PyTorch PR #175481)
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n
    big = idx * 4099
    tl.store(out_ptr + idx, (big // 65536) % 6 + (big % 65536) // 4096, mask=mask)


@enceladus.jit
def scalar_kernel(x_ptr, out_ptr, alpha, flag, k64):
    x = tl.load(x_ptr)
    y = x * alpha
    if_true = tl.where(flag, y, -y)
    tl.store(out_ptr, if_true + k64.to(tl.float32))


@enceladus.jit
def hinted_kernel(x_ptr, out_ptr, start, BLOCK: tl.constexpr):
    offs = tl.multiple_of(start, 16) + tl.arange(0, BLOCK)
    offs = tl.max_contiguous(offs, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + 1)


@enceladus.jit
def activation(x):
    return tl.where(x > 0, x, 0.1 * x)


@enceladus.jit
def nested_call_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, activation(tl.load(x_ptr + offs, mask=mask)), mask=mask)


@enceladus.jit
def static_loop_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr, REPS: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in tl.static_range(REPS):
        acc += tl.load(x_ptr + i * BLOCK + offs)
    tl.store(out_ptr + offs, acc)
