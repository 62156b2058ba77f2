"""Fiber switches and stacks.

Fibers run with the default floating-point control registers, whatever the launching thread has set.

A fiber starts with the default MXCSR (round to nearest, no flush to zero) and x87 control word (runtime.cpp
init_fiber). Switches between the runtime and a fiber save and restore both; switches from one fiber to another
(enc_switch_fibers) do not read them, because kernel code never changes them. So a kernel keeps subnormal
results across barriers and SIMD-group calls (the stops where one fiber hands over to the next) even when the
launching thread flushes subnormals to zero, and that thread has its own settings back after the launch. Kernels
without barriers or SIMD-group calls, which run as a plain loop on the worker threads themselves, run with the
same defaults (docs/floating_point.md: the cpu backend keeps subnormals).

The frames of the fibers of a group start at staggered offsets below their stacks' tops (runtime.cpp stagger):
the stacks are aligned to their size, so the hot tops would otherwise all fall into the same cache sets.
"""

from __future__ import annotations

import ctypes
import os
import subprocess

import numpy as np
import pytest

from enceladus.backends.cpu import CpuBackend

HELPER = r"""
extern "C" unsigned get_mxcsr() { unsigned m; __asm__ volatile("stmxcsr %0" : "=m"(m)); return m; }
extern "C" void set_mxcsr(unsigned m) { __asm__ volatile("ldmxcsr %0" : : "m"(m)); }
"""

SUBNORMAL = """
#include <metal_stdlib>
using namespace metal;
kernel void tiny(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                 uint i [[thread_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
    threadgroup float t[128];
    t[i] = x[i] * 1e-30f;  // subnormal
    threadgroup_barrier(mem_flags::mem_threadgroup);
    const float neighbour = simd_shuffle_xor(t[i], 1u);  // a subnormal operand, after a stop
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = t[(i + 1) % 128] + neighbour * 0.5f + x[i] * 1e-31f;
}
"""


@pytest.fixture
def control_registers(tmp_path, backend: CpuBackend):
    if os.uname().machine not in ("x86_64", "amd64"):
        pytest.skip("MXCSR is x86-64's")
    src = tmp_path / "csr.cpp"
    src.write_text(HELPER)
    lib = tmp_path / "libcsr.so"
    subprocess.run([*backend.compiler.command, "-O1", "-shared", "-fPIC", str(src), "-o", str(lib)], check=True)
    helper = ctypes.CDLL(str(lib))
    helper.get_mxcsr.restype = ctypes.c_uint
    helper.set_mxcsr.argtypes = [ctypes.c_uint]
    return helper


def test_fibers_keep_subnormals_when_the_launching_thread_flushes_them(backend: CpuBackend, control_registers) -> None:
    x = np.linspace(1e-10, 2e-10, 128, dtype=np.float32)
    t = x * np.float32(1e-30)
    neighbour = t[np.arange(128) ^ 1]
    want = t[(np.arange(128) + 1) % 128] + neighbour * np.float32(0.5) + x * np.float32(1e-31)
    assert np.all((want != 0) & (np.abs(want) < np.finfo(np.float32).tiny))  # every result is subnormal
    out = np.zeros(128, np.float32)
    fn = backend.compile(SUBNORMAL).function("tiny")
    saved = control_registers.get_mxcsr()
    flush = 0x9FC0  # FTZ and DAZ, every exception masked
    try:
        control_registers.set_mxcsr(flush)
        # one threadgroup: the launching thread runs it (no helper thread), through 128 fibers
        fn.launch((1, 1, 1), (128, 1, 1), {0: x.ctypes.data, 1: out.ctypes.data})
        after = control_registers.get_mxcsr()
    finally:
        control_registers.set_mxcsr(saved)
    assert after & ~0x3F == flush & ~0x3F  # the launching thread's settings are back (exception flags aside)
    np.testing.assert_array_equal(out, want)


PLAIN = """
#include <metal_stdlib>
using namespace metal;
kernel void tiny_plain(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                       uint i [[thread_position_in_grid]]) {
    out[i] = x[i] * 1e-30f + x[i] * 1e-31f;
}
"""


@pytest.mark.parametrize("groups", [1, 64])
def test_plain_loop_kernels_keep_subnormals_when_the_launching_thread_flushes_them(
        backend: CpuBackend, control_registers, groups: int) -> None:
    """One threadgroup (the launching thread runs it) and 64 (the pool's helper threads too, which may have been
    started while the launching thread flushed)."""
    n = 128 * groups
    x = np.linspace(1e-10, 2e-10, n, dtype=np.float32)
    want = x * np.float32(1e-30) + x * np.float32(1e-31)
    assert np.all((want != 0) & (want < np.finfo(np.float32).tiny))
    out = np.zeros(n, np.float32)
    fn = backend.compile(PLAIN).function("tiny_plain")
    saved = control_registers.get_mxcsr()
    flush = 0x9FC0
    try:
        control_registers.set_mxcsr(flush)
        fn.launch((groups, 1, 1), (128, 1, 1), {0: x.ctypes.data, 1: out.ctypes.data})
        after = control_registers.get_mxcsr()
    finally:
        control_registers.set_mxcsr(saved)
    assert after & ~0x3F == flush & ~0x3F
    np.testing.assert_array_equal(out, want)


WHERE = """
#include <metal_stdlib>
using namespace metal;
kernel void where(device ulong* out [[buffer(0)]], uint i [[thread_index_in_threadgroup]]) {
    volatile int local = int(i);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = (ulong)&local;
}
"""


def test_fiber_frames_start_at_staggered_offsets(backend: CpuBackend) -> None:
    """Fibers 0-15 of a group put the same local at 16 offsets from their stacks' tops, 2 KiB and a cache line
    apart (each in other sets of a 4 KiB-period cache), together at most an eighth of the default 256 KiB stack;
    fiber 16 starts where fiber 0 does."""
    out = np.zeros(64, np.uint64)
    backend.compile(WHERE).function("where").launch((1, 1, 1), (64, 1, 1), {0: out.ctypes.data})
    stack = 256 * 1024
    depth = (-out.astype(np.int64)) % stack  # distance below the next stack-size boundary: the top
    stagger = depth - depth[0]
    assert list(stagger[:16]) == [i * (2048 + 64) for i in range(16)]
    assert stagger.max() < stack // 8
    np.testing.assert_array_equal(stagger[16:], np.tile(stagger[:16], 3))
    assert len({int(s) // 64 % 64 for s in stagger[:16]}) == 16
