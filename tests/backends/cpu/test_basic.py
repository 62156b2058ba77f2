"""Deliverable-1 kernels: element-wise kernels, builtins, scalar structs, bit casts, vector access."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from enceladus.backends.cpu import CpuBackend, CpuBackendError, KernelLaunchError, MSLCompileError

RNG = np.random.default_rng(0)

ADD = """
#include <metal_stdlib>
using namespace metal;

struct add_kernel_args { int n; float alpha; long m; };

kernel void add_kernel(device float* x_ptr [[buffer(0)]],
                       device const half* y_ptr [[buffer(1)]],
                       device float* out_ptr [[buffer(2)]],
                       constant add_kernel_args& args [[buffer(3)]],
                       uint3 pid [[threadgroup_position_in_grid]],
                       uint3 npid [[threadgroups_per_grid]],
                       uint tid [[thread_index_in_threadgroup]]) {
    long i = long(pid.x) * 64 + tid;
    if (i < args.n) {
        out_ptr[i] = x_ptr[i] * args.alpha + static_cast<float>(y_ptr[i]) + float(args.m) + float(npid.x);
    }
}
"""

ARGS_DTYPE = np.dtype([("n", "i4"), ("alpha", "f4"), ("m", "i8")], align=True)


def test_add_float_half_struct(backend: CpuBackend, run) -> None:
    lib = backend.compile(ADD)
    assert list(lib.kernels) == ["add_kernel"]
    n = 1000
    x = RNG.standard_normal(n, dtype=np.float32)
    y = RNG.standard_normal(n).astype(np.float16)
    out = np.zeros(n, np.float32)
    args = np.zeros(1, ARGS_DTYPE)
    args["n"], args["alpha"], args["m"] = n, 2.5, 7
    groups = (n + 63) // 64
    run(lib, "add_kernel", (groups, 1, 1), (64, 1, 1), x, y, out, args)
    np.testing.assert_allclose(out, x * np.float32(2.5) + y.astype(np.float32) + 7 + groups, rtol=1e-6)


def test_signature_parsed(backend: CpuBackend, run) -> None:
    sig = backend.compile(ADD).function("add_kernel").signature
    assert sig.params[1] == ("y_ptr", "device const half*", "device", "buffer", 1)
    assert sig.params[3] == ("args", "constant add_kernel_args&", "constant", "buffer", 3)
    assert sig.params[4] == ("pid", "uint3", None, "threadgroup_position_in_grid", None)


HALF_OPS = """
#include <metal_stdlib>
using namespace metal;
kernel void half_ops(device const half* a [[buffer(0)]], device const half* b [[buffer(1)]],
                     device half* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    half x = a[i], y = b[i];
    out[4 * i + 0] = x + y;
    out[4 * i + 1] = x * y - y;       // rounds after each op, as on the GPU
    out[4 * i + 2] = x / (abs(y) + 1.0h);
    out[4 * i + 3] = metal::precise::exp(x) ;
}
"""


def test_half_rounds_every_op(backend: CpuBackend, run) -> None:
    n = 4096
    a = RNG.standard_normal(n).astype(np.float16)
    b = RNG.standard_normal(n).astype(np.float16)
    out = np.zeros(4 * n, np.float16)
    run(backend.compile(HALF_OPS), "half_ops", (n // 256, 1, 1), (256, 1, 1), a, b, out)
    o = out.reshape(n, 4)
    np.testing.assert_array_equal(o[:, 0], a + b)
    np.testing.assert_array_equal(o[:, 1], (a * b) - b)
    np.testing.assert_array_equal(o[:, 2], a / (np.abs(b) + np.float16(1)))
    np.testing.assert_allclose(o[:, 3].astype(np.float32), np.exp(a.astype(np.float32)), rtol=1e-3)


def test_half_conversion_exhaustive(backend: CpuBackend, run) -> None:
    src = """
