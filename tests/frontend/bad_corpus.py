# ruff: noqa
"""More kernels the compiler must refuse (bad_kernels.py has the first 30).

Each line marked ``# <- here`` is where the error must point; test_bad_corpus.py says which part of that
line the caret must fall on, what the message says and what the fix suggests.
"""

import numpy as np

import enceladus
import enceladus.language as tl

GLOBAL_DICT = {"a": 1}
GLOBAL_ARRAY = np.zeros(4, np.float32)


def python_helper(x):
    return x


# --- unsupported Python ---------------------------------------------------------------------------------

@enceladus.jit
def dict_literal(x_ptr):
    d = {"a": 1}  # <- here
    tl.store(x_ptr, 1.0)


@enceladus.jit
def set_comprehension(x_ptr):
    s = {i for i in range(3)}  # <- here
    tl.store(x_ptr, 1.0)


@enceladus.jit
def dict_comprehension(x_ptr):
    s = {i: i for i in range(3)}  # <- here
    tl.store(x_ptr, 1.0)


@enceladus.jit
def generator_expression(x_ptr):
    s = (i for i in range(3))  # <- here
    tl.store(x_ptr, 1.0)


@enceladus.jit
def with_block(x_ptr):
    with open("f"):  # <- here
        tl.store(x_ptr, 1.0)


@enceladus.jit
def del_statement(x_ptr):
    y = 1
    del y  # <- here
    tl.store(x_ptr, 1.0)


@enceladus.jit
def generator_kernel(x_ptr):
    yield 1  # <- here


@enceladus.jit
def f_string(x_ptr):
    s = f"{x_ptr}"  # <- here
    tl.store(x_ptr, 1.0)


@enceladus.jit
def star_star_kwargs(x_ptr):
    kw = 1
    tl.store(x_ptr, 1.0, **kw)  # <- here


@enceladus.jit
def global_statement(x_ptr):
    global GLOBAL_DICT  # <- here
    tl.store(x_ptr, 1.0)


@enceladus.jit
def global_dict(x_ptr):
    tl.store(x_ptr, GLOBAL_DICT["a"])  # <- here


@enceladus.jit
def global_ndarray(x_ptr):
    tl.store(x_ptr, GLOBAL_ARRAY)  # <- here


@enceladus.jit
def class_in_kernel(x_ptr):
    class A:  # <- here
        pass
    tl.store(x_ptr, 1.0)


@enceladus.jit
def nested_def(x_ptr):
    def f(v):  # <- here
        return v
    tl.store(x_ptr, 1.0)


@enceladus.jit
def import_in_kernel(x_ptr):
    import math  # <- here
    tl.store(x_ptr, 1.0)


@enceladus.jit
def raise_in_kernel(x_ptr):
    raise ValueError("no")  # <- here


@enceladus.jit
def assert_statement(x_ptr, n):
    assert n > 0, n  # <- here
    tl.store(x_ptr, 1.0)


@enceladus.jit
def walrus(x_ptr):
    if (y := 3) > 2:  # <- here
        tl.store(x_ptr, 1.0)


@enceladus.jit
def break_in_loop(x_ptr, n):
    for i in range(n):
        if i > 2:
            break  # <- here
    tl.store(x_ptr, 1.0)


@enceladus.jit
def continue_in_loop(x_ptr, n):
    for i in range(n):
        if i > 2:
            continue  # <- here
    tl.store(x_ptr, 1.0)


@enceladus.jit
def lambda_as_combine_fn(x_ptr):
    tl.store(x_ptr, tl.reduce(tl.arange(0, 4), 0, lambda a, b: a + b))  # <- here


