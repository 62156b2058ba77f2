"""NamedTuple arguments (Triton's test_tuple.py::test_namedtuple): the kernel sees the fields by name again; a field
annotated ``tl.constexpr`` (a ``@jit`` function the kernel calls) and a ``tl.constexpr`` inside a tuple are
compile-time values; a NamedTuple can also be built inside the kernel."""

from typing import NamedTuple

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from paths import run_on_all_paths


class Closure(NamedTuple):
    fn: tl.constexpr
    captured: tuple


class View(NamedTuple):
    ptr: object
    shape: tuple
    stride: tuple


@enceladus.jit
def scale(x, a_ptr):
    return x * tl.load(a_ptr)


@enceladus.jit
def shift(x, a_ptr):
    return x + tl.load(a_ptr)


@enceladus.jit
def make_view(ptr, shape, stride):
    return View(shape=shape, ptr=ptr, stride=stride)


@enceladus.jit
def namedtuple_kernel(closure, src, dst, BLOCK: tl.constexpr):
    src = make_view(src.ptr, src.shape, src.stride)  # a NamedTuple built in the kernel
    offs_m = tl.arange(0, BLOCK)[:, None]
    offs_n = tl.arange(0, BLOCK)[None, :]
    mask = (offs_m < dst.shape[0]) & (offs_n < dst.shape[1])
    x = tl.load(src.ptr + offs_m * src.stride[0] + offs_n * src.stride[1], mask=mask, other=0.0)
    tl.store(dst.ptr + offs_m * dst.stride[0] + offs_n * dst.stride[1], closure.fn(x, *closure.captured), mask=mask)


@enceladus.jit
def constexpr_in_tuple_kernel(out_ptr, pair):
    tl.static_assert(pair[1] == 4)
    tl.store(out_ptr + tl.arange(0, pair[1]), tl.load(pair[0]) + tl.arange(0, pair[1]))


@pytest.mark.parametrize("fn,op", [(scale, np.multiply), (shift, np.add)])
def test_namedtuple_with_a_constexpr_function_field(fn, op):
    x = np.random.default_rng(3).standard_normal((12, 10)).astype(np.float32)
    a = np.array([5.25], np.float32)

    def make():
        y = np.zeros((8, 6), np.float32)
        return (Closure(fn, (a,)), View(x, x.shape, (x.strides[0] // 4, 1)), View(y, y.shape, (6, 1)))

    def check(args, expected, path):
        np.testing.assert_array_equal(args[2].ptr, op(x[:8, :6], a[0]), err_msg=path)

    run_on_all_paths(namedtuple_kernel, (1,), make, lambda *args: {}, check=check, constexprs={"BLOCK": 16})


def test_a_constexpr_inside_a_tuple_argument():
    run_on_all_paths(constexpr_in_tuple_kernel, (1,), lambda: (np.zeros(4, np.int32), (np.array([7], np.int32),
                                                                                    tl.constexpr(4))),
                     lambda out, pair: {0: np.arange(7, 11, dtype=np.int32)})


def test_calling_a_namedtuple_with_wrong_fields_is_located():
    @enceladus.jit
    def bad(out_ptr):
        v = View(out_ptr, (1,))
        tl.store(v.ptr, 1)

    with pytest.raises(enceladus.CompilationError, match="View"):
        bad[(1,)](np.zeros(1, np.int32))
