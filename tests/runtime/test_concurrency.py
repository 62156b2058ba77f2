"""Concurrency: kernels launched from many threads at once, processes sharing a cache directory, and
kernels that fault on the cpu backend surfacing as Python exceptions in a process that stays usable."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from enceladus.runtime import jit as jit_module
from paths import needs_cpu

from . import launch_kernels as lk

pytestmark = needs_cpu
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def counted_compiles(tmp_path, monkeypatch):
    """A private disk cache (so every kernel really compiles) and a count of compilations per kernel name;
    each compilation sleeps a little so that racing threads overlap."""
    monkeypatch.setenv("ENCELADUS_CACHE_DIR", str(tmp_path / "cache"))
    counts: dict[str, int] = {}
    lock = threading.Lock()
    real = jit_module.compile_kernel

    def counting(source, name, *args, **kwargs):
        with lock:
            counts[name] = counts.get(name, 0) + 1
        time.sleep(0.05)
        return real(source, name, *args, **kwargs)

    monkeypatch.setattr(jit_module, "compile_kernel", counting)
    return counts


def fresh(kernel):
    """A new JITFunction for the same function: an empty in-memory cache."""
    return enceladus.jit(kernel.fn)


def test_same_kernel_from_many_threads_compiles_once(counted_compiles):
    kernel = fresh(lk.scale_kernel)
    barrier = threading.Barrier(8)

    def work(i):
        x = np.arange(1000, dtype=np.float32) + i
        out = np.zeros_like(x)
        barrier.wait()
        for _ in range(5):
            kernel[(8,)](x, out, 1000, float(i))
        return np.array_equal(out, x * i)

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(work, range(8)))
    assert counted_compiles == {"scale_kernel": 1}
    assert len(kernel.cache) == 1


def test_different_kernels_and_specializations_from_many_threads(counted_compiles):
    scale, strided, annotated = fresh(lk.scale_kernel), fresh(lk.strided_scale), fresh(lk.annotated)
    barrier = threading.Barrier(12)

    def work(i):
        barrier.wait()
        kind = i % 3
        if kind == 0:  # two specializations of one kernel: BLOCK 128 and 256
            x = np.arange(500, dtype=np.float32)
            out = np.zeros_like(x)
            block = 128 if i % 2 else 256
            scale[(enceladus.cdiv(500, block),)](x, out, 500, 3.0, BLOCK=block)
            return np.array_equal(out, 3 * x)
        if kind == 1:
            base = np.arange(32 * 16, dtype=np.float32).reshape(32, 16)
            out = np.zeros((32, 16), np.float32)
            strided[(2,)](base, out, 32, 16, 16, 1, BLOCK_M=16, BLOCK_N=16)
            return np.array_equal(out, base + 1)
        x = np.zeros(16, np.float32)
        annotated[(1,)](x, 7, BLOCK=16)
        return np.array_equal(x, np.arange(16, dtype=np.float32) + 7)

    with ThreadPoolExecutor(12) as pool:
        assert all(pool.map(work, range(12)))
    assert counted_compiles == {"scale_kernel": 2, "strided_scale": 1, "annotated": 1}
    assert (len(scale.cache), len(strided.cache), len(annotated.cache)) == (2, 1, 1)


def test_threads_launching_while_another_thread_faults():
    """A debug-mode out-of-bounds fault in one thread does not disturb launches in the others."""

    @enceladus.jit(debug=True)
    def unmasked(x_ptr, out_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2)

    scale = lk.scale_kernel

    def good(i):
        x = np.arange(256, dtype=np.float32) + i
        out = np.zeros_like(x)
        scale[(2,)](x, out, 256, 2.0)
        return np.array_equal(out, 2 * x)

    def bad(i):
        out = np.full(64, -1, np.float32)
        with pytest.raises(enceladus.LaunchError, match="out-of-bounds read of 4 bytes through argument 'x_ptr' at "
                                                        "element index 40"):
            unmasked[(1,)](np.zeros(40, np.float32), out, BLOCK=64)
        return bool((out[40:] == -1).all())  # the failing access and everything after it never happened

    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(lambda i: bad(i) if i % 3 == 0 else good(i), range(12)))
    assert all(results)
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    unmasked[(1,)](x, out, BLOCK=64)  # in bounds: works after the faults
    np.testing.assert_array_equal(out, 2 * x)


# --- processes sharing a cache directory ----------------------------------------------------------------

CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import enceladus
    import enceladus.language as tl
    from enceladus.runtime import cache

    @enceladus.jit
    def axpy(x_ptr, y_ptr, out_ptr, n, a, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, a * tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)

    @enceladus.jit
    def row_sum(x_ptr, out_ptr, N: tl.constexpr):
        r = tl.program_id(0)
        tl.store(out_ptr + r, tl.sum(tl.load(x_ptr + r * N + tl.arange(0, N)), axis=0))

    x = np.arange(2048, dtype=np.float32); y = np.ones_like(x)
    for block in [int(b) for b in sys.argv[1].split(",")]:
        out = np.empty_like(x)
        axpy[(enceladus.cdiv(x.size, block),)](x, y, out, x.size, 2.0, BLOCK=block)
        assert np.array_equal(out, 2 * x + y)
    m = np.arange(64 * 32, dtype=np.float32).reshape(64, 32)
    s = np.zeros(64, np.float32)
    row_sum[(64,)](m, s, N=32)
    assert np.allclose(s, m.sum(axis=1))
    print("STATS " + json.dumps({"compiled": cache.stats.compiled, "disk_hits": cache.stats.disk_hits,
                                 "corrupt": cache.stats.corrupt}))
""")


