"""Fibers run with the default floating-point control registers, whatever the launching thread has set.

A fiber starts with the default MXCSR (round to nearest, no flush to zero) and x87 control word (runtime.cpp
init_fiber). Switches between the runtime and a fiber save and restore both; switches from one fiber to another
(enc_switch_fibers) do not read them, because kernel code never changes them. So a kernel keeps subnormal
results across barriers and SIMD-group calls (the stops where one fiber hands over to the next) even when the
launching thread flushes subnormals to zero, and that thread has its own settings back after the launch.
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
