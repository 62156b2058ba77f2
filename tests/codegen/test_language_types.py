"""Triton's type objects and small helpers in kernels (issue #18): ``tl.tensor``, ``tl.core``, ``tl.const``,
``tl.constexpr_type``, ``tl.slice``, ``tl.tuple_type``, ``tl.void``, ``tl.aggregate_replace`` (with
``tl.core._aggregate``) and ``tl.bitonic_merge``, each on every path against NumPy, and their refusals."""

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from enceladus import CompilationError
from enceladus.language.core import _aggregate
from paths import run_on_all_paths

RNG = np.random.default_rng(1818)


# --- tl.bitonic_merge ---------------------------------------------------------------------------------------------

@enceladus.jit
def merge_rows_kernel(x_ptr, out_ptr, R: tl.constexpr, N: tl.constexpr, DESC: tl.constexpr):
    offs = tl.arange(0, R)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(out_ptr + offs, tl.bitonic_merge(tl.load(x_ptr + offs), descending=DESC))


@enceladus.jit
def merge_1d_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.bitonic_merge(tl.load(x_ptr + offs), dim=0))


def _network(x: np.ndarray, descending: bool) -> np.ndarray:
    """Triton's bitonic merge network on the last axis, written as the compare-exchange of each pair."""
    out = x.copy()
    n = x.shape[-1]
    stride = n // 2
    while stride:
        for i in range(n):
            if i & stride:
                continue
            a, b = out[..., i].copy(), out[..., i + stride].copy()
            lo, hi = (np.where(a > b, a, b), np.where(b > a, a, b)) if descending else \
                (np.where(a > b, b, a), np.where(b > a, b, a))
            out[..., i], out[..., i + stride] = lo, hi
        stride //= 2
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("descending", [0, 1])
def test_bitonic_merge(dtype, descending):
    rows, n = 4, 16
    up = np.sort(RNG.integers(-50, 50, (rows, n // 2)), axis=1)
    down = np.sort(RNG.integers(-50, 50, (rows, n // 2)), axis=1)[:, ::-1]
    bitonic = np.concatenate([up, down], axis=1).astype(dtype)  # ties included
    want = np.sort(bitonic, axis=1)
    want = np.ascontiguousarray(want[:, ::-1] if descending else want)
    assert np.array_equal(_network(bitonic, bool(descending)), want)  # the reference network sorts bitonic rows
    run_on_all_paths(merge_rows_kernel, (1,), lambda: (bitonic.copy(), np.zeros_like(bitonic)), lambda *a: {1: want},
                     constexprs={"R": rows, "N": n, "DESC": descending}, rtol=0, atol=0)
    arbitrary = RNG.standard_normal((rows, n)).astype(dtype) * 10  # not bitonic: the network's own output
    run_on_all_paths(merge_rows_kernel, (1,), lambda: (arbitrary.copy(), np.zeros_like(arbitrary)),
                     lambda *a: {1: _network(arbitrary, bool(descending))},
                     constexprs={"R": rows, "N": n, "DESC": descending}, rtol=0, atol=0)


def test_bitonic_merge_of_a_1d_tile():
    x = np.concatenate([np.arange(0, 32, 2), np.arange(31, 0, -2)]).astype(np.float32)
    run_on_all_paths(merge_1d_kernel, (1,), lambda: (x.copy(), np.zeros_like(x)), lambda *a: {1: np.sort(x)},
                     constexprs={"N": 32}, rtol=0, atol=0)


@enceladus.jit
def merge_bad_dim_kernel(x_ptr, out_ptr):
    offs = tl.arange(0, 4)[:, None] * 8 + tl.arange(0, 8)[None, :]
    tl.store(out_ptr + offs, tl.bitonic_merge(tl.load(x_ptr + offs), dim=0))


@pytest.mark.parametrize("interpret", [True, False])
def test_bitonic_merge_refuses_another_dimension(interpret):
    x = np.zeros(32, np.float32)
    with pytest.raises(CompilationError, match="only the last dimension"):
        enceladus.jit(merge_bad_dim_kernel.fn, interpret=interpret)[(1,)](x, x.copy())


# --- tl.tensor, tl.core, tl.slice, tl.tuple_type, tl.constexpr_type, tl.void ------------------------------------

@enceladus.jit
def _double_or_bump(v):
    if isinstance(v, tl.tensor):  # runtime values double, constexprs add one (decided at compile time)
        return v * 2
    return v + 1


@enceladus.jit
def type_objects_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.core.arange(0, BLOCK)
    mask = offs < n
    x = tl.core.load(x_ptr + offs, mask=mask, other=0.0)
    tl.static_assert(isinstance(x, tl.tensor) and isinstance(n, tl.tensor) and not isinstance(BLOCK, tl.tensor))
    k = _double_or_bump(3)  # 4
    pair = tl.tuple([x, k])
    tl.static_assert(isinstance(pair.type, tl.tuple_type) and len(pair.type) == 2)
    tl.static_assert(pair.type[1] == tl.constexpr_type(4) and pair.type[0].element_ty == tl.float32)
    tl.static_assert(tl.void != tl.float32 and isinstance(tl.void, tl.core.dtype))
    row = x[None, tl.slice(None, None, None)]  # x[None, :]
    tl.static_assert(isinstance(tl.slice(None, 2, None), tl.slice) and len(pair[tl.slice(0, 1, None)]) == 1)
    y = _double_or_bump(x) + pair.type[1].value + tl.sum(row, axis=0) * 0
    tl.core.store(out_ptr + offs, y, mask=mask)


def test_tensor_core_slice_tuple_type_constexpr_type_void():
    n = 100
    x = RNG.standard_normal(n).astype(np.float32)
    run_on_all_paths(type_objects_kernel, (1,), lambda: (x.copy(), np.zeros(n, np.float32), n),
                     lambda *a: {1: 2 * x + 4}, constexprs={"BLOCK": 128})


def test_the_type_objects_outside_kernels():
    assert tl.core.load is tl.load and tl.core.tensor is tl.tensor and not hasattr(tl.core, "sum")  # as Triton
    assert str(tl.void) == "void" and tl.void.is_void() and not tl.float32.is_void()
    assert tl.constexpr_type(3) == tl.constexpr_type(3) != tl.constexpr_type(4)
    tt = tl.tuple_type([tl.float32, tl.constexpr_type(1)], ["a", "b"])
    assert str(tt) == "[a:fp32,b:constexpr_type[1]]" and list(tt) == [tl.float32, tl.constexpr_type(1)]
    assert tl.slice(0, 4, None) == slice(0, 4) and isinstance(slice(1), tl.slice)
    assert not isinstance(3, tl.tensor) and not isinstance(tl.constexpr(3), tl.tensor)
    ptr = tl.pointer_type(tl.float32, const=True)
    assert ptr.is_const() and str(ptr) == "*kfp32" and ptr != tl.pointer_type(tl.float32)
    assert tl.str_to_ty("*kfp16") == tl.pointer_type(tl.float16, const=True)


# --- tl.const -------------------------------------------------------------------------------------------------------

@enceladus.jit
def const_copy_kernel(src: tl.const, addr_src, dst, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(src + offs, mask=mask)  # loads through a pointer to constant data are fine
    also = dst.to(tl.pointer_type(tl.float32, const=True))  # a cast that makes a const pointer
    tl.static_assert(also.dtype.element_ty == tl.float32)
    tl.store(dst + offs, x + tl.load(also + offs, mask=mask) + tl.load(addr_src + offs, mask=mask), mask=mask)


def test_const_pointers_load():
    n = 77
    x, y, z = (RNG.standard_normal(n).astype(np.float32) for _ in range(3))
    run_on_all_paths(const_copy_kernel, (1,), lambda: (x.copy(), y.copy(), z.copy(), n),
                     lambda *a: {2: x + z + y}, constexprs={"BLOCK": 128})


@enceladus.jit
def const_store_kernel(src: tl.const, n):
    tl.store(src + tl.arange(0, 16), tl.zeros([16], tl.float32))


@enceladus.jit
def const_atomic_kernel(src: tl.const, n):
    tl.atomic_add(src, 1.0)


@enceladus.jit
def const_cast_store_kernel(dst, n):
    p = dst.to(tl.pointer_type(tl.float32, const=True))
    tl.store(p, 1.0)


@pytest.mark.parametrize("interpret", [True, False])
@pytest.mark.parametrize("kernel, line", [(const_store_kernel, "tl.store(src"), (const_atomic_kernel, "tl.atomic_add"),
                                          (const_cast_store_kernel, "tl.store(p, 1.0)")])
def test_writes_through_const_pointers_are_located_refusals(kernel, line, interpret):
    x = np.zeros(16, np.float32)
    with pytest.raises(CompilationError) as info:
        enceladus.jit(kernel.fn, interpret=interpret)[(1,)](x, 16)
    assert "pointer to constant data" in info.value.message and "drop the tl.const" in str(info.value)
    assert info.value.lineno is not None and line in info.value.source_line
    assert not x.any()


# --- aggregates and tl.aggregate_replace -------------------------------------------------------------------------

@_aggregate
class Running:
    total: tl.tensor
    count: tl.tensor
    scale: tl.constexpr = 2.0


@enceladus.jit
def aggregate_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, STEPS: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    acc = Running(tl.zeros([BLOCK], tl.float32), count=n * 0)
    for i in range(STEPS):  # carried through a runtime loop by its fields
        acc = tl.aggregate_replace(acc, total=acc.total + x * i, count=acc.count + 1)
    if n > 50:  # and through a runtime branch
        acc = tl.aggregate_replace(acc, total=acc.total + 1.0)
    tl.store(out_ptr + offs, acc.total * acc.scale + acc.count, mask=mask)


@pytest.mark.parametrize("n", [40, 90])
def test_aggregate_replace_in_loops_and_branches(n):
    x = RNG.standard_normal(n).astype(np.float32)
    steps = 5
    want = (x * sum(range(steps)) + (1.0 if n > 50 else 0.0)) * 2.0 + steps
    run_on_all_paths(aggregate_kernel, (1,), lambda: (x.copy(), np.zeros(n, np.float32), n), lambda *a: {1: want},
                     constexprs={"BLOCK": 128, "STEPS": steps})


@_aggregate
class Welford:
    mean: tl.tensor
    m2: tl.tensor
    count: tl.tensor

    @enceladus.jit
    def update(self, x):  # a @jit method: the instance comes first, as in Triton
        count = self.count + 1
        delta = x - self.mean
        mean = self.mean + delta / count.to(tl.float32)
        return tl.aggregate_replace(self, mean=mean, m2=self.m2 + delta * (x - mean), count=count)

    @enceladus.jit
    def variance(self):
        return self.m2 / self.count.to(tl.float32)


@enceladus.jit
def aggregate_method_kernel(x_ptr, mean_ptr, var_ptr, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    w = Welford(tl.zeros([BLOCK], tl.float32), tl.zeros([BLOCK], tl.float32), tl.program_id(0) * 0)
    for r in range(ROWS):
        w = w.update(tl.load(x_ptr + r * BLOCK + cols))
    tl.store(mean_ptr + cols, w.mean)
    tl.store(var_ptr + cols, w.variance())


def test_aggregate_jit_methods():
    rows, block = 9, 64
    x = RNG.standard_normal((rows, block)).astype(np.float32)
    run_on_all_paths(aggregate_method_kernel, (1,), lambda: (x.copy(), np.zeros(block, np.float32),
                                                            np.zeros(block, np.float32)),
                     lambda *a: {1: x.mean(0), 2: x.var(0)}, constexprs={"ROWS": rows, "BLOCK": block},
                     rtol=1e-5, atol=1e-5)


@enceladus.jit
def aggregate_bad_field_kernel(x_ptr):
    acc = Running(tl.load(x_ptr), 0)
    acc = tl.aggregate_replace(acc, totl=1.0)
    tl.store(x_ptr, acc.total)


@pytest.mark.parametrize("interpret", [True, False])
def test_aggregate_replace_refuses_an_unknown_field(interpret):
    x = np.zeros(1, np.float32)
    with pytest.raises(CompilationError, match="has no field 'totl'"):
        enceladus.jit(aggregate_bad_field_kernel.fn, interpret=interpret)[(1,)](x)


def test_aggregates_are_immutable_and_checked_on_the_host():
    r = Running(1, 2)
    with pytest.raises(AttributeError, match="aggregate_replace"):
        r.total = 3
    assert tl.aggregate_replace(r, count=5).count == 5 and r.count == 2 and r.scale == 2.0
    with pytest.raises(TypeError, match="missing field 'count'"):
        Running(1)
    with pytest.raises(TypeError, match="expects an @aggregate instance"):
        tl.aggregate_replace((1, 2), a=1)