#include <metal_stdlib>
using namespace metal;
kernel void roundtrip(device const float* x [[buffer(0)]], device half* h [[buffer(1)]],
                      device float* back [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    h[i] = half(x[i]);
    back[i] = float(as_type<half>(ushort(i & 0xffff)));
}
"""
    bits = np.arange(1 << 16, dtype=np.uint16)
    ref = bits.view(np.float16)
    # Values between and around every pair of halves exercise the round-to-nearest-even path.
    with np.errstate(invalid="ignore", over="ignore"):
        # Exact ties (midpoints between neighbouring halves) and values just off them.
        f = ref.astype(np.float32)
        nxt = np.nextafter(ref, np.float16(np.inf)).astype(np.float32)
        x = np.where(np.isfinite(nxt) & np.isfinite(f), (f + nxt) / 2, f).astype(np.float32)
        x[1::3] = np.nextafter(x[1::3], np.float32(np.inf))
        expect = x.astype(np.float16)
    h = np.zeros_like(ref)
    back = np.zeros(1 << 16, np.float32)
    run(backend.compile(src), "roundtrip", (256, 1, 1), (256, 1, 1), x, h, back)
    ok = ~np.isnan(ref)
    np.testing.assert_array_equal(h.view(np.uint16)[ok], expect.view(np.uint16)[ok])
    np.testing.assert_array_equal(back, ref.astype(np.float32))


def test_bfloat(backend: CpuBackend, run) -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    src = """
#include <metal_stdlib>
using namespace metal;
kernel void bf(device const bfloat* a [[buffer(0)]], device const bfloat* b [[buffer(1)]],
               device bfloat* out [[buffer(2)]], device float* f [[buffer(3)]], uint i [[thread_position_in_grid]]) {
    out[i] = a[i] * b[i] + a[i];
    f[i] = float(a[i]) * 2.0f;
}
"""
    n = 512
    a = RNG.standard_normal(n).astype(ml_dtypes.bfloat16)
    b = RNG.standard_normal(n).astype(ml_dtypes.bfloat16)
    out = np.zeros(n, ml_dtypes.bfloat16)
    f = np.zeros(n, np.float32)
    run(backend.compile(src), "bf", (2, 1, 1), (256, 1, 1), a, b, out, f)
    np.testing.assert_array_equal(out.view(np.uint16), ((a * b) + a).view(np.uint16))
    np.testing.assert_array_equal(f, a.astype(np.float32) * 2)


def test_bfloat_implicit_conversion_rejected(backend: CpuBackend, run) -> None:
    src = """
#include <metal_stdlib>
using namespace metal;
kernel void bad(device bfloat* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    half h = a[i];
    a[i] = bfloat(float(h));
}
"""
    with pytest.raises(MSLCompileError):
        backend.compile(src)


def test_int_add_and_2d_builtins(backend: CpuBackend, run) -> None:
    src = """
#include <metal_stdlib>
using namespace metal;
kernel void grid2d(device const int* a [[buffer(0)]], device int* out [[buffer(1)]],
                   device uint* ids [[buffer(2)]],
                   uint2 gid [[thread_position_in_grid]], uint2 tpos [[thread_position_in_threadgroup]],
                   ushort2 tg [[threadgroup_position_in_grid]], uint2 tptg [[threads_per_threadgroup]],
                   uint lin [[thread_index_in_threadgroup]], uint2 ngroups [[threadgroups_per_grid]]) {
    uint w = ngroups.x * tptg.x;
    uint idx = gid.y * w + gid.x;
    out[idx] = a[idx] + int(gid.x) - int(gid.y);
    ids[4 * idx + 0] = lin;
    ids[4 * idx + 1] = tpos.x + tpos.y * 100;
    ids[4 * idx + 2] = uint(tg.x) + uint(tg.y) * 100;
    ids[4 * idx + 3] = (tg.x * tptg.x + tpos.x == gid.x) ? 1u : 0u;
}
"""
    h, w = 12, 20
    a = RNG.integers(-1000, 1000, (h, w), dtype=np.int32)
    out = np.zeros_like(a)
    ids = np.zeros((h, w, 4), np.uint32)
    run(backend.compile(src), "grid2d", (5, 3, 1), (4, 4, 1), a, out, ids)
    yy, xx = np.mgrid[0:h, 0:w]
    np.testing.assert_array_equal(out, a + xx - yy)
    np.testing.assert_array_equal(ids[..., 0], (xx % 4) + 4 * (yy % 4))
    np.testing.assert_array_equal(ids[..., 1], (xx % 4) + 100 * (yy % 4))
    np.testing.assert_array_equal(ids[..., 2], (xx // 4) + 100 * (yy // 4))
    assert ids[..., 3].all()


def test_as_type_and_vector_loads(backend: CpuBackend, run) -> None:
    src = """
#include <metal_stdlib>
using namespace metal;
static inline float twice(float x) { return x + x; }
kernel void vecs(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                 device const uint* packed [[buffer(2)]], device half* halves [[buffer(3)]],
                 device char* chars [[buffer(4)]], device uint* fbits [[buffer(5)]],
                 uint i [[thread_position_in_grid]]) {
    uint4 t = *((device const uint4*)(x + 4 * i));
    *((device uint4*)(y + 4 * i)) = t;
    float4 v = as_type<float4>(t);
    v[2] = twice(v.z);
    y[4 * i + 3] = select(v.w, v[2], v.x > 0.0f);
    half2 h = as_type<half2>(packed[i]);
    halves[2 * i] = h.y;
    halves[2 * i + 1] = h.x;
    char4 c = as_type<char4>(packed[i]);
    chars[i] = c.x + c.w;
    fbits[i] = as_type<uint>(x[i]) ^ as_type<uint>(float(ushort2(as_type<ushort2>(packed[i])).y));
}
"""
    n = 64
    x = RNG.standard_normal(4 * n, dtype=np.float32)
    y = np.zeros_like(x)
    packed = RNG.integers(0, 2**32, n, dtype=np.uint32)
    halves = np.zeros(2 * n, np.float16)
    chars = np.zeros(n, np.int8)
    fbits = np.zeros(n, np.uint32)
    run(backend.compile(src), "vecs", (1, 1, 1), (n, 1, 1), x, y, packed, halves, chars, fbits)
    xr = x.reshape(n, 4)
    ref = xr.copy()
    ref[:, 3] = np.where(xr[:, 0] > 0, 2 * xr[:, 2], xr[:, 3])
    np.testing.assert_array_equal(y.reshape(n, 4), ref)
    hv = packed.view(np.float16).reshape(n, 2)
    np.testing.assert_array_equal(halves.reshape(n, 2).view(np.uint16), hv[:, ::-1].view(np.uint16))
    cv = packed.view(np.int8).reshape(n, 4).astype(np.int32)
    np.testing.assert_array_equal(chars, (cv[:, 0] + cv[:, 3]).astype(np.int8))
    hi = (packed >> 16).astype(np.float32)
    np.testing.assert_array_equal(fbits, x[:n].view(np.uint32) ^ hi.view(np.uint32))


def test_math_and_integer_semantics(backend: CpuBackend, run) -> None:
    src = """
#include <metal_stdlib>
using namespace metal;
kernel void m(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
              device int* iout [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float v = x[i];
    out[8 * i + 0] = metal::precise::exp(v);
    out[8 * i + 1] = metal::precise::sqrt(fabs(v));
    out[8 * i + 2] = metal::precise::tanh(v);
    out[8 * i + 3] = fma(v, 2.0f, 1.0f);
    out[8 * i + 4] = clamp(v, -0.5f, 0.5f);
    out[8 * i + 5] = fmax(v, 0.0f) + min(v, 1.0f);
    out[8 * i + 6] = metal::precise::rsqrt(fabs(v) + 1.0f);
    out[8 * i + 7] = floor(v) + ceil(v);
    int a = int(i) * 0x7fffffff;  // wraps, as on the GPU
    iout[2 * i] = a;
    iout[2 * i + 1] = mulhi(int(i) * 1000003, -77777) + static_cast<int>(v * 100.0f);
}
"""
    n = 256
    x = RNG.standard_normal(n, dtype=np.float32) * 3
    out = np.zeros(8 * n, np.float32)
    iout = np.zeros(2 * n, np.int32)
    run(backend.compile(src), "m", (1, 1, 1), (n, 1, 1), x, out, iout)
    o = out.reshape(n, 8)
    np.testing.assert_allclose(o[:, 0], np.exp(x), rtol=1e-6)
    np.testing.assert_allclose(o[:, 1], np.sqrt(np.abs(x)), rtol=1e-7)
    np.testing.assert_allclose(o[:, 2], np.tanh(x), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(o[:, 3], x * 2 + 1, rtol=1e-6)
    np.testing.assert_array_equal(o[:, 4], np.clip(x, -0.5, 0.5))
    np.testing.assert_array_equal(o[:, 5], np.maximum(x, 0) + np.minimum(x, 1))
    np.testing.assert_allclose(o[:, 6], 1 / np.sqrt(np.abs(x) + 1), rtol=1e-6)
    np.testing.assert_array_equal(o[:, 7], np.floor(x) + np.ceil(x))
    i = np.arange(n, dtype=np.int64)
    np.testing.assert_array_equal(
        iout[0::2], ((i * 0x7FFFFFFF) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    )
    prod = ((i * 1000003) & 0xFFFFFFFF).astype(np.uint32).view(np.int32).astype(np.int64) * -77777
    np.testing.assert_array_equal(iout[1::2], (prod >> 32) + (x * np.float32(100)).astype(np.int32))


def test_function_lookup_error(backend: CpuBackend, run) -> None:
    lib = backend.compile(ADD)
    with pytest.raises(KeyError, match="available: add_kernel"):
        lib.function("nope")


def test_missing_buffer_is_reported(backend: CpuBackend, run) -> None:
    fn = backend.compile(ADD).function("add_kernel")
    x = np.zeros(4, np.float32)
    with pytest.raises(KernelLaunchError, match=r"'args' \[\[buffer\(3\)\]\]"):
        fn.launch((1, 1, 1), (4, 1, 1), {0: x.ctypes.data, 1: x.ctypes.data, 2: x.ctypes.data})
    with pytest.raises(KernelLaunchError, match="exceeds Metal's limit of 1024"):
        fn.launch((1, 1, 1), (2048, 1, 1), dict.fromkeys(range(4), x.ctypes.data))


POOL_SCRIPT = """
import os, sys
import numpy as np
import enceladus
import enceladus.language as tl


@enceladus.jit
def double(x, y, n, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B)
    m = o < n
    tl.store(y + o, tl.load(x + o, mask=m) * 2, mask=m)


def threads():
    return len(os.listdir("/proc/self/task"))


x = np.arange(20000, dtype=np.float32)
y = np.empty_like(x)
before = threads()
double[(1,)](x, y, x.size, B=256)
one = threads()
double[(79,)](x, y, x.size, B=256)
np.testing.assert_array_equal(y, 2 * x)
many = threads()
double[(79,)](x, y, x.size, B=256)
print("THREADS", one - before, many - before, threads() - before)
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads through /proc (Linux)")
def test_pool_threads_start_when_a_launch_needs_them(tmp_path) -> None:
    """The runtime's helper threads start on the first launch with work for them (#26: a fresh process running a
    one-threadgroup launch creates no thread), then are reused; the results are unchanged."""
    script = tmp_path / "pool.py"
    script.write_text(POOL_SCRIPT)
    env = {**os.environ, "ENCELADUS_CPU_THREADS": "4", "ENCELADUS_CACHE_DIR": str(tmp_path / "cache")}
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("THREADS "))
    assert line.split()[1:] == ["0", "3", "3"]  # none for one threadgroup; 3 helpers (4 threads); no more after


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or not os.path.isdir("/proc/self/task"),
                    reason="sets the child's CPU affinity and counts its threads (Linux)")
