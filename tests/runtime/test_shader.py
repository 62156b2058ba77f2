"""enceladus.compile_shader: hand-written MSL with arrays, Tensors, typed scalars, and clear errors."""

import numpy as np
import pytest

import enceladus

SRC = """
#include <metal_stdlib>
using namespace metal;
struct params { int n; float alpha; };

kernel void saxpy(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                  constant float& a [[buffer(2)]], constant uint& n [[buffer(3)]],
                  uint i [[thread_position_in_grid]]) {
    if (i < n) y[i] = a * x[i] + y[i];
}
kernel void scaled(device const half* x [[buffer(0)]], device float* out [[buffer(1)]],
                   constant params& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    if (int(i) < p.n) out[i] = p.alpha * float(x[i]);
}
kernel void edge(device uint* out [[buffer(0)]], uint i [[thread_position_in_grid]],
                 uint tptg [[threads_per_threadgroup]]) {
    out[i] = tptg;
}
kernel void tg_sum(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                   threadgroup float* tmp [[threadgroup(0)]], uint t [[thread_index_in_threadgroup]],
                   uint g [[threadgroup_position_in_grid]]) {
    tmp[t] = x[g * 32 + t];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (t == 0) { float s = 0; for (int k = 0; k < 32; ++k) s += tmp[k]; out[g] = s; }
}
kernel void vec_arg(device float4* out [[buffer(0)]], constant float4& v [[buffer(1)]],
                    uint i [[thread_position_in_grid]]) {
    out[i] = v * float(i);
}
"""


@pytest.fixture(scope="module")
def lib():
    return enceladus.compile_shader(SRC)


def test_numpy_arrays_and_typed_scalars(lib):
    x = np.arange(100, dtype=np.float32)
    y = np.ones(100, np.float32)
    lib.saxpy(x, y, 2.0, 90, threadgroups=(4, 1, 1), threads_per_threadgroup=(32, 1, 1))
    np.testing.assert_array_equal(y[:90], 2 * x[:90] + 1)
    np.testing.assert_array_equal(y[90:], 1)


def test_tensors_are_queued(lib):
    x = enceladus.tensor(np.arange(1000, dtype=np.float32))
    y = enceladus.zeros(1000)
    lib.saxpy(x, y, 0.5, 1000, threads=(1000, 1, 1))
    np.testing.assert_array_equal(y.numpy(), 0.5 * np.arange(1000, dtype=np.float32))


def test_struct_with_arg_casts(lib):
    dt = np.dtype([("n", "i4"), ("alpha", "f4")], align=True)
    x = np.arange(50).astype(np.float16)
    out = np.zeros(64, np.float32)
    lib.scaled(x, out, (40, 3.0), threads=(64,), arg_casts={"p": dt})
    np.testing.assert_array_equal(out[:40], 3 * x[:40].astype(np.float32))
    out[:] = 0
    lib.scaled(x, out, np.array((10, 2.0), dt), threads=(64,))  # a structured array binds by address
    np.testing.assert_array_equal(out[:10], 2 * x[:10].astype(np.float32))


def test_dispatch_threads_partial_edge(lib):
    out = np.zeros(45, np.uint32)
    lib.edge(out, threads=(45, 1, 1), threads_per_threadgroup=(32, 1, 1))
    np.testing.assert_array_equal(out, [32] * 32 + [13] * 13)


def test_threadgroup_memory_and_vectors(lib):
    x = np.random.default_rng(0).standard_normal(128).astype(np.float32)
    out = np.zeros(4, np.float32)
    lib.tg_sum(x, out, threadgroups=(4,), threads_per_threadgroup=(32,), threadgroup_memory={0: 128})
    np.testing.assert_allclose(out, x.reshape(4, 32).sum(1), rtol=1e-5)
    v = np.zeros((8, 4), np.float32)
    lib.vec_arg(v, [1, 2, 3, 4], threads=(8,))
    np.testing.assert_array_equal(v, np.arange(8)[:, None] * np.array([1, 2, 3, 4], np.float32))


@pytest.mark.parametrize("call,exc,match", [
    (lambda k, x, y: k.saxpy(x, y, 2.0, threads=(4,)), TypeError, r"(?s)takes 4 buffer arguments.*signature: kernel"),
    (lambda k, x, y: k.saxpy(x, y, 2.0, -1, threads=(4,)), OverflowError, r"(?s)'n', constant uint&.*-1 is outside"),
    (lambda k, x, y: k.saxpy(x, y, 2.0, 1.5, threads=(4,)), TypeError, "integer type"),
    (lambda k, x, y: k.saxpy(x, y, 1e39, 4, threads=(4,)), OverflowError, "range of float"),
    (lambda k, x, y: k.saxpy(x.astype(np.float16), y, 2.0, 4, threads=(4,)), TypeError, "points to float"),
    (lambda k, x, y: k.saxpy(2.0, y, 2.0, 4, threads=(4,)), TypeError, "is a pointer"),
    (lambda k, x, y: k.saxpy(x, y, 2.0, 4), TypeError, "exactly one of"),
    (lambda k, x, y: k.saxpy(x, y, 2.0, 4, threadgroups=(1,)), TypeError, "needs threads_per_threadgroup"),
    (lambda k, x, y: k.scaled(x, y, (1, 2.0), threads=(4,)), TypeError, "points to half"),
    (lambda k, x, y: k.nope, AttributeError, "(?s)no kernel 'nope'.*saxpy"),
])
def test_errors_name_the_parameter(lib, call, exc, match):
    x = np.zeros(4, np.float32)
    y = np.full(4, 7, np.float32)
    with pytest.raises(exc, match=match):
        call(lib, x, y)
    assert (y == 7).all()


def test_struct_without_cast_is_refused(lib):
    with pytest.raises(TypeError, match="arg_casts"):
        lib.scaled(np.zeros(4, np.float16), np.zeros(4, np.float32), (1, 2.0), threads=(4,))


def test_read_only_output_is_refused(lib):
    y = np.zeros(4, np.float32)
    y.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        lib.saxpy(np.zeros(4, np.float32), y, 1.0, 4, threads=(4,))