@enceladus.jit
def abs_builtin_on_tile(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(x_ptr + tl.arange(0, BLOCK), abs(x))  # <- here


@enceladus.jit
def numpy_call_on_tile(x_ptr):
    x = tl.arange(0, 4)
    tl.store(x_ptr, np.sum(x))  # <- here


@enceladus.jit
def plain_python_call(x_ptr):
    tl.store(x_ptr, python_helper(1.0))  # <- here


@enceladus.jit
def attribute_assignment(x_ptr):
    x = tl.arange(0, 4)
    x.dtype = tl.float32  # <- here
    tl.store(x_ptr, 1.0)


@enceladus.jit
def while_true(x_ptr):
    while True:  # <- here
        tl.store(x_ptr, 1.0)


@enceladus.jit
def conditional_expression_on_tile(x_ptr):
    x = tl.arange(0, 4)
    y = 1 if x > 2 else 0  # <- here
    tl.store(x_ptr, y)


@enceladus.jit
def rec_a(x):
    return rec_b(x)


@enceladus.jit
def rec_b(x):
    return rec_a(x)  # <- here


@enceladus.jit
def mutual_recursion(x_ptr):
    tl.store(x_ptr, rec_a(1.0))


@enceladus.jit
def string_value(x_ptr):
    s = "abc"
    tl.store(x_ptr, s)  # <- here


# --- type errors --------------------------------------------------------------------------------------

@enceladus.jit
def pointer_times_int(x_ptr):
    p = x_ptr * 2  # <- here
    tl.store(p, 1.0)


@enceladus.jit
def pointer_plus_pointer(x_ptr, y_ptr):
    p = x_ptr + y_ptr  # <- here
    tl.store(p, 1.0)


@enceladus.jit
def pointer_modulo(x_ptr):
    tl.store(x_ptr % 2, 1.0)  # <- here


@enceladus.jit
def pointer_to_float(x_ptr):
    tl.store(x_ptr, x_ptr.to(tl.float32))  # <- here


@enceladus.jit
def load_through_int(x_ptr, n):
    v = tl.load(n)  # <- here
    tl.store(x_ptr, v)


@enceladus.jit
def store_through_literal(x_ptr):
    tl.store(3, 1.0)  # <- here


@enceladus.jit
def store_2d_tile_through_scalar(x_ptr):
    tl.store(x_ptr, tl.zeros((4, 4), tl.float32))  # <- here


@enceladus.jit
def shift_by_float(x_ptr):
    x = tl.arange(0, 4)
    tl.store(x_ptr + x, x << 1.5)  # <- here


@enceladus.jit
def bitcast_to_other_width(x_ptr):
    a = tl.arange(0, 4)
    tl.store(x_ptr + a, a.to(tl.int16, bitcast=True))  # <- here


@enceladus.jit
def float64_tile(x_ptr):
    v = tl.full((4,), 1.0, tl.float64)  # <- here
    tl.store(x_ptr + tl.arange(0, 4), v)


@enceladus.jit
def cast_to_float64(x_ptr):
    v = tl.arange(0, 4).to(tl.float64)  # <- here
    tl.store(x_ptr + tl.arange(0, 4), v)


@enceladus.jit
def where_mismatched_shapes(x_ptr):
    a = tl.arange(0, 4)
    b = tl.arange(0, 8)
    tl.store(x_ptr + a, tl.where(a > 1, a, b))  # <- here


@enceladus.jit
def mask_of_other_shape(x_ptr):
    x = tl.arange(0, 16)
    tl.store(x_ptr + x, 1.0, mask=tl.arange(0, 8) < 4)  # <- here


@enceladus.jit
def dot_mismatched_shapes(x_ptr):
    a = tl.zeros((16, 16), tl.float32)
    b = tl.zeros((32, 16), tl.float32)
    tl.store(x_ptr, tl.sum(tl.dot(a, b)))  # <- here


@enceladus.jit
def literal_beyond_64_bits(x_ptr):
    x = tl.arange(0, 4)
    tl.store(x_ptr + x, x + 2**70)  # <- here


@enceladus.jit
def branches_of_different_types(x_ptr, n):
    if n > 0:  # <- here
        y = tl.full((4,), 1.5, tl.float32)
    else:
        y = tl.arange(0, 4)
    tl.store(x_ptr + tl.arange(0, 4), y)


@enceladus.jit
def branches_scalar_and_tile(x_ptr, n):
    if n > 0:  # <- here
        y = 1.5
    else:
        y = tl.arange(0, 4)
    tl.store(x_ptr + tl.arange(0, 4), y)


@enceladus.jit
def loop_changes_type(x_ptr, n):
    acc = 0
    for i in range(n):  # <- here
        acc = acc + 1.5
    tl.store(x_ptr, acc)


@enceladus.jit
def loop_changes_shape(x_ptr, n):
    acc = tl.zeros((4,), tl.float32)
    for i in range(n):  # <- here
        acc = tl.zeros((8,), tl.float32)
    tl.store(x_ptr + tl.arange(0, 8), acc)


@enceladus.jit
def variable_from_one_branch(x_ptr, n):
    if n > 0:
        y = 1.0
    tl.store(x_ptr, y)  # <- here


@enceladus.jit
def reduce_axis_out_of_range(x_ptr):
    x = tl.arange(0, 16)
    tl.store(x_ptr, tl.sum(x, axis=2))  # <- here


@enceladus.jit
def reshape_changes_numel(x_ptr):
    v = tl.reshape(tl.arange(0, 16), (4, 8))  # <- here
    tl.store(x_ptr, 1.0)


@enceladus.jit
def trans_of_1d(x_ptr):
    v = tl.trans(tl.arange(0, 16))  # <- here
    tl.store(x_ptr + tl.arange(0, 16), v)


@enceladus.jit
def unknown_keyword(x_ptr):
    tl.store(x_ptr, 1.0, foo=1)  # <- here


@enceladus.jit
def callee(a, b):
    tl.store(a, b)


@enceladus.jit
def call_with_missing_argument(x_ptr):
    callee(x_ptr)  # <- here


# --- constexpr misuse ---------------------------------------------------------------------------------

@enceladus.jit
def arange_runtime_end(x_ptr, n):
    offs = tl.arange(0, n)  # <- here
    tl.store(x_ptr + offs, 1.0)


@enceladus.jit
def full_runtime_shape(x_ptr, n):
    v = tl.full((n,), 1.0, tl.float32)  # <- here
    tl.store(x_ptr + tl.arange(0, 4), 1.0)


@enceladus.jit
def static_range_runtime(x_ptr, n):
    for i in tl.static_range(n):  # <- here
        tl.store(x_ptr + i, 1.0)


@enceladus.jit
def static_assert_runtime(x_ptr, n):
    tl.static_assert(n > 0)  # <- here
    tl.store(x_ptr, 1.0)


@enceladus.jit
def constexpr_called(x_ptr, B: tl.constexpr):
    tl.store(x_ptr, B(1))  # <- here


@enceladus.jit
def constexpr_division_by_zero(x_ptr, B: tl.constexpr):
    tl.store(x_ptr, B // 0)  # <- here


@enceladus.jit
def range_step_zero(x_ptr, n):
    for i in range(0, n, 0):  # <- here
        tl.store(x_ptr, 1.0)


# --- shapes and resources -----------------------------------------------------------------------------

@enceladus.jit
def full_not_pow2(x_ptr):
    v = tl.full((3,), 1.0, tl.float32)  # <- here
    tl.store(x_ptr, 1.0)


@enceladus.jit
def zeros_not_pow2(x_ptr):
    v = tl.zeros((6, 8), tl.float32)  # <- here
    tl.store(x_ptr, 1.0)


@enceladus.jit
def reshape_to_not_pow2(x_ptr):
    v = tl.reshape(tl.arange(0, 64), (16, 4))
    w = tl.reshape(v, (8, 2, 3))  # <- here
    tl.store(x_ptr, 1.0)


@enceladus.jit
def tile_too_large(x_ptr):
    x = tl.arange(0, 2**21)  # <- here
    tl.store(x_ptr + x, 1.0)


@enceladus.jit
def threadgroup_memory_over_32k(x_ptr):
    r = tl.arange(0, 128 * 128)
    x = tl.load(x_ptr + r)
    y = tl.reshape(x, (128, 128))  # <- here
    tl.store(x_ptr + tl.arange(0, 128)[:, None] * 128 + tl.arange(0, 128)[None, :], tl.trans(y))


@enceladus.jit
def too_many_buffers(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, p13, p14, p15,  # <- here
                     p16, p17, p18, p19, p20, p21, p22, p23, p24, p25, p26, p27, p28, p29, p30, p31):
    tl.store(p0, 1.0)


# --- builtins (or forms of them) only the interpreter has ----------------------------------------------------------------

@enceladus.jit
def atomic_add_64_bit(x_ptr):
    tl.atomic_add(x_ptr + tl.arange(0, 4), 1)  # <- here


@enceladus.jit
def atomic_max_short(x_ptr):
    tl.atomic_max(x_ptr, 1)  # <- here


@enceladus.jit
def sort_tile(x_ptr):
    t = tl.reshape(tl.arange(0, 8), (2, 2, 2))
    tl.store(x_ptr + tl.arange(0, 8), tl.ravel(tl.sort(t)))  # <- here


@enceladus.jit
def histogram_tile(x_ptr):
    tl.store(x_ptr + tl.arange(0, 4), tl.histogram(tl.arange(0, 8).to(tl.float32), 4))  # <- here


@enceladus.jit
def gather_tile(x_ptr):
    x = tl.arange(0, 8)
    tl.store(x_ptr + x, tl.gather(x, x[:, None], 0))  # <- here


@enceladus.jit
def xor_sum_of_float(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 8))
    tl.store(x_ptr, tl.xor_sum(x, 0))  # <- here


@enceladus.jit
def for_else(x_ptr, n):
    for i in range(n):  # <- here
        tl.store(x_ptr + i, 1.0)
    else:
        tl.store(x_ptr, 2.0)
