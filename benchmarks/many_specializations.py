"""Stress: many kernel specializations in one process (the operating system's memory-map limit).

    .venv/bin/python benchmarks/many_specializations.py [--count 20000] [--jobs N]
    .venv/bin/python benchmarks/many_specializations.py --dlopen-only [--count 20000]

Every specialization of a kernel on the cpu backend is its own shared library, loaded with dlopen; each
loaded library takes memory mappings, and a Linux process may hold ``vm.max_map_count`` of them (65530 by
default). The default mode compiles ``--count`` specializations of a small kernel (one per value of a
constexpr; ``--jobs`` builds in parallel), launches every one, checks every result and reports the mappings
the process holds. Compiling 20,000 specializations takes hours on a small machine (~0.2 s of the C++
compiler each); ``--dlopen-only`` builds one library and loads ``--count`` copies of it (what the loader
sees of 20,000 specializations) in a few seconds.

Not part of CI. Prints a summary and writes benchmarks/results/many_specializations.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

import enceladus
import enceladus.language as tl


@enceladus.jit
def add_constant(x_ptr, out_ptr, C: tl.constexpr):
    offs = tl.arange(0, 16)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + C)


def mappings() -> int:
    with open("/proc/self/maps", "rb") as f:
        return sum(1 for _ in f)


def map_limit() -> int | None:
    try:
        with open("/proc/sys/vm/max_map_count") as f:
            return int(f.read())
    except OSError:
        return None


def run_kernels(count: int, jobs: int) -> dict:
    x = np.arange(16, dtype=np.float32)
    out = np.empty_like(x)
    before = mappings()
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=jobs) as pool:  # compile (and build the libraries) in parallel
        list(pool.map(lambda c: add_constant.warmup(x, out, C=c, grid=(1,)), range(count)))
    t_compile = time.perf_counter() - t0
    t0 = time.perf_counter()
    for c in range(count):  # launch every specialization (loads its library) and check it
        add_constant[(1,)](x, out, C=c)
        if not np.array_equal(out, x + c):
            raise AssertionError(f"specialization C={c}: wrong result {out[:4]}")
    t_launch = time.perf_counter() - t0
    after = mappings()
    return {"mode": "kernels", "count": count, "mappings_before": before, "mappings_after": after,
            "mappings_per_specialization": (after - before) / count, "compile_s": t_compile, "launch_s": t_launch}


def run_dlopen(count: int) -> dict:
    import ctypes

    from enceladus.runtime.backend import get_backend

    x = np.arange(16, dtype=np.float32)
    out = np.empty_like(x)
    add_constant[(1,)](x, out, C=1)
    library = get_backend().compile(add_constant.warmup(x, out, C=1, grid=(1,)).asm["msl"])
    before = mappings()
    handles = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="enceladus-stress-") as tmp:
        for i in range(count):
            copy = os.path.join(tmp, f"kernel-{i}.so")  # distinct files: the loader maps each one
            shutil.copyfile(library.path, copy)
            handles.append(ctypes.CDLL(copy))
        after = mappings()
    return {"mode": "dlopen-only", "count": count, "mappings_before": before, "mappings_after": after,
            "mappings_per_library": (after - before) / count, "seconds": time.perf_counter() - t0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=20000)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--dlopen-only", action="store_true", help="load COUNT copies of one kernel library")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "many_specializations.json"))
    args = ap.parse_args()
    result = run_dlopen(args.count) if args.dlopen_only else run_kernels(args.count, args.jobs)
    result["vm.max_map_count"] = map_limit()
    for k, v in result.items():
        print(f"{k:>28}: {v:.2f}" if isinstance(v, float) else f"{k:>28}: {v}")
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
