"""The cpu backend (clang and g++) next to the NumPy interpreter and NumPy: every example, the tutorial matmul, scale+shift.

Run: ``python benchmarks/cpu_backend.py [--repeat N] [--compilers clang++,g++] [--targets native,generic]``.
Prints one table and writes benchmarks/results/cpu_backend.json.

``--targets native,generic`` adds a worker per ``ENCELADUS_CPU_TARGET`` (this machine's instruction-set
extensions, e.g. F16C half conversions, against the compiler's default target).

The cases: every example, the tutorial matmul, and an elementwise kernel with scalar arguments (x * scale + shift,
one fma per element). Per case: the best wall-clock time of a launch (after a warm-up launch whose result is checked against NumPy)
on the cpu backend with each compiler (default access checks on, default thread pool), in Enceladus's NumPy
interpreter and in NumPy itself, the ratios cpu/interpreter and cpu/NumPy, and the cold build time of each
kernel on the cpu backend: generated MSL -> C++ compile -> loaded library, with an empty cache. Each compiler
runs in its own worker process (its own cache directory, ``ENCELADUS_CXX``); the interpreter and NumPy run in
this process. A few raw-MSL rows (a float4 vector add, a simd_sum block reduction), the fixed cost of a launch
(one threadgroup of raw MSL; one program through @jit) and the fiber switch cost follow. Timings on a shared
machine are noisy: compare the ratios of one run, and repeat.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
WORKER = len(sys.argv) > 1 and sys.argv[1] == "--worker"
if not WORKER:
    os.environ["ENCELADUS_INTERPRET"] = "1"  # this process: every launch in the interpreter

import enceladus  # noqa: E402
import enceladus.language as tl  # noqa: E402


@enceladus.jit
def tutorial_matmul(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * sam + (k + rk)[None, :] * sak)
        b = tl.load(b_ptr + (k + rk)[:, None] * sbk + rn[None, :] * sbn)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc.to(c_ptr.dtype.element_ty))


@enceladus.jit
def scale_shift(x_ptr, out_ptr, n, scale, shift, BLOCK: tl.constexpr):
    # elementwise with scalar arguments: x * scale + shift is one fma per element (enable_fp_fusion)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * scale + shift, mask=mask)


def load_example(name: str) -> Any:
    path = ROOT / "examples" / name
    spec = importlib.util.spec_from_file_location(f"example_{path.stem}", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):  # 01 runs (and prints) at import
        spec.loader.exec_module(mod)
    return mod


Case = tuple[Callable[[], Any], Callable[[], Any], Callable[[Any], float], bool]


def cases() -> dict[str, Case]:
    """name -> (launch, NumPy equivalent, max error of the launch's result vs NumPy, elementwise)."""
    rng = np.random.default_rng(0)
    ex1, ex2, ex3 = load_example("01_vector_add.py"), load_example("02_softmax.py"), load_example("03_matmul.py")
    ex4, ex5 = load_example("04_flash_attention.py"), load_example("05_layer_norm.py")
    out: dict[str, Case] = {}

    n = 1 << 20
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    z = np.empty_like(x)
    out["01 vector add (1M fp32)"] = (
        lambda: ex1.add_kernel[(enceladus.cdiv(n, 1024),)](x, y, z, n, BLOCK=1024),
        lambda: np.add(x, y, out=np.empty_like(x)),
        lambda _: float(np.abs(z - (x + y)).max()), True)
    zs = np.empty_like(x)
    def numpy_scale_shift() -> np.ndarray:  # two passes into a new array (NumPy has no fused multiply-add)
        r = np.multiply(x, np.float32(1.5), out=np.empty_like(x))
        return np.add(r, np.float32(-0.25), out=r)

    out["scale and shift (1M fp32)"] = (
        lambda: scale_shift[(enceladus.cdiv(n, 1024),)](x, zs, n, 1.5, -0.25, BLOCK=1024), numpy_scale_shift,
        lambda _: float(np.abs(zs - (x * np.float32(1.5) + np.float32(-0.25))).max()), True)

    s = rng.standard_normal((1024, 1024), dtype=np.float32)

    def softmax_ref() -> np.ndarray:
        e = np.exp(s - s.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)

    out["02 softmax (1024x1024 fp32)"] = (
        lambda: ex2.softmax(s), softmax_ref, lambda r: float(np.abs(r - softmax_ref()).max()), False)

    a = rng.standard_normal((256, 256)).astype(np.float16)
    b = rng.standard_normal((256, 256)).astype(np.float16)
    ref_ab = a.astype(np.float32) @ b.astype(np.float32)
    out["03 matmul, autotuned (256^3 fp16)"] = (
        lambda: ex3.matmul(a, b), lambda: (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16),
        lambda r: float(np.abs(r.astype(np.float32) - ref_ab).max()), False)
    c = np.empty((256, 256), np.float16)
    out["tutorial matmul (256^3 fp16, 64x64x32)"] = (
        lambda: tutorial_matmul[(4, 4)](a, b, c, 256, 256, 256, 256, 1, 256, 1, 256, 1, BM=64, BN=64, BK=32),
        lambda: (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16),
        lambda _: float(np.abs(c.astype(np.float32) - ref_ab).max()), False)

    q, k, v = (rng.standard_normal((4, 256, 64)).astype(np.float16) for _ in range(3))
    scale = 1 / np.sqrt(64)
    ref_attn = ex4.reference(q, k, v, False, scale)
    out["04 flash attention (4x256x64 fp16)"] = (
        lambda: ex4.attention(q, k, v, False, scale), lambda: ex4.reference(q, k, v, False, scale),
        lambda r: float(np.abs(r.astype(np.float32) - ref_attn).max()), False)

    xl = rng.standard_normal((1024, 1024), dtype=np.float32)
    w, bias = rng.standard_normal(1024, dtype=np.float32), rng.standard_normal(1024, dtype=np.float32)
    ref_ln = ex5.reference(xl, w, bias)[0]
    out["05 layer norm (1024x1024 fp32)"] = (
        lambda: ex5.layer_norm(xl, w, bias), lambda: ex5.reference(xl, w, bias),
        lambda r: float(np.abs(r[0] - ref_ln).max()), False)
    return out


def best_of(fn: Callable[[], Any], repeat: int, budget_s: float = 2.0, cpu: list[float] | None = None) -> float:
    """Best wall-clock seconds of up to `repeat` calls; `cpu` receives the best CPU seconds of the process (all
    its threads: less sensitive than wall time to other load on a shared machine)."""
    times: list[float] = []
    cpu_times: list[float] = []
    start = time.perf_counter()
    while len(times) < repeat and (len(times) < 2 or time.perf_counter() - start < budget_s):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        cpu_times.append(time.process_time() - c0)
    if cpu is not None:
        cpu.append(min(cpu_times))
    return min(times)


def measure(repeat: int, all_cases: dict[str, Case] | None = None) -> dict[str, dict[str, float]]:
    results = {}
    for name, (launch, _, error, _) in (all_cases or cases()).items():
        err = error(launch())  # warm-up: compile (or trace) and check
        cpu: list[float] = []
        results[name] = {"seconds": best_of(launch, repeat, cpu=cpu), "cpu_seconds": cpu[0], "max_error": err}
    return results


# --- raw MSL on the cpu backend (no compiler front end) ------------------------------------------------
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


def raw_msl(repeat: int) -> dict[str, Any]:
    from enceladus.backends.cpu import CpuBackend

    backend = CpuBackend()
    rng = np.random.default_rng(0)
    rows = {}
    n = 1 << 20
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = np.empty_like(x)
    add = backend.compile(ADD).function("add")
    bufs = {0: x.ctypes.data, 1: y.ctypes.data, 2: out.ctypes.data}
    t = best_of(lambda: add.launch((n // 4 // 256, 1, 1), (256, 1, 1), bufs), repeat)
    np.testing.assert_array_equal(out, x + y)
    rows["raw MSL: vector add 1M fp32 (float4)"] = {"seconds": t, "numpy_s": best_of(lambda: np.add(x, y, out=out),
                                                                                      repeat)}
    m = 1 << 22
    data = rng.standard_normal(m, dtype=np.float32)
    groups = m // (256 * 16)
    partial = np.empty(groups, np.float32)
    red = backend.compile(REDUCE).function("block_sum")
    t = best_of(lambda: red.launch((groups, 1, 1), (256, 1, 1), {0: data.ctypes.data, 1: partial.ctypes.data}),
                repeat)
    np.testing.assert_allclose(partial.sum(dtype=np.float64), data.sum(dtype=np.float64), rtol=1e-3)
    rows["raw MSL: block reduction 4M fp32 (simd_sum)"] = {
        "seconds": t, "numpy_s": best_of(lambda: data.reshape(groups, -1).sum(axis=1), repeat)}
    # The fixed cost of a launch, beside the work: one threadgroup of the raw kernel (the runtime: argument
    # packing, the dispatch, the thread pool), and one program of example 01 through @jit (plus the front end:
    # argument checks, specialization key, launcher).
    one = {0: x.ctypes.data, 1: y.ctypes.data, 2: out.ctypes.data}
    overhead = {"raw MSL launch, 1 threadgroup of 256 threads": best_of(
        lambda: add.launch((1, 1, 1), (256, 1, 1), one), 200, budget_s=1.0)}
    ex1 = load_example("01_vector_add.py")
    xs, ys, zs = x[:1024], y[:1024], out[:1024]
    ex1.add_kernel[(1,)](xs, ys, zs, 1024, BLOCK=1024)
    overhead["@jit launch of example 01, 1 program (1024 elements)"] = best_of(
        lambda: ex1.add_kernel[(1,)](xs, ys, zs, 1024, BLOCK=1024), 200, budget_s=1.0)
    return {"rows": rows, "launch_overhead_s": overhead, "fiber_switch_ns": backend.fiber_switch_ns(2_000_000),
            "compiler": backend.compiler.version}


def cold_builds(dump: Path) -> dict[str, float]:
    """Seconds from generated MSL to a loaded library for every kernel the run compiled, with a cache miss."""
    from enceladus.backends.cpu import CpuBackend

    backend = CpuBackend()
    builds: dict[str, float] = {}
    for path in sorted(dump.glob("*.metal")):
        msl = path.read_text() + f"\n// cold build {uuid.uuid4().hex}\n"  # a new cache key: a real build
        t0 = time.perf_counter()
        backend.compile(msl)
        name = path.stem.rsplit("-", 1)[0]
        builds[name] = max(builds.get(name, 0.0), time.perf_counter() - t0)
    return builds


def worker(repeat: int) -> None:
    results = measure(repeat)
    builds = cold_builds(Path(os.environ["ENCELADUS_DUMP"]))
    print(json.dumps({"results": results, "builds": builds, "raw": raw_msl(repeat)}))


KERNELS = {  # case -> kernel names whose cold builds it needs
    "01 vector add (1M fp32)": ["add_kernel"],
    "scale and shift (1M fp32)": ["scale_shift"],
    "02 softmax (1024x1024 fp32)": ["softmax_kernel"],
    "03 matmul, autotuned (256^3 fp16)": ["matmul_kernel"],
    "tutorial matmul (256^3 fp16, 64x64x32)": ["tutorial_matmul"],
    "04 flash attention (4x256x64 fp16)": ["attn_fwd"],
    "05 layer norm (1024x1024 fp32)": ["layer_norm_fwd"],
}


def run_worker(cxx: str, repeat: int, target: str = "native") -> tuple[dict[str, Any] | None, str]:
    with tempfile.TemporaryDirectory(prefix="enc-cpu-bench-") as tmp:
        env = {k: v for k, v in os.environ.items() if k not in ("ENCELADUS_INTERPRET", "ENCELADUS_DEBUG")}
        env.update(ENCELADUS_CXX=cxx, ENCELADUS_BACKEND="cpu", ENCELADUS_CACHE_DIR=str(Path(tmp) / "cache"),
                   ENCELADUS_CPU_TARGET=target,
                   ENCELADUS_DUMP=str(Path(tmp) / "dump"))
        res = subprocess.run([sys.executable, __file__, "--worker", str(repeat)], capture_output=True, text=True,
                             env=env, timeout=1800)
    if res.returncode != 0:
        tail = res.stderr.strip().splitlines()[-1] if res.stderr.strip() else f"exit status {res.returncode}"
        return None, f"{cxx} failed: {tail}"
    return json.loads(res.stdout.strip().splitlines()[-1]), ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="launches timed per case (best is kept)")
    parser.add_argument("--compilers", default="clang++,g++", help="comma-separated C++ compilers to run")
    parser.add_argument("--targets", default="native",
                        help="comma-separated ENCELADUS_CPU_TARGET values, each a worker per compiler (e.g. "
                             "native,generic: this machine's extensions such as F16C against the compiler's default)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "cpu_backend.json"))
    args = parser.parse_args()

    compilers = [c for c in args.compilers.split(",") if c]
    workers: dict[str, dict[str, Any]] = {}
    skipped: dict[str, str] = {}
    targets = [t for t in args.targets.split(",") if t]
    for cxx in compilers:
        for target in targets:
            label = cxx if target == "native" else f"{cxx} {target}"  # the rows and JSON keys of this worker
            if shutil.which(cxx) is None:
                skipped[label] = "not installed"
                continue
            data, why = run_worker(cxx, args.repeat, target)
            if data is None:
                skipped[label] = why
            else:
                workers[label] = data
    all_cases = cases()
    interp = measure(args.repeat, all_cases)
    numpy_s = {name: best_of(ref, args.repeat) for name, (_, ref, _, _) in all_cases.items()}
    elementwise = {name: c[3] for name, c in all_cases.items()}

    names = list(interp)
    head = f"{'case':40} {'interp':>9} {'numpy':>9}"
    for cxx in workers:
        head += f" {cxx:>9} {'/interp':>7} {'/numpy':>7} {'build':>7}"
    print(f"threads: {os.environ.get('ENCELADUS_CPU_THREADS') or os.cpu_count()}   "
          f"machine: {platform.machine()}, {os.cpu_count()} CPUs   (times in ms; build = cold MSL -> loaded library, s)")
    print(head)
    rows = []
    for name in names:
        row: dict[str, Any] = {"case": name, "interpreter_s": interp[name]["seconds"], "numpy_s": numpy_s[name],
                               "interpreter_cpu_s": interp[name]["cpu_seconds"],
                               "elementwise": elementwise[name], "interpreter_max_error": interp[name]["max_error"]}
        line = f"{name:40} {interp[name]['seconds'] * 1e3:9.2f} {numpy_s[name] * 1e3:9.2f}"
        for cxx, data in workers.items():
            r = data["results"][name]
            build = max((data["builds"].get(k, 0.0) for k in KERNELS[name]), default=0.0)
            vs_i, vs_np = r["seconds"] / interp[name]["seconds"], r["seconds"] / numpy_s[name]
            row[cxx] = {"seconds": r["seconds"], "vs_interpreter": vs_i, "vs_numpy": vs_np, "cold_build_s": build,
                        "cpu_seconds": r["cpu_seconds"],
                        "cpu_time_vs_interpreter": r["cpu_seconds"] / interp[name]["cpu_seconds"],
                        "max_error": r["max_error"]}
            line += f" {r['seconds'] * 1e3:9.2f} {vs_i:6.2f}x {vs_np:6.1f}x {build:7.2f}"
        rows.append(row)
        print(line)
    print("CPU time (all threads of the process) of the same best launches, cpu backend / interpreter: " + "; ".join(
        f"{row['case'].split(' (')[0]}: " + ", ".join(f"{cxx} {row[cxx]['cpu_time_vs_interpreter']:.2f}x"
                                                      for cxx in workers) for row in rows))
    for cxx, data in workers.items():
        for rname, r in data["raw"]["rows"].items():
            print(f"{rname:40} {cxx}: {r['seconds'] * 1e3:.3f} ms, NumPy {r['numpy_s'] * 1e3:.3f} ms "
                  f"({r['seconds'] / r['numpy_s']:.1f}x)")
        for oname, t in data["raw"]["launch_overhead_s"].items():
            print(f"{oname:40} {cxx}: {t * 1e6:.1f} us")
        print(f"{'fiber context switch (one way)':40} {cxx}: {data['raw']['fiber_switch_ns']:.1f} ns")
    for cxx, why in skipped.items():
        print(f"{cxx}: not measured ({why})")

    result = {
        "machine": platform.machine(), "cpu_count": os.cpu_count(),
        "threads": int(os.environ.get("ENCELADUS_CPU_THREADS") or os.cpu_count() or 1),
        "checks": "default (on)", "load_average": os.getloadavg(), "targets": targets,
        "timing": "best wall-clock time (and best process CPU time) of the repeats, after a checked warm-up launch",
        "repeat": args.repeat, "numpy": np.__version__,
        "compilers": {cxx: data["raw"]["compiler"] for cxx, data in workers.items()}, "skipped": skipped,
        "cases": rows,
        "raw_msl": {cxx: data["raw"] for cxx, data in workers.items()},
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(args.out + ".tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    os.replace(tmp, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    if WORKER:
        worker(int(sys.argv[2]))
    else:
        main()
