"""Time from a new Python process to a cached kernel ready and launched.

    .venv/bin/python benchmarks/fresh_process.py [--runs 15]
    .venv/bin/python benchmarks/fresh_process.py --imports   # each module the cached path imports, -X importtime

A child script defines a vector-add kernel and launches it once. The first child compiles it (and
the cpu backend builds its library); every later child finds both in the disk cache. Each child
reports, with ``time.perf_counter``:

- ``imports``: ``import numpy`` + ``import enceladus``;
- ``load``: the first ``warmup`` call: memory miss, disk-cache key, read, checksum, JSON -> CompiledKernel
  (including the first import of the cache and serialization modules);
- ``backend``: creating the backend (on ``cpu``: importing it and finding the C++ compiler, whose
  ``CXX --version`` answer is cached in the cache directory after the first process);
- ``first launch``: loading the cached shared libraries (runtime and kernel) and running the kernel;
- ``after imports``: load + backend + first launch (the claim: a few ms);
- ``with imports``: imports + after imports;
- ``process``: the whole child process as the parent sees it (interpreter start included).

Two more configurations, each in its own column:

- ``MSL not cached``: the kernel entries are deleted before each child (``<cache>/kernels``), so every
  process compiles the kernel to MSL again, while the cpu backend still finds its runtime and the kernel's
  library in its build cache (``<cache>/cpu``);
- ``ENCELADUS_CACHE=0``: nothing is cached at all. The kernel is compiled to MSL, and the cpu backend builds
  its runtime library and the kernel's library with the C++ compiler into a private temporary directory,
  in every process (seconds: ``ENCELADUS_CACHE=0`` writes nothing to the user's cache, see
  docs/cache_and_autotune.md).

Writes benchmarks/results/fresh_process.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = textwrap.dedent('''
    import time
    t0 = time.perf_counter()
    import numpy as np
    import enceladus
    import enceladus.language as tl
    t1 = time.perf_counter()

    @enceladus.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

    x = np.ones(4096, np.float32); y = np.ones_like(x); out = np.empty_like(x)
    t2 = time.perf_counter()
    kernel = add_kernel.warmup(x, y, out, x.size, BLOCK=1024)
    t3 = time.perf_counter()
    from enceladus.runtime.backend import get_backend
    get_backend()
    t4 = time.perf_counter()
    add_kernel[(4,)](x, y, out, x.size, BLOCK=1024)
    t5 = time.perf_counter()
    assert (out == 2).all()
    from enceladus.runtime import cache
    print("RESULT " + __import__("json").dumps({
        "imports": t1 - t0, "load": t3 - t2, "backend": t4 - t3, "first launch": t5 - t4,
        "after imports": t5 - t1, "with imports": t5 - t0,
        "compiled": cache.stats.compiled, "disk_hits": cache.stats.disk_hits}))
''')

COLUMNS = ("imports", "load", "backend", "first launch", "after imports", "with imports", "process")


def run_child(script: Path, env: dict[str, str]) -> dict[str, float]:
    start = time.perf_counter()
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=300)
    elapsed = time.perf_counter() - start
    if res.returncode != 0:
        raise SystemExit(f"child failed:\n{res.stderr}")
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("RESULT "))
    out = json.loads(line[7:])
    out["process"] = elapsed
    return out


def summarize(samples: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    return {c: {"median_ms": 1e3 * statistics.median(s[c] for s in samples),
                "min_ms": 1e3 * min(s[c] for s in samples)} for c in COLUMNS}


def _load_average() -> list[float] | None:
    """The 1/5/15-minute load averages (how busy the machine was), where the system says."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def _child_env(tmp: Path) -> dict[str, str]:
    """The children's environment: a new kernel cache in ``tmp``, bytecode cached there too (as in any installed
    package), the cache enabled."""
    env = {**os.environ, "ENCELADUS_CACHE_DIR": str(tmp / "cache"), "PYTHONPYCACHEPREFIX": str(tmp / "pyc")}
    for var in ("ENCELADUS_CACHE", "PYTHONDONTWRITEBYTECODE"):
        env.pop(var, None)
    return env


