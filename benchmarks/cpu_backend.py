"""Benchmarks of the cpu backend: vector add (1M floats) and a block reduction vs NumPy, fiber switch cost.

Run: ``python benchmarks/cpu_backend.py [--cxx clang++]``. Prints a table and writes
benchmarks/results/cpu_backend.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from enceladus.backends.cpu import CpuBackend

ADD = """
#include <metal_stdlib>
using namespace metal;
kernel void add(device const float4* x [[buffer(0)]], device const float4* y [[buffer(1)]],
                device float4* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    out[i] = x[i] + y[i];
}
"""

REDUCE = """
#include <metal_stdlib>
using namespace metal;
kernel void block_sum(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                      uint gid [[thread_position_in_grid]], uint tg [[threadgroup_position_in_grid]],
                      uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                      uint nsg [[simdgroups_per_threadgroup]]) {
    threadgroup float partial[32];
    float v = 0.0f;
    for (uint k = 0; k < 16; ++k) v += x[gid * 16 + k];   // 16 elements per thread
    v = simd_sum(v);
    if (lane == 0) partial[sg] = v;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (sg == 0) {
        float p = lane < nsg ? partial[lane] : 0.0f;
        p = simd_sum(p);
        if (lane == 0) out[tg] = p;
    }
}
"""


def best_of(fn: Callable[[], None], repeat: int = 7) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cxx", default=None, help="C++ compiler (default: ENCELADUS_CXX, clang++, g++)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "cpu_backend.json"))
    args = parser.parse_args()
    backend = CpuBackend(args.cxx)
    rng = np.random.default_rng(0)
    rows = []

    n = 1 << 20
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    out = np.empty_like(x)
    t0 = time.perf_counter()
    add = backend.compile(ADD).function("add")
    compile_s = time.perf_counter() - t0
    bufs = {0: x.ctypes.data, 1: y.ctypes.data, 2: out.ctypes.data}
    t_cpu = best_of(lambda: add.launch((n // 4 // 256, 1, 1), (256, 1, 1), bufs))
    np.testing.assert_array_equal(out, x + y)
    t_np = best_of(lambda: np.add(x, y, out=out))
    nbytes = 3 * 4 * n
    rows.append(("vector add 1M float32", t_cpu, t_np, nbytes / t_cpu / 1e9, nbytes / t_np / 1e9))

    m = 1 << 22
    data = rng.standard_normal(m, dtype=np.float32)
    groups = m // (256 * 16)
    partial = np.empty(groups, np.float32)
    red = backend.compile(REDUCE).function("block_sum")
    rbufs = {0: data.ctypes.data, 1: partial.ctypes.data}
    t_red = best_of(lambda: red.launch((groups, 1, 1), (256, 1, 1), rbufs), repeat=3)
    np.testing.assert_allclose(partial.sum(dtype=np.float64), data.sum(dtype=np.float64), rtol=1e-3)
    t_red_np = best_of(lambda: data.reshape(groups, -1).sum(axis=1))
    rows.append(
        (
            "reduction 4M float32 (fibers, simd_sum)",
            t_red,
            t_red_np,
            4 * m / t_red / 1e9,
            4 * m / t_red_np / 1e9,
        )
    )

    switch_ns = backend.fiber_switch_ns(2_000_000)

    print(
        f"compiler: {backend.compiler.version}   threads: {os.environ.get('ENCELADUS_CPU_THREADS') or os.cpu_count()}"
    )
    print(f"{'benchmark':42} {'cpu backend':>12} {'numpy':>10} {'GB/s cpu':>9} {'GB/s np':>8}")
    for name, a, b, ga, gb in rows:
        print(f"{name:42} {a * 1e3:10.3f}ms {b * 1e3:8.3f}ms {ga:9.2f} {gb:8.2f}")
    print(f"{'fiber context switch (one way)':42} {switch_ns:10.1f}ns")
    print(f"{'compile vector add (cache miss or hit)':42} {compile_s * 1e3:10.1f}ms")

    result = {
        "compiler": backend.compiler.version,
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "benchmarks": [
            {"name": name, "cpu_backend_s": a, "numpy_s": b, "cpu_backend_gbps": ga, "numpy_gbps": gb}
            for name, a, b, ga, gb in rows
        ],
        "fiber_switch_ns": switch_ns,
        "compile_s": compile_s,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(args.out + ".tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    os.replace(tmp, args.out)


if __name__ == "__main__":
    main()
