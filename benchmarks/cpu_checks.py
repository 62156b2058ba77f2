"""Cost of the cpu backend's default access checks on the examples, and the latency of Ctrl-C.

Run: ``python benchmarks/cpu_checks.py [ROUNDS]``. Each example kernel is timed (median of repeated launches
after a warm-up) in a child process with checks on (the default) and one with ``ENCELADUS_CHECKS=0``, the two
alternating for ROUNDS rounds (default 3; the median over the rounds is reported), both in wall
time and in CPU time of the process (all its threads: the work the launch did, which other jobs on a shared
machine barely disturb; the ratio of CPU times is the cost of the checks); then a
spinning kernel is interrupted with SIGINT several times and the time from the signal to the
KeyboardInterrupt is measured. Prints a table and writes benchmarks/results/cpu_checks.json.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import importlib.util, json, sys, time
import numpy as np
import enceladus

def example(name):
    spec = importlib.util.spec_from_file_location(name, f"{sys.argv[1]}/examples/{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod

def median_ms(fn, reps=15):
    # [median wall ms, median CPU ms (process_time: every thread of this process)]
    fn()
    wall, cpu = [], []
    for _ in range(reps):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append((time.perf_counter() - t0) * 1e3); cpu.append((time.process_time() - c0) * 1e3)
    return [sorted(wall)[len(wall) // 2], sorted(cpu)[len(cpu) // 2]]

rng = np.random.default_rng(0)
out = {}
import contextlib, io
with contextlib.redirect_stdout(io.StringIO()):
    add = example("01_vector_add")
x = rng.standard_normal(1 << 20, dtype=np.float32); y = np.ones_like(x); o = np.empty_like(x)
out["vector_add 1M fp32"] = median_ms(lambda: add.add_kernel[(x.size // 1024,)](x, y, o, x.size, BLOCK=1024),
                                      reps=101)
sm = example("02_softmax")
a = rng.standard_normal((1024, 781)).astype(np.float32)
out["softmax 1024x781"] = median_ms(lambda: sm.softmax(a))
mm = example("03_matmul")
p = rng.standard_normal((256, 256)).astype(np.float32); q = rng.standard_normal((256, 256)).astype(np.float32)
out["matmul 256^3 fp32"] = median_ms(lambda: mm.matmul(p, q), reps=5)
fa = example("04_flash_attention")
qq = rng.standard_normal((2, 256, 64)).astype(np.float16)
out["flash attention 2x256x64"] = median_ms(lambda: fa.attention(qq, qq, qq, True, 0.125), reps=5)
ln = example("05_layer_norm")
xx = rng.standard_normal((256, 1151)).astype(np.float32); w = np.ones(1151, np.float32); b = np.zeros(1151, np.float32)
out["layer norm 256x1151"] = median_ms(lambda: ln.layer_norm(xx, w, b))
print(json.dumps(out))
"""

INTERRUPT = r"""
import json, os, signal, threading, time
import numpy as np
import enceladus
lib = enceladus.compile_shader('''
#include <metal_stdlib>
using namespace metal;
kernel void spin(device atomic_int* flag [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    while (atomic_load_explicit(flag, memory_order_relaxed) == 0) {}
}
''')
flag = np.zeros(1, np.int32)
lat = []
for _ in range(10):
    sent = []
    def fire():
        sent.append(time.perf_counter()); os.kill(os.getpid(), signal.SIGINT)
    threading.Timer(0.1, fire).start()
    try:
        lib.spin(flag, threads=(64,))
    except KeyboardInterrupt:
        lat.append((time.perf_counter() - sent[0]) * 1e3)
print(json.dumps(lat))
"""


def _run(code: str, env: dict[str, str]) -> str:
    res = subprocess.run([sys.executable, "-c", code, str(ROOT)], capture_output=True, text=True, env=env,
                         timeout=900, check=True)
    return res.stdout.strip().splitlines()[-1]


def _median_of_rounds(results: list[dict[str, list[float]]]) -> dict[str, list[float]]:
    """Per example, the median over the rounds of [wall ms, CPU ms]."""
    return {name: [sorted(r[name][k] for r in results)[len(results) // 2] for k in (0, 1)] for name in results[0]}


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    base = dict(os.environ)
    runs: dict[str, list[dict[str, list[float]]]] = {"1": [], "0": []}
    for _ in range(rounds):  # the two modes alternate, so that a change in the machine's load hits both
        for mode in ("1", "0"):
            runs[mode].append(json.loads(_run(CHILD, {**base, "ENCELADUS_CHECKS": mode})))
    checked, plain = _median_of_rounds(runs["1"]), _median_of_rounds(runs["0"])
    latencies = sorted(json.loads(_run(INTERRUPT, base)))
    rows = []
    print(f"{'example':28s} {'CPU ms checked':>15s} {'unchecked':>10s} {'ratio':>6s}   "
          f"{'wall ms checked':>16s} {'unchecked':>10s} {'ratio':>6s}")
    for name, (wall, cpu) in checked.items():
        pwall, pcpu = plain[name]
        rows.append({"example": name, "checked_cpu_ms": round(cpu, 3), "unchecked_cpu_ms": round(pcpu, 3),
                     "cpu_ratio": round(cpu / pcpu, 3), "checked_ms": round(wall, 3),
                     "unchecked_ms": round(pwall, 3), "ratio": round(wall / pwall, 3)})
        print(f"{name:28s} {cpu:15.2f} {pcpu:10.2f} {cpu / pcpu:6.2f}   {wall:16.2f} {pwall:10.2f} "
              f"{wall / pwall:6.2f}")
    median = latencies[len(latencies) // 2]
    print(f"Ctrl-C latency of a spinning kernel: median {median:.2f} ms, max {latencies[-1]:.2f} ms "
          f"({len(latencies)} interrupts)")
    result = {"machine": platform.machine(), "cpus": os.cpu_count(), "rounds": rounds, "examples": rows,
              "interrupt_latency_ms": {"median": round(median, 3), "max": round(latencies[-1], 3),
                                       "samples": [round(v, 3) for v in latencies]}}
    out = ROOT / "benchmarks" / "results" / "cpu_checks.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
