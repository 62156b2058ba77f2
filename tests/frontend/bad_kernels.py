"""Kernels the compiler must refuse. Each line marked `# <- here` is where the error must point."""

import enceladus
import enceladus.language as tl

GLOBAL_LIST = [1, 2, 3]


@enceladus.jit
def uses_list(x_ptr):
    offs = [0, 1, tl.arange(0, 4)]  # <- here
    tl.store(x_ptr, 1)


@enceladus.jit
def calls_unknown(x_ptr):
    y = len_of_something(x_ptr)  # noqa: F821 # <- here
    tl.store(x_ptr, y)


@enceladus.jit
def tile_if(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if x > 0:  # <- here
        x = x + 1
    tl.store(x_ptr + offs, x)


@enceladus.jit
def arange_not_pow2(x_ptr):
    offs = tl.arange(0, 100)  # <- here
    tl.store(x_ptr + offs, 1.0)


@enceladus.jit
def ptr_plus_float(x_ptr):
    p = x_ptr + 1.5  # <- here
    tl.store(p, 1.0)


@enceladus.jit
def pow_on_tile(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    y = x ** 2  # <- here
    tl.store(x_ptr + tl.arange(0, BLOCK), y)


@enceladus.jit
def literal_out_of_range(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(x_ptr + offs, x + 300)  # <- here


@enceladus.jit
def mismatched_shapes(x_ptr):
    a = tl.arange(0, 8)
    b = tl.arange(0, 16)
    tl.store(x_ptr + a, a + b)  # <- here


@enceladus.jit
def store_tile_through_scalar(x_ptr):
    tl.store(x_ptr, tl.arange(0, 16))  # <- here


@enceladus.jit
def float_bitwise(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(x_ptr + tl.arange(0, BLOCK), x & 1)  # <- here


@enceladus.jit
def try_except(x_ptr):
    try:  # <- here
        tl.store(x_ptr, 1.0)
    except Exception:
        pass


@enceladus.jit
def lambda_in_kernel(x_ptr):
    f = lambda v: v + 1  # <- here
    tl.store(x_ptr, f(1))


@enceladus.jit
def list_comprehension(x_ptr):
    vals = [i for i in range(4)]  # <- here
    tl.store(x_ptr, vals)


@enceladus.jit
def mutable_global(x_ptr):
    tl.store(x_ptr, GLOBAL_LIST)  # <- here


@enceladus.jit
def and_on_tiles(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs and (offs > 1)  # <- here
    tl.store(x_ptr + offs, 1.0, mask=m)


@enceladus.jit
def slicing_a_tile(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs[2:], 1.0)  # <- here


@enceladus.jit
def returns_value(x_ptr):
    return 1  # <- here


@enceladus.jit
def static_assert_fails(x_ptr, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK >= 64, "BLOCK must be at least 64")  # <- here
    tl.store(x_ptr, 1.0)


@enceladus.jit
def exp_of_int(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.exp(offs))  # <- here


@enceladus.jit
def mask_not_bool(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 1.0, mask=offs)  # <- here


@enceladus.jit
def floordiv_float(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(x_ptr + offs, x // 2.0)  # <- here


@enceladus.jit
def signedness_division(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(x_ptr + offs, x // y)  # <- here


@enceladus.jit
def print_in_kernel(x_ptr):
    print(x_ptr)  # <- here


@enceladus.jit
def while_loop(x_ptr):
    while True:  # <- here
        pass


@enceladus.jit
def undefined_name(x_ptr):
    tl.store(x_ptr, undefined_thing)  # noqa: F821 # <- here


@enceladus.jit
def recursive(x_ptr):
    recursive(x_ptr)  # <- here


@enceladus.jit
def matmul_operator(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(x_ptr + tl.arange(0, BLOCK), x @ x)  # <- here


@enceladus.jit
def chained_compare(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 1.0, mask=0 < offs < 4)  # <- here


@enceladus.jit
def bad_program_id_axis(x_ptr):
    tl.store(x_ptr, tl.program_id(3))  # <- here


@enceladus.jit
def unknown_tl_attr(x_ptr):
    tl.store(x_ptr, tl.no_such_builtin(1))  # <- here