def run_children(script: Path, cache_dir: Path, blocks: list[str]) -> list[dict]:
    import json

    env = {**os.environ, "ENCELADUS_CACHE_DIR": str(cache_dir)}
    env.pop("ENCELADUS_CACHE", None)
    procs = [subprocess.Popen([sys.executable, str(script), b], env=env, cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for b in blocks]
    stats = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        stats.append(json.loads(next(ln for ln in out.splitlines() if ln.startswith("STATS "))[6:]))
    return stats


def test_processes_sharing_a_cache_directory_compile_at_once(tmp_path):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    cache_dir = tmp_path / "cache"
    # four processes, overlapping sets of specializations (3 distinct axpy blocks + row_sum)
    stats = run_children(script, cache_dir, ["128,256", "256,512", "512,128", "128"])
    assert all(s["corrupt"] == 0 for s in stats)
    files = [p for p in (cache_dir / "kernels").rglob("*") if p.is_file()]
    assert not [p for p in files if p.name.startswith(".") or p.suffix != ".json"], "temporaries left behind"
    assert len(files) == 4  # axpy x3 + row_sum, each stored once whoever won the race
    (again,) = run_children(script, cache_dir, ["128,256,512"])
    assert again == {"compiled": 0, "disk_hits": 4, "corrupt": 0}


# --- kernels that fault on the cpu backend --------------------------------------------------------------

FAULTS = """
#include <metal_stdlib>
using namespace metal;
kernel void split_barrier(device float* out [[buffer(0)]], uint t [[thread_index_in_threadgroup]]) {
    if (t < 16) {
        threadgroup_barrier(mem_flags::mem_threadgroup);
    } else {
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    out[t] = 1.0f;
}
kernel void read_past_end(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                          uint i [[thread_position_in_grid]]) {
    out[i] = x[i + 64];
}
kernel void fill(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    out[i] = float(i);
}
"""


@pytest.fixture(scope="module")
def faults():
    return enceladus.compile_shader(FAULTS)


def test_non_uniform_barrier_is_an_exception_and_the_process_stays_usable(faults):
    out = np.zeros(64, np.float32)
    with pytest.raises(enceladus.LaunchError, match=r"kernel 'split_barrier', threadgroup \(0,0,0\)|"
                                                    r"kernel 'split_barrier': threadgroup \(0,0,0\) deadlocks"):
        faults.split_barrier(out, threads=(64,), threads_per_threadgroup=(64,))
    faults.fill(out, threads=(64,))
    np.testing.assert_array_equal(out, np.arange(64, dtype=np.float32))
    x = np.arange(300, dtype=np.float32)
    y = np.zeros_like(x)
    lk.scale_kernel[(3,)](x, y, 300, 2.0)  # jit kernels still run too
    np.testing.assert_array_equal(y, 2 * x)


def test_out_of_bounds_in_debug_mode_from_threads(faults):
    def one(i):
        out = np.full(32, -1, np.float32)
        with pytest.raises(enceladus.LaunchError, match="out-of-bounds read of 4 bytes through argument 'x'"):
            faults.read_past_end(np.zeros(32, np.float32), out, threads=(32,), debug=True)
        return bool((out == -1).all())

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(one, range(8)))
    out = np.zeros(16, np.float32)
    faults.fill(out, threads=(16,))
    np.testing.assert_array_equal(out, np.arange(16, dtype=np.float32))

