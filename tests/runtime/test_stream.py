"""Streams: ordering, synchronization, errors of queued kernels, and the launch fast path."""

import numpy as np
import pytest

import enceladus
from enceladus.runtime.stream import current_stream, default_stream

from . import launch_kernels as lk


def test_launches_are_ordered_on_a_stream():
    n = 4096
    x = enceladus.tensor(np.ones(n, np.float32))
    a = enceladus.empty(n)
    for _ in range(20):  # a chain: each launch reads what the previous one wrote
        lk.scale_kernel[(n // 128,)](x, a, n, 2.0)
        lk.scale_kernel[(n // 128,)](a, x, n, 1.0)
    enceladus.synchronize()
    np.testing.assert_array_equal(x.numpy(), np.full(n, 2.0**20, np.float32))
    assert default_stream().query()


def test_numpy_launch_waits_for_queued_work():
    n = 1024
    x = enceladus.tensor(np.arange(n, dtype=np.float32))
    t = enceladus.empty(n)
    lk.scale_kernel[(n // 128,)](x, t, n, 3.0)  # queued
    out = np.zeros(n, np.float32)
    lk.scale_kernel[(n // 128,)](t, out, n, 1.0)  # NumPy output: synchronous, after the queued launch
    np.testing.assert_array_equal(out, 3 * np.arange(n, dtype=np.float32))


def test_user_streams_and_context_manager():
    s = enceladus.Stream()
    assert current_stream() is default_stream()
    x = enceladus.tensor(np.arange(256, dtype=np.float32))
    out = enceladus.zeros(256)
    with s:
        assert current_stream() is s
        lk.scale_kernel[(2,)](x, out, 256, 0.5)
    assert current_stream() is default_stream()
    s.synchronize()
    assert s.query()
    np.testing.assert_array_equal(out.numpy(), 0.5 * np.arange(256, dtype=np.float32))
    assert "Stream" in repr(s)


FAILING = """
#include <metal_stdlib>
using namespace metal;
kernel void uneven_barrier(device float* x [[buffer(0)]], uint i [[thread_index_in_threadgroup]]) {
    if (i < 5) {
        threadgroup_barrier(mem_flags::mem_threadgroup);
    } else {
        threadgroup_barrier(mem_flags::mem_device);
    }
    x[i] = 1.0f;
}
"""


def test_error_in_queued_kernel_surfaces_at_sync_and_stream_recovers():
    lib = enceladus.compile_shader(FAILING)
    t = enceladus.zeros(64)
    lib.uneven_barrier(t, threadgroups=(1, 1, 1), threads_per_threadgroup=(64, 1, 1))  # queued, fails later
    with pytest.raises(enceladus.LaunchError, match="uneven_barrier.*deadlocks"):
        enceladus.synchronize()
    enceladus.synchronize()  # reported once; the stream is usable
    x = enceladus.tensor(np.ones(128, np.float32))
    out = enceladus.zeros(128)
    lk.scale_kernel[(1,)](x, out, 128, 4.0)
    np.testing.assert_array_equal(out.numpy(), np.full(128, 4.0, np.float32))


def test_error_in_queued_kernel_surfaces_at_next_launch():
    lib = enceladus.compile_shader(FAILING)
    t = enceladus.zeros(64)
    lib.uneven_barrier(t, threadgroups=(1, 1, 1), threads_per_threadgroup=(64, 1, 1))
    default_stream().queue.synchronize()  # finished, error pending
    x = enceladus.tensor(np.ones(128, np.float32))
    with pytest.raises(enceladus.LaunchError, match="uneven_barrier"):
        lk.scale_kernel[(1,)](x, enceladus.zeros(128), 128, 4.0)
    enceladus.synchronize()


def test_fast_path_matches_slow_path_and_follows_the_cache():
    k = lk.scale_kernel
    k.cache.clear()
    x = enceladus.tensor(np.arange(512, dtype=np.float32))
    outs = [enceladus.zeros(512) for _ in range(3)]
    k[(4,)](x, outs[0], 512, 2.0)
    assert len(k._fast) >= 1 and len(k.cache) == 1
    k[(4,)](x, outs[1], 512, 2.0)  # fast path
    k[(4,)](x, outs[2], 500, 2.0, BLOCK=128)  # another key: n not divisible by 16, BLOCK passed
    assert len(k.cache) == 2
    for o in outs[:2]:
        np.testing.assert_array_equal(o.numpy(), 2 * np.arange(512, dtype=np.float32))
    np.testing.assert_array_equal(outs[2].numpy()[:500], 2 * np.arange(500, dtype=np.float32))
    k.cache.clear()  # clearing the cache also clears what the fast path may use
    k[(4,)](x, outs[0], 512, 3.0)
    assert len(k.cache) == 1
    np.testing.assert_array_equal(outs[0].numpy(), 3 * np.arange(512, dtype=np.float32))


def test_fast_path_keeps_argument_checks():
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(16, np.float32)
    lk.scale_kernel[(1,)](x, out, 16, 1.0)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        lk.scale_kernel[(1,)](x, out, 16, 1.0)
    with pytest.raises(ValueError, match="negative strides"):
        lk.scale_kernel[(1,)](x[::-1], np.zeros(16, np.float32), 16, 1.0)
    with pytest.raises(TypeError, match="grid"):
        lk.scale_kernel[(1.0,)](x, np.zeros(16, np.float32), 16, 1.0)


def test_a_thread_that_entered_no_stream_reads_an_empty_stack_without_an_exception():
    """The launch fast path reads the thread's stream stack on every launch: a thread that never entered a
    `with stream:` block finds the empty default (a plain threading.local raised, formatted and dropped an
    AttributeError there on every launch, ~1 us), and streams entered in one thread stay invisible to another."""
    import threading

    from enceladus.runtime import stream as stream_module

    seen = []
    s = enceladus.Stream()
    with s:
        t = threading.Thread(target=lambda: seen.append(stream_module._local.stack))
        t.start()
        t.join()
        assert stream_module._local.stack == (s,)
        assert current_stream() is s
    assert seen == [()]
    assert stream_module._local.stack == ()
    assert current_stream() is default_stream()


def test_fast_path_with_scalars_and_buffers_by_keyword_and_default():
    """Queued launches whose scalars and buffers come by keyword, by position or from a default (the plan reads
    the arguments after the positional ones only when one of them is a buffer or scalar), on every repeat."""
    n = 300
    x = enceladus.tensor(np.arange(n, dtype=np.float32))
    out = enceladus.tensor(np.zeros(n, np.float32))
    grid = (enceladus.cdiv(n, 128),)
    for alpha in (1.0, 2.0, 3.0, 4.0):
        lk.scale_kernel[grid](x, out, n, alpha=alpha)  # a scalar by keyword, BLOCK from its default
        enceladus.synchronize()
        np.testing.assert_array_equal(out.numpy(), alpha * np.arange(n, dtype=np.float32))
        lk.scale_kernel[grid](x, out_ptr=out, n=n, alpha=alpha + 10, BLOCK=128)  # a buffer by keyword
        enceladus.synchronize()
        np.testing.assert_array_equal(out.numpy(), (alpha + 10) * np.arange(n, dtype=np.float32))
        lk.scale_kernel[lambda meta: (enceladus.cdiv(meta["n"], meta["BLOCK"]),)](x, out, n, alpha, BLOCK=64)
        enceladus.synchronize()  # a callable grid sees every bound argument, the keyword constexpr included
        np.testing.assert_array_equal(out.numpy(), alpha * np.arange(n, dtype=np.float32))


def test_fast_path_follows_the_specialization_of_changing_ints():
    """Queued launches whose int arguments change between launches (the fast key reads ints through a table of
    values already seen): each launch takes the specialization its values ask for (n % 16 == 0, n == 1, neither),
    and the results match NumPy every time."""
    for n in (1, 16, 300, 1, 400, 16, 300, 17):
        size = n
        x = enceladus.tensor(np.arange(size, dtype=np.float32))
        out = enceladus.tensor(np.zeros(size, np.float32))
        lk.scale_kernel[(enceladus.cdiv(size, 128),)](x, out, n, 2.0, BLOCK=128)
        enceladus.synchronize()
        np.testing.assert_array_equal(out.numpy(), 2 * np.arange(size, dtype=np.float32))
    kernel_keys = set(lk.scale_kernel._fast)
    assert len(kernel_keys) >= 3  # n == 1, n % 16 == 0 and neither took different plans
