"""Run every benchmark, write its JSON to benchmarks/results/, then redraw the plots in docs/img/.

    python benchmarks/run_all.py [--quick] [--only compile_latency,codegen_report]

Works on a fresh Linux machine after the README's install plus ``pip install -e '.[bench]'``. Without the
``bench`` extra the scripts that compare with upstream Triton report only Enceladus's numbers and print why;
a script that fails does not stop the others. The summary (and benchmarks/results/run_all.json) lists
each script's status, its wall time and, when it did not complete, the reason.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from machine import describe, one_line  # noqa: E402

# script, extra arguments for --quick, what it needs beyond the base install (checked before running)
BENCHMARKS: list[tuple[str, list[str], list[str]]] = [
    ("compile_latency", ["--repeat", "10", "--triton-repeat", "2"], []),
    ("codegen_report", [], []),
    ("launch_latency", ["--iters", "500"], ["cxx"]),
    ("fresh_process", ["--runs", "3"], ["cxx"]),
    ("cpu_backend", [], ["cxx"]),
    ("cpu_vs_interpreter", ["--rounds", "2", "--launches", "4"], ["cxx"]),
    ("interpreter", [], []),
]


def missing_requirements(needs: list[str]) -> str | None:
    """Why a benchmark cannot run here, or None."""
    if "cxx" in needs:
        try:
            from enceladus.backends.cpu import find_compiler

            find_compiler()
        except Exception as e:  # noqa: BLE001
            return f"no C++ compiler for the cpu backend ({e}); apt-get install -y clang"
    return None


def optional_status() -> dict[str, str]:
    """Which optional packages are importable, for the summary."""
    out = {}
    for pkg in ("triton", "torch", "matplotlib"):
        out[pkg] = "installed" if importlib.util.find_spec(pkg) else "missing (pip install -e '.[bench]')"
    return out


def run(name: str, args: list[str], timeout: float, env_extra: dict[str, str]) -> dict[str, object]:
    import os

    script = HERE / f"{name}.py"
    if not script.exists():
        return {"benchmark": name, "status": "skipped", "reason": f"{script.name} does not exist", "seconds": 0.0}
    t0 = time.perf_counter()
    try:
        res = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=timeout,
                             env={**os.environ, **env_extra})
    except subprocess.TimeoutExpired:
        return {"benchmark": name, "status": "failed", "reason": f"took longer than {timeout:.0f} s",
                "seconds": time.perf_counter() - t0}
    dt = time.perf_counter() - t0
    print(res.stdout, end="")
    if res.returncode != 0:
        err = res.stderr.strip().splitlines()
        print(res.stderr, end="", file=sys.stderr)
        return {"benchmark": name, "status": "failed", "seconds": dt,
                "reason": err[-1] if err else f"exit status {res.returncode}"}
    return {"benchmark": name, "status": "ok", "seconds": dt}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run, noisier numbers)")
    ap.add_argument("--only", default="", help="comma-separated benchmark names")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per benchmark")
    ap.add_argument("--no-plots", action="store_true", help="do not redraw docs/img/*.png")
    opts = ap.parse_args()
    only = {s.strip() for s in opts.only.split(",") if s.strip()}
    machine = describe()
    print(f"machine: {one_line(machine)}")
    for pkg, state in optional_status().items():
        print(f"  {pkg}: {state}")
    summary = []
    for name, quick_args, needs in BENCHMARKS:
        if only and name not in only:
            continue
        print(f"\n=== {name} ===", flush=True)
        why = missing_requirements(needs)
        if why:
            print(f"skipped: {why}")
            summary.append({"benchmark": name, "status": "skipped", "reason": why, "seconds": 0.0})
            continue
        env = {"BENCH_REPEATS": "1"} if opts.quick and name == "interpreter" else {}
        summary.append(run(name, quick_args if opts.quick else [], opts.timeout, env))
    if not opts.no_plots:
        print("\n=== plots ===")
        if importlib.util.find_spec("matplotlib") is None:
            print("skipped: matplotlib is not installed (pip install -e '.[bench]')")
        else:
            summary.append(run("plots", [], opts.timeout, {}))
    print("\nsummary:")
    for s in summary:
        extra = f"  ({s['reason']})" if s.get("reason") else ""
        print(f"  {s['benchmark']:<16} {s['status']:<8} {s['seconds']:7.1f} s{extra}")
    out = HERE / "results" / "run_all.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": machine, "quick": opts.quick, "summary": summary}, indent=2) + "\n")
    print(f"wrote {out.relative_to(HERE.parent)}")
    sys.exit(1 if any(s["status"] == "failed" for s in summary) else 0)


if __name__ == "__main__":
    main()