def test_default_pool_follows_the_cpu_affinity_mask(tmp_path) -> None:
    """With no ENCELADUS_CPU_THREADS the pool has one thread per CPU the process may run on (taskset, containers),
    not os.cpu_count(): pinned to one CPU, a 79-threadgroup launch starts no helper thread."""
    script = tmp_path / "pool.py"
    script.write_text(POOL_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "ENCELADUS_CPU_THREADS"}
    env["ENCELADUS_CACHE_DIR"] = str(tmp_path / "cache")
    one_cpu = {min(os.sched_getaffinity(0))}
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300,
                         preexec_fn=lambda: os.sched_setaffinity(0, one_cpu))
    assert res.returncode == 0, res.stderr
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("THREADS "))
    assert line.split()[1:] == ["0", "0", "0"]


# The memory pages the launching thread touched for the first time during a launch that starts 15 helper threads.
FIRST_HELPERS_SCRIPT = POOL_SCRIPT[:POOL_SCRIPT.index("x = np.arange")] + """
import resource
from enceladus.backends.cpu import find_compiler
from enceladus.backends.cpu.library import _Runtime


def faults():
    return resource.getrusage(resource.RUSAGE_THREAD).ru_minflt


x = np.arange(16 * 256, dtype=np.float32)
y = np.empty_like(x)
double.warmup(x, y, x.size, B=256, grid=(16,))
_Runtime.get(find_compiler())
double[(1,)](x, y, x.size, B=256)  # (the launch path's own first-time work, without a helper)
before = faults()
double[(16,)](x, y, x.size, B=256)  # 15 helper threads start
print("FAULTS", faults() - before)
np.testing.assert_array_equal(y, 2 * x)
"""