def imports_breakdown(runs: int, out: Path) -> None:
    """Run the child (cached) under ``python -X importtime`` and report each module imported after ``import
    enceladus``: its own import time (``self``, without the modules it imports), median and fastest over ``runs``
    processes. The importtime hooks add their own cost, so the figures are upper bounds."""
    child = CHILD.replace('print("RESULT " + __import__("json").dumps({', 'print("RESULT", repr({')
    per_module: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="enceladus-fresh-imports-") as tmp:
        script = Path(tmp) / "child.py"
        script.write_text(child)
        env = _child_env(Path(tmp))
        for i in range(runs + 1):  # the first process compiles and fills the cache
            res = subprocess.run([sys.executable, "-X", "importtime", str(script)], capture_output=True, text=True,
                                 env=env, cwd=ROOT, timeout=300)
            if res.returncode != 0:
                raise SystemExit(f"child failed:\n{res.stderr}")
            if i == 0:
                continue
            lines = [ln for ln in res.stderr.splitlines() if ln.startswith("import time:") and "|" in ln]
            names = [ln.rsplit("|", 1)[1].strip() for ln in lines]
            start = max(i for i, name in enumerate(names) if name == "enceladus") + 1  # after `import enceladus`
            for ln, name in zip(lines[start:], names[start:]):
                per_module.setdefault(name, []).append(float(ln.split("|")[0].split(":")[1]))
    rows = {name: {"median_us": statistics.median(v), "min_us": min(v), "processes": len(v)}
            for name, v in per_module.items()}
    print(f"modules imported after `import enceladus` by a cached launch (self time, us; {runs} processes)")
    for name, r in sorted(rows.items(), key=lambda kv: -kv[1]["median_us"]):
        print(f"  {name:<40} {r['median_us']:8.0f} (min {r['min_us']:6.0f})  in {r['processes']} of {runs}")
    total = sum(r["median_us"] for r in rows.values() if r["processes"] == runs)
    print(f"  {'sum of medians (in every process)':<40} {total:8.0f}")
    out.write_text(json.dumps({"benchmark": "fresh_process_imports", "date": time.strftime("%Y-%m-%d %H:%M UTC",
                                                                                              time.gmtime()),
                               "machine": {"platform": platform.platform(), "python": platform.python_version(),
                                           "cpus": os.cpu_count(), "load_average": _load_average()},
                               "runs": runs, "modules": rows}, indent=2) + "\n")
    print(f"wrote {out}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=15, help="fresh processes per configuration (default 15)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "fresh_process.json"))
    ap.add_argument("--baseline", metavar="JSON", help="a result file of an earlier version, kept in the output "
                    "under 'baseline' (with --baseline-note saying what it was)")
    ap.add_argument("--baseline-note", default="", help="what the baseline measured (version, commit)")
    ap.add_argument("--against", metavar="REV", help="A/B mode: interleave this tree with commit REV (benchmarks/ab.py)")
    ap.add_argument("--rounds", type=int, default=6, help="A/B mode: interleaved rounds per tree")
    ap.add_argument("--imports", action="store_true", help="instead: the modules the cached path imports after "
                    "`import enceladus`, each one's own import time (python -X importtime) in --runs processes; "
                    "writes benchmarks/results/fresh_process_imports.json")
    args = ap.parse_args()
    if args.imports:
        imports_breakdown(args.runs, ROOT / "benchmarks" / "results" / "fresh_process_imports.json")
        return
    if args.against:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import ab

        ab.main(["--against", args.against, "--rounds", str(args.rounds)], kind="fresh")
        return
    load_before = _load_average()
    with tempfile.TemporaryDirectory(prefix="enceladus-fresh-") as tmp:
        script = Path(tmp) / "child.py"
        script.write_text(CHILD)
        env = _child_env(Path(tmp))
        first = run_child(script, env)  # compiles and fills the cache
        assert first["compiled"] == 1, first
        cached = [run_child(script, env) for _ in range(args.runs)]
        assert all(s["compiled"] == 0 and s["disk_hits"] == 1 for s in cached), "a cached run compiled"
        msl_uncached = []
        for _ in range(args.runs):
            shutil.rmtree(Path(tmp) / "cache" / "kernels")  # the cpu backend's libraries stay in <cache>/cpu
            msl_uncached.append(run_child(script, env))
        assert all(s["compiled"] == 1 for s in msl_uncached), "a run found the kernel whose entry was deleted"
        uncached = [run_child(script, {**env, "ENCELADUS_CACHE": "0"}) for _ in range(args.runs)]
    results = {"cached kernel": summarize(cached), "MSL not cached": summarize(msl_uncached),
               "ENCELADUS_CACHE=0": summarize(uncached)}
    width = max(len(c) for c in COLUMNS)
    print(f"fresh process -> vector add ready and launched; median (min) ms over {args.runs} processes")
    print(f"{'':<{width}}" + "".join(f"  {name:>18}" for name in results))
    for c in COLUMNS:
        cells = [f"{r[c]['median_ms']:8.1f} ({r[c]['min_ms']:6.1f})" for r in results.values()]
        print(f"{c:<{width}}" + "".join(f"  {cell:>18}" for cell in cells))
    record = {
        "benchmark": "fresh_process",
        "what": "new Python process -> cached vector-add kernel ready and launched (cpu backend unless on macOS); "
                "'MSL not cached': kernel entries deleted before each process, the cpu backend's libraries cached; "
                "'ENCELADUS_CACHE=0': nothing cached, the cpu runtime and kernel libraries built in every process",
        "bytecode": "cached (PYTHONDONTWRITEBYTECODE unset, PYTHONPYCACHEPREFIX in a temporary directory)",
        "runs": args.runs,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count(),
                    "load_average_at_start": load_before, "load_average_at_end": _load_average()},
        "first_process_compiles_ms": {k: 1e3 * v for k, v in first.items() if k in COLUMNS},
        "results": results,
    }
    if args.baseline:
        before = json.loads(Path(args.baseline).read_text())
        record["baseline"] = {"note": args.baseline_note, "results": before["results"]}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
