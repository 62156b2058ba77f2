"""Enceladus's NumPy interpreter vs upstream Triton's interpreter (``TRITON_INTERPRET=1``), side by side.

    python benchmarks/interpreter.py            # table on stdout, JSON in benchmarks/results/interpreter.json

The same kernel source runs under both: this file defines the kernels once over ``jit`` and ``tl``,
which are Enceladus's (in this process) or Triton's (in a worker subprocess started with
``TRITON_INTERPRET=1``, which needs ``triton`` and a CPU ``torch``: ``pip install 'enceladus[bench]'``).
When Triton cannot run, the table says why and only Enceladus's times are reported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

WORKER = len(sys.argv) > 2 and sys.argv[1] == "--worker"

if WORKER and sys.argv[2] == "triton":
    import torch
    import triton as jitlib
    import triton.language as tl

    jit = jitlib.jit
else:
    import enceladus
    import enceladus.language as tl

    def jit(fn: Callable[..., Any]) -> Any:
        return enceladus.jit(fn, interpret=True)


@jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * out_stride + cols, num / tl.sum(num, axis=0), mask=mask)


@jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
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
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc)


# --- the three problems, as (launch, reference check) over arrays ----------------------------------------

def problems(wrap: Callable[[np.ndarray], Any]) -> dict[str, tuple[Callable[[], None], Callable[[], float]]]:
    """Each benchmark: a launch closure and a function returning its max error vs NumPy."""
    rng = np.random.default_rng(0)
    n = 1 << 20
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    X, Y, OUT = wrap(x), wrap(y), wrap(out)

    rows, cols = 4096, 1024
    s_in = rng.standard_normal((rows, cols), dtype=np.float32)
    s_out = np.zeros_like(s_in)
    S_IN, S_OUT = wrap(s_in), wrap(s_out)

    m = 256
    a, b = rng.standard_normal((m, m), dtype=np.float32), rng.standard_normal((m, m), dtype=np.float32)
    c = np.zeros((m, m), np.float32)
    A, B, C = wrap(a), wrap(b), wrap(c)

    def softmax_ref() -> np.ndarray:
        e = np.exp(s_in - s_in.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    return {
        "vector add (1M fp32)": (
            lambda: add_kernel[(n // 1024,)](X, Y, OUT, n, BLOCK=1024),
            lambda: float(np.abs(np.asarray(out) - (x + y)).max())),
        "row softmax (4096x1024 fp32)": (
            lambda: softmax_kernel[(rows,)](S_OUT, S_IN, cols, cols, cols, BLOCK=1024),
            lambda: float(np.abs(s_out - softmax_ref()).max())),
        "matmul (256^3 fp32)": (
            lambda: matmul_kernel[(m // 64, m // 64)](A, B, C, m, m, m, m, 1, m, 1, m, 1, BM=64, BN=64, BK=32),
            lambda: float(np.abs(c - a @ b).max())),
    }


def measure(repeats: int, wrap: Callable[[np.ndarray], Any]) -> dict[str, dict[str, float]]:
    results = {}
    for name, (launch, error) in problems(wrap).items():
        launch()  # warm-up (and the run whose result is checked)
        err = error()
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            launch()
            times.append(time.perf_counter() - t0)
        results[name] = {"seconds": min(times), "max_error": err}
    return results


def run_triton(repeats: int) -> tuple[dict[str, dict[str, float]] | None, str]:
    """Triton's timings from a worker subprocess, or None and the reason it could not run."""
    import importlib.util

    missing = [m for m in ("triton", "torch") if importlib.util.find_spec(m) is None]
    if missing:
        return None, (f"{' and '.join(missing)} not installed; install the bench extra "
                      "(pip install 'enceladus[bench]') to compare with Triton's interpreter")
    env = dict(os.environ, TRITON_INTERPRET="1")
    cmd = [sys.executable, __file__, "--worker", "triton", str(repeats)]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    except subprocess.TimeoutExpired:
        return None, "Triton's interpreter took longer than 30 minutes"
    if res.returncode != 0:
        last = res.stderr.strip().splitlines()[-1] if res.stderr.strip() else f"exit status {res.returncode}"
        return None, f"Triton's interpreter failed: {last}"
    return json.loads(res.stdout.strip().splitlines()[-1]), ""


def main() -> None:
    repeats = int(os.environ.get("BENCH_REPEATS", "3"))
    if WORKER:
        results = measure(repeats if len(sys.argv) < 4 else int(sys.argv[3]),
                          lambda arr: torch.from_numpy(arr))
        print(json.dumps(results))
        return
    ours = measure(repeats, lambda arr: arr)
    theirs, why = run_triton(max(1, repeats - 2))
    rows = []
    print(f"{'kernel':32} {'enceladus interp':>17} {'triton interp':>14} {'speed-up':>9}  max error (ours)")
    for name, r in ours.items():
        t = theirs[name]["seconds"] if theirs else None
        ratio = t / r["seconds"] if t else None
        rows.append({"kernel": name, "enceladus_s": r["seconds"], "triton_s": t, "speedup": ratio,
                     "max_error": r["max_error"],
                     "triton_max_error": theirs[name]["max_error"] if theirs else None})
        t_text = f"{t * 1e3:11.1f} ms" if t else f"{'n/a':>14}"
        ratio_text = f"{ratio:8.1f}x" if ratio else f"{'n/a':>9}"
        print(f"{name:32} {r['seconds'] * 1e3:14.1f} ms {t_text} {ratio_text}  {r['max_error']:.1e}")
    if why:
        print(f"Triton's interpreter was not measured: {why}")
    out = Path(__file__).resolve().parent / "results" / "interpreter.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    versions = {"numpy": np.__version__, "python": sys.version.split()[0]}
    try:
        import triton

        versions["triton"] = triton.__version__
    except ImportError:
        pass
    out.write_text(json.dumps({"results": rows, "triton_skipped_reason": why or None, "versions": versions,
                               "repeats": repeats, "timing": "best wall-clock time of the repeats, after a warm-up"},
                              indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
