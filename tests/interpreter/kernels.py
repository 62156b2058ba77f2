"""Kernels the interpreter tests launch (kernels must live in a file: the compiler reads their source)."""

import enceladus
import enceladus.language as tl


@enceladus.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@enceladus.jit
def binary_kernel(x_ptr, y_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask, other=1)
    if OP == "+":
        r = x + y
    elif OP == "-":
        r = x - y
    elif OP == "*":
        r = x * y
    elif OP == "/":
        r = x / y
    elif OP == "//":
        r = x // y
    elif OP == "%":
        r = x % y
    elif OP == "&":
        r = x & y
    elif OP == "|":
        r = x | y
    elif OP == "^":
        r = x ^ y
    elif OP == "<<":
        r = x << y
    elif OP == ">>":
        r = x >> y
    elif OP == "<":
        r = x < y
    elif OP == "max":
        r = tl.maximum(x, y)
    else:
        r = tl.minimum(x, y)
    tl.store(out_ptr + offs, r, mask=mask)


@enceladus.jit
def literal_kernel(x_ptr, out_ptr, n, VALUE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + VALUE, mask=mask)


@enceladus.jit
def cast_kernel(x_ptr, out_ptr, n, BITCAST: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x.to(out_ptr.dtype.element_ty, bitcast=BITCAST), mask=mask)


@enceladus.jit
def unary_kernel(x_ptr, out_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0)
    if FN == "exp":
        r = tl.exp(x)
    elif FN == "log":
        r = tl.log(x)
    elif FN == "sqrt":
        r = tl.sqrt(x)
    elif FN == "rsqrt":
        r = tl.rsqrt(x)
    elif FN == "sin":
        r = tl.sin(x)
    elif FN == "cos":
        r = tl.cos(x)
    elif FN == "erf":
        r = tl.erf(x)
    elif FN == "sigmoid":
        r = tl.sigmoid(x)
    elif FN == "floor":
        r = tl.floor(x)
    elif FN == "abs":
        r = tl.abs(x)
    elif FN == "neg":
        r = -x
    else:
        r = tl.exp2(x)
    tl.store(out_ptr + offs, r, mask=mask)


@enceladus.jit
def where_fma_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    r = tl.where(x > 0, tl.fma(x, y, 1.0), tl.clamp(y, -0.5, 0.5))
    tl.store(out_ptr + offs, r, mask=mask)


@enceladus.jit
def grid_2d_kernel(out_ptr, stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    value = rm[:, None] * 1000 + rn[None, :] + tl.num_programs(1) * 0
    tl.store(out_ptr + rm[:, None] * stride + rn[None, :], value)


@enceladus.jit
def _scale(x, factor: tl.constexpr):
    return x * factor


@enceladus.jit
def nested_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in tl.static_range(3):
        acc += _scale(tl.load(x_ptr + offs, mask=mask), i + 1)
    tl.store(out_ptr + offs, acc, mask=mask)


@enceladus.jit
def early_return_kernel(out_ptr, n):
    pid = tl.program_id(0)
    if pid >= n:
        return
    tl.store(out_ptr + pid, pid * 3)


@enceladus.jit
def per_program_loop_kernel(out_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    # The tutorial-softmax pattern: each program walks rows pid, pid + P, ... (trip counts differ).
    cols = tl.arange(0, BLOCK)
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        tl.store(out_ptr + row * n_cols + cols, row + cols * 0, mask=cols < n_cols)


@enceladus.jit
def while_kernel(out_ptr):
    pid = tl.program_id(0)
    i = 0
    total = pid * 0
    while i < pid:
        total += i
        i += 1
    tl.store(out_ptr + pid, total)


@enceladus.jit
def rmw_divergent_kernel(x_ptr):
    # Reads then increments memory before a divergent branch: the rerun must not double-apply it.
    pid = tl.program_id(0)
    tl.store(x_ptr + pid, tl.load(x_ptr + pid) + 1)
    if pid % 2 == 0:
        tl.store(x_ptr + pid, tl.load(x_ptr + pid) * 10)


@enceladus.jit
def print_kernel(x_ptr):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid * 2 + tl.arange(0, 2))
    print("x is", x)


@enceladus.jit
def device_print_kernel(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 2))
    tl.device_print("x=", x)


@enceladus.jit
def device_assert_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.device_assert(x >= 0, "x must be non-negative")


@enceladus.jit
def static_assert_kernel(x_ptr, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK >= 32, "BLOCK too small")
    tl.store(x_ptr + tl.arange(0, BLOCK), tl.zeros((BLOCK,), tl.float32))


@enceladus.jit
def breakpoint_kernel(x_ptr):
    pid = tl.program_id(0)
    breakpoint()
    tl.store(x_ptr + pid, pid)


@enceladus.jit
def store_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, offs.to(tl.float32), mask=offs < n)


@enceladus.jit
def unmasked_store_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, offs)


@enceladus.jit
def offset_load_kernel(x_ptr, out_ptr, shift, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs + shift))


@enceladus.jit
def int_arg_kernel(out_ptr, a, b, f):
    tl.store(out_ptr + tl.arange(0, 4), (a + b).to(tl.float32) * f + tl.arange(0, 4))