@pytest.mark.skipif(not hasattr(__import__("resource"), "RUSAGE_THREAD"), reason="per-thread page faults (Linux)")
def test_the_launch_that_starts_helpers_does_not_make_their_workers(tmp_path) -> None:
    """#26: each helper makes its own worker (~72 KiB of zeroed state) on its own thread; the launch that starts the
    helpers made them all first (the first launch of a fresh process on a 16-CPU host: 15 workers, 228 pages first
    touched by the launching thread, about 25 us per helper); now it touches about one page per thread it starts."""
    script = tmp_path / "first_helpers.py"
    script.write_text(FIRST_HELPERS_SCRIPT)
    env = {**os.environ, "ENCELADUS_CPU_THREADS": "16", "ENCELADUS_CACHE_DIR": str(tmp_path / "cache")}
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    touched = int(next(ln for ln in res.stdout.splitlines() if ln.startswith("FAULTS ")).split()[1])
    assert touched < 4 * 15, f"the launching thread touched {touched} new pages starting 15 helpers"


# Launches whose helper threads cannot run while the launching thread does (one CPU, helpers at SCHED_IDLE): how often
# the launching thread blocked (voluntary context switches).
IDLE_HELPERS_SCRIPT = POOL_SCRIPT[:POOL_SCRIPT.index("x = np.arange")] + """
import resource


def blocked():
    return resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw


x = np.arange(4 * 256, dtype=np.float32)
y = np.empty_like(x)
before = set(os.listdir("/proc/self/task"))
double[(4,)](x, y, x.size, B=256)  # starts the 3 helper threads
helpers = set(os.listdir("/proc/self/task")) - before
try:
    for tid in helpers:  # they run only when the process's one CPU has nothing else to do
        os.sched_setscheduler(int(tid), os.SCHED_IDLE, os.sched_param(0))
except OSError as e:  # (a sandbox that refuses scheduling changes)
    print("CANNOT", e)
    sys.exit(0)
before = blocked()
for _ in range(20):
    y[:] = 0
    double[(4,)](x, y, x.size, B=256)
    np.testing.assert_array_equal(y, 2 * x)
print("BLOCKED", blocked() - before, len(helpers))
"""


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE") or not hasattr(__import__("resource"), "RUSAGE_THREAD") or
                    not os.path.isdir("/proc/self/task"),
                    reason="sets its helper threads' scheduling class and counts context switches (Linux)")
