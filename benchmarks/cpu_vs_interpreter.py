"""The `cpu` backend against the interpreter on the `tl.dot` cases, one thread each, in alternating fresh processes.

Run: ``python benchmarks/cpu_vs_interpreter.py [--rounds 4] [--launches 12] [--cases tutorial,03,04]
[--baseline DIR]``. Prints one table and writes benchmarks/results/cpu_vs_interpreter.json.

Each round runs, per case, one process in the interpreter and one on the `cpu` backend (default checks on), one
after the other, each with ``OPENBLAS_NUM_THREADS=1`` (the interpreter's NumPy would otherwise count OpenBLAS
threads waiting busily in its CPU time) and ``ENCELADUS_CPU_THREADS=1``. A process launches its case once (build
or trace, checked against NumPy), then ``--launches`` times, and reports its best process CPU time per launch.
The figure per side is the best over the rounds (the quietest moment of a shared machine for both sides alike);
the ratio is cpu / interpreter (the goal of issue #25: at most 2). The cases are those of cpu_backend.py.
``--baseline DIR`` adds a third process per case and round: the `cpu` backend of another checkout's ``src``
directory (e.g. a worktree of the commit before a change, DIR = that worktree's ``src``), put first on
``PYTHONPATH``, with its own cache directory; the table then shows cpu / baseline too.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def worker(path: str, case: str, launches: int) -> None:
    if path == "interpreter":
        os.environ["ENCELADUS_INTERPRET"] = "1"
    sys.argv = [sys.argv[0], "--worker"]  # cpu_backend.py: a worker leaves the backend choice to the environment
    sys.path.insert(0, str(HERE))
    import cpu_backend

    all_cases = cpu_backend.cases()
    name = next(k for k in all_cases if k.startswith(case))
    launch, _, error, _ = all_cases[name]
    err = error(launch())
    best = float("inf")
    for _ in range(launches):
        c0 = time.process_time()
        launch()
        best = min(best, time.process_time() - c0)
    print(json.dumps({"case": name, "cpu_seconds": best, "max_error": err}))


def run_one(path: str, case: str, launches: int, baseline: str | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("ENCELADUS_INTERPRET", "ENCELADUS_DEBUG")}
    env.update(OPENBLAS_NUM_THREADS="1", ENCELADUS_CPU_THREADS="1")
    if path in ("cpu", "baseline"):
        env["ENCELADUS_BACKEND"] = "cpu"
    if path == "baseline":
        assert baseline is not None
        env["PYTHONPATH"] = os.pathsep.join([baseline, *filter(None, [env.get("PYTHONPATH")])])
        # its own cache: the same MSL built with the baseline's headers must not replace this tree's libraries
        base_cache = Path(env.get("ENCELADUS_CACHE_DIR") or Path.home() / ".cache" / "enceladus")
        env["ENCELADUS_CACHE_DIR"] = str(base_cache.parent / (base_cache.name + "-baseline"))
    worker_path = "cpu" if path == "baseline" else path
    res = subprocess.run([sys.executable, __file__, "--worker", worker_path, case, str(launches)], capture_output=True,
                         text=True, env=env, timeout=1800)
    if res.returncode != 0:
        raise SystemExit(f"{path} worker for {case!r} failed:\n{res.stderr.strip()[-2000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--launches", type=int, default=12, help="timed launches per process (best is kept)")
    parser.add_argument("--cases", default="tutorial,03,04", help="comma-separated prefixes of cpu_backend.py cases")
    parser.add_argument("--out", default=str(HERE / "results" / "cpu_vs_interpreter.json"))
    parser.add_argument("--baseline", help="another checkout's src directory: its cpu backend as a third column")
    args = parser.parse_args()
    if args.baseline and not (Path(args.baseline) / "enceladus" / "__init__.py").is_file():
        parser.error(f"--baseline {args.baseline!r}: expected a source directory holding enceladus/__init__.py")
    paths = ("interpreter", "cpu", "baseline") if args.baseline else ("interpreter", "cpu")

    cases = [c for c in args.cases.split(",") if c]
    runs: dict[str, dict[str, list[float]]] = {}
    names: dict[str, str] = {}
    for _ in range(args.rounds):
        for case in cases:
            for path in paths:
                r = run_one(path, case, args.launches, args.baseline)
                names[case] = r["case"]
                runs.setdefault(case, {}).setdefault(path, []).append(r["cpu_seconds"])
    rows = []
    print(f"one thread each, OPENBLAS_NUM_THREADS=1, {args.rounds} alternating rounds, best process CPU ms per launch")
    base_head = f" {'baseline':>8} {'cpu/base':>8}" if args.baseline else ""
    print(f"{'case':40} {'interp':>8} {'cpu':>8} {'cpu/interp':>10}{base_head}   rounds (" + " | ".join(paths) + ")")
    for case in cases:
        t = runs[case]
        i, c = min(t["interpreter"]), min(t["cpu"])
        row = {"case": names[case], "interpreter_cpu_s": i, "cpu_cpu_s": c, "ratio": c / i,
               "rounds_interpreter_s": t["interpreter"], "rounds_cpu_s": t["cpu"]}
        line = f"{names[case][:40]:40} {i * 1e3:8.2f} {c * 1e3:8.2f} {c / i:9.2f}x"
        if args.baseline:
            b = min(t["baseline"])
            row.update(baseline_cpu_s=b, ratio_to_baseline=c / b, rounds_baseline_s=t["baseline"])
            line += f" {b * 1e3:8.2f} {c / b:7.2f}x"
        rows.append(row)
        spread = " | ".join(" ".join(f"{x * 1e3:.1f}" for x in t[p]) for p in paths)
        print(f"{line}   {spread}")
    result = {"machine": platform.machine(), "cpu_count": os.cpu_count(), "load_average": os.getloadavg(),
              "rounds": args.rounds, "launches": args.launches, "threads": 1, "openblas_threads": 1,
              "checks": "default (on)", "baseline": args.baseline, "cases": rows}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        main()