def test_a_launch_does_not_wait_for_helper_threads_that_have_not_joined_it(tmp_path) -> None:
    """#26: helpers join a launch only while it has threadgroups left to claim; once the launching thread has claimed
    the last one it waits for the helpers that joined, not for the others (the first launch of a fresh process
    waited until every helper thread it had just started was running and had checked in). Here the helpers cannot
    run while the launching thread does, so it runs the groups itself and hardly ever blocks (it blocked in every
    launch before: 22-40 times in 20); the results are unchanged."""
    script = tmp_path / "idle_helpers.py"
    script.write_text(IDLE_HELPERS_SCRIPT)
    env = {**os.environ, "ENCELADUS_CPU_THREADS": "4", "ENCELADUS_CACHE_DIR": str(tmp_path / "cache")}
    one_cpu = {min(os.sched_getaffinity(0))}
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300,
                         preexec_fn=lambda: os.sched_setaffinity(0, one_cpu))
    assert res.returncode == 0, res.stderr
    if res.stdout.startswith("CANNOT "):
        pytest.skip(f"cannot change the helpers' scheduling class here: {res.stdout.strip()}")
    blocked, helpers = map(int, next(ln for ln in res.stdout.splitlines() if ln.startswith("BLOCKED ")).split()[1:])
    assert helpers == 3
    # (SCHED_IDLE threads still get a sliver of the CPU: a helper may now and then join, and be waited for)
    assert blocked < 10, f"the launching thread blocked {blocked} times in 20 launches"


@pytest.mark.parametrize("name, raw", [("ENCELADUS_CPU_THREADS", "abc"), ("ENCELADUS_CPU_THREADS", "0"),
                                       ("ENCELADUS_CPU_THREADS", "99999999999"),
                                       ("ENCELADUS_CPU_FIBER_STACK", "big"),
                                       ("ENCELADUS_CPU_FIBER_STACK", "-1"),
                                       ("ENCELADUS_CPU_FIBER_STACK", str(1 << 64))])
def test_bad_pool_settings_are_refused_by_name(monkeypatch, name, raw) -> None:
    """A pool setting that is not a whole number in range is a CpuBackendError naming the variable (it was a bare
    ValueError from int(), or a silent wrap-around: 99999999999 threads became 1,215,752,191)."""
    from enceladus.backends.cpu.library import _count_from_env

    monkeypatch.setenv(name, raw)
    with pytest.raises(CpuBackendError, match=f"{name}={raw!r}: expected .* whole number from"):
        _count_from_env(name, 4, *((1, 1024) if name.endswith("THREADS") else (0, 1 << 30)), "a count")
    monkeypatch.setenv(name, " 8 ")
    assert _count_from_env(name, 4, 0, 1024, "a count") == 8
    monkeypatch.setenv(name, "")
    assert _count_from_env(name, 4, 0, 1024, "a count") == 4


WORKER_MEMORY_SCRIPT = POOL_SCRIPT[:POOL_SCRIPT.index("x = np.arange")] + """
from enceladus.backends.cpu import find_compiler
from enceladus.backends.cpu.library import _Runtime


def rss_kib():
    with open("/proc/self/status") as f:
        return next(int(ln.split()[1]) for ln in f if ln.startswith("VmRSS:"))


x = np.arange(20000, dtype=np.float32)
y = np.empty_like(x)
threads_before = threads()
before = rss_kib()
_Runtime.get(find_compiler())  # 512 workers configured
loaded = rss_kib()
double[(79,)](x, y, x.size, B=256)  # 78 helpers, each with its worker, made now
np.testing.assert_array_equal(y, 2 * x)
print("RSS_KIB", loaded - before, threads() - threads_before)
"""


@pytest.mark.skipif(not os.path.isfile("/proc/self/status"), reason="reads /proc/self/status (Linux)")
def test_helper_workers_are_made_with_their_threads(tmp_path) -> None:
    """Loading the runtime makes only the launching thread's worker (~72 KiB of zeroed state each): with
    ENCELADUS_CPU_THREADS=512 eager workers took ~37 MB at load; a helper's worker is made when its thread
    starts, and launches that use them are unchanged."""
    script = tmp_path / "workers.py"
    script.write_text(WORKER_MEMORY_SCRIPT)
    env = {**os.environ, "ENCELADUS_CPU_THREADS": "512", "ENCELADUS_CACHE_DIR": str(tmp_path / "cache")}
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    grown, new_threads = map(int, next(ln for ln in res.stdout.splitlines() if ln.startswith("RSS_KIB "))
                             .split()[1:])
    assert grown < 16 * 1024, f"loading the runtime grew the process by {grown} KiB"
    assert new_threads == 78
