"""A/B host-latency measurements: this tree against an earlier commit, interleaved in one run.

    python benchmarks/ab.py compile --against 92d4d52 [--rounds 6]
    python benchmarks/ab.py launch  --against 92d4d52
    python benchmarks/ab.py fresh   --against 92d4d52
    python benchmarks/ab.py all     --against 92d4d52

(also reachable as ``--against REV`` of compile_latency.py, launch_latency.py and fresh_process.py).

The baseline's ``src/`` is exported with ``git archive REV src`` into a temporary folder. Each round runs one
worker process per tree, in the order A B then B A on the next round (so a slow drift of the machine falls on
both sides alike); a worker imports Enceladus from its tree only (``PYTHONPATH``; checked) and uses the public
API alone, so the same measurement runs on both versions. The figure per tree is the median over rounds of each
worker's own median; the ratio is baseline / current (above 1: the current tree is faster). On a shared, noisy
machine absolute figures move by tens of percent from one minute to the next; ratios taken this way do not.

Writes benchmarks/results/ab_<kind>.json.
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
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("compile", "launch", "fresh")
LAUNCH_ITERS = 2000


# ---- workers: run in a child process with PYTHONPATH=<tree>/src; print one RESULT line -----------------------

def _check_tree() -> None:
    import enceladus

    want = os.environ["ENCELADUS_AB_TREE"]
    got = str(Path(enceladus.__file__).resolve())
    if not got.startswith(str(Path(want).resolve())):
        raise SystemExit(f"worker imported enceladus from {got}, expected it from {want}")


def worker_compile(repeat: int) -> dict[str, float]:
    """Median ms of fresh Python -> MSL compiles per kernel (a new JITFunction each time: no cache): wall-clock
    (``ms``) and the compiling thread's own CPU time (``cpu ms``, ``time.thread_time``: on a shared machine the
    time the thread waits for a core is left out, so the figure moves far less with the load); and the Python
    bytecode instructions one such compile executes (``bytecodes``, ``_bytecodes``: within about 0.1% from round to round)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import compile_latency as cl

    import enceladus

    out = {}
    with tempfile.TemporaryDirectory(prefix="enceladus-ab-compile-") as tmp:
        modules = cl.write_modules(Path(tmp))
        for name, origin, fn_name, signature, constexprs, num_warps in cl.KERNELS:
            raw = getattr(cl.import_path(modules[origin][0]), fn_name).fn
            once = _compile_once(enceladus, raw, signature, constexprs, num_warps, cl.forget_memoised_work)
            once()
            runs = [once() for _ in range(repeat)]
            out[f"{name} ms"] = statistics.median(wall for wall, _ in runs) * 1e3
            out[f"{name} cpu ms"] = statistics.median(cpu for _, cpu in runs) * 1e3
            cl.forget_memoised_work()
            out[f"{name} bytecodes"] = _bytecodes(enceladus.compile, enceladus.jit(raw), signature=signature,
                                                  constexprs=constexprs, num_warps=num_warps)
    return out


def _bytecodes(fn: Any, *args: Any, **kwargs: Any) -> int:
    """How many Python bytecode instructions ``fn(*args, **kwargs)`` executes (``sys.settrace`` opcode events): a count of the
    compiler's Python work that does not move with the machine's load, unlike the times. Work inside C functions
    (``ast.parse``, string methods, NumPy) is not in it, so it is a proxy for the time, not a measure of it."""
    count = 0
    if sys.version_info >= (3, 12):  # settrace's opcode events no longer fire there: sys.monitoring's INSTRUCTION
        mon = sys.monitoring
        tool = next(t for t in range(6) if mon.get_tool(t) is None)

        def on_instruction(code: Any, offset: int) -> None:
            nonlocal count
            count += 1

        mon.use_tool_id(tool, "enceladus-ab")
        try:
            mon.register_callback(tool, mon.events.INSTRUCTION, on_instruction)
            mon.set_events(tool, mon.events.INSTRUCTION)
            fn(*args, **kwargs)
        finally:
            mon.set_events(tool, 0)
            mon.register_callback(tool, mon.events.INSTRUCTION, None)
            mon.free_tool_id(tool)
        return count

    def local(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "opcode":
            count += 1
        return local

    def call(frame: Any, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        return local

    sys.settrace(call)
    try:
        fn(*args, **kwargs)
    finally:
        sys.settrace(None)
    return count


def _compile_once(enceladus: Any, raw: Any, signature: dict, constexprs: dict, num_warps: int,
                  forget: Any = None) -> Any:
    def once() -> tuple[float, float]:
        kernel = enceladus.jit(raw)  # a new JITFunction: the source is parsed again, nothing is cached
        if forget is not None:
            forget()  # nor what an earlier compile of the process memoised (compile_latency.forget_memoised_work)
        c0, t0 = time.thread_time(), time.perf_counter()
        enceladus.compile(kernel, signature=signature, constexprs=constexprs, num_warps=num_warps)
        return time.perf_counter() - t0, time.thread_time() - c0
    return once


LAUNCH_KERNELS = textwrap.dedent('''
    import enceladus
    import enceladus.language as tl


    @enceladus.jit
    def k4(a, b, n, alpha, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        m = offs < n
        tl.store(b + offs, tl.load(a + offs, mask=m) * alpha, mask=m)


    @enceladus.jit
    def k16(a0, a1, a2, a3, a4, a5, a6, a7, out, n0, n1, n2, n3, n4, n5, alpha, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        m = offs < n0
        s = tl.load(a0 + offs, mask=m) + tl.load(a1 + offs, mask=m) + tl.load(a2 + offs, mask=m)
        s += tl.load(a3 + offs, mask=m) + tl.load(a4 + offs, mask=m) + tl.load(a5 + offs, mask=m)
        s += tl.load(a6 + offs, mask=m) + tl.load(a7 + offs, mask=m)
        tl.store(out + offs, s * alpha + (n1 + n2 + n3 + n4 + n5), mask=m)
''')


def worker_launch(iters: int) -> dict[str, float]:
    """Host µs per asynchronous launch of a cached kernel on Tensors, 4 and 16 arguments (best of 3 loops): the
    loop's wall-clock time per launch (``us``, which also holds the stream worker running each kernel and the GIL
    passing between the two threads) and the calling thread's own CPU time per launch (``calling thread us``,
    ``time.thread_time``: the host cost of the launch itself)."""
    import numpy as np

    import enceladus

    tmp = Path(tempfile.mkdtemp(prefix="enceladus-ab-launch-"))  # kept: kernels read their source lazily
    (tmp / "ab_launch_kernels.py").write_text(LAUNCH_KERNELS)
    sys.path.insert(0, str(tmp))
    import ab_launch_kernels as lk

    k4, k16 = lk.k4, lk.k16
    n = 64
    t = [enceladus.tensor(np.ones(n, np.float32)) for _ in range(9)]
    out = {}
    for name, kernel, args in (("4 args", k4, (t[0], t[1], n, 2.0)),
                               ("16 args", k16, (*t[:9], n, 3, 5, 7, 11, 13, 0.5))):
        launch = kernel[(1,)]
        launch(*args, BLOCK=64)
        enceladus.synchronize()
        best = best_cpu = float("inf")
        for _ in range(3):
            # the CPU-time window nests inside the wall-clock one (the clock reads and the arithmetic after them,
            # where a garbage collection can run, are outside both or only in the wall-clock one)
            t0 = time.perf_counter()
            c0 = time.thread_time()
            for _ in range(iters):
                launch(*args, BLOCK=64)
            c1 = time.thread_time()
            t1 = time.perf_counter()
            best, best_cpu = min(best, (t1 - t0) / iters), min(best_cpu, (c1 - c0) / iters)
            enceladus.synchronize()
        out[f"{name} us"] = best * 1e6
        out[f"{name} calling thread us"] = best_cpu * 1e6
    shutil.rmtree(tmp, ignore_errors=True)
    return out


FRESH_CHILD = textwrap.dedent('''
    import time
    t0 = time.perf_counter()
    import numpy as np
    c1, t1 = time.process_time(), time.perf_counter()
    import enceladus
    import enceladus.language as tl
    t2, c2 = time.perf_counter(), time.process_time()

    @enceladus.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

    x = np.ones(4096, np.float32); y = np.ones_like(x); out = np.empty_like(x)
    c3, t3 = time.process_time(), time.perf_counter()
    add_kernel[(4,)](x, y, out, x.size, BLOCK=1024)
    t4, c4 = time.perf_counter(), time.process_time()
    assert (out == 2).all()
    print("RESULT " + __import__("json").dumps({"import enceladus ms": (t2 - t1) * 1e3,
                                                  "import enceladus cpu ms": (c2 - c1) * 1e3,
                                                  "ready and launched after imports ms": (t4 - t3) * 1e3,
                                                  "ready and launched after imports cpu ms": (c4 - c3) * 1e3}))
''')


def worker_fresh(runs: int) -> dict[str, float]:
    """Fresh processes: import time and a cached kernel's first launch (the first process fills the cache):
    wall-clock, and the CPU time of the process over each (``cpu ms``, ``time.process_time``: every thread,
    without the time spent waiting for a core on a busy machine)."""
    with tempfile.TemporaryDirectory(prefix="enceladus-ab-fresh-") as tmp:
        script = Path(tmp) / "child.py"
        script.write_text(FRESH_CHILD)
        env = {**os.environ, "ENCELADUS_CACHE_DIR": str(Path(tmp) / "cache"),
               "PYTHONPYCACHEPREFIX": str(Path(tmp) / "pyc")}
        for var in ("ENCELADUS_CACHE", "PYTHONDONTWRITEBYTECODE", "ENCELADUS_DUMP"):
            env.pop(var, None)
        samples = [_child_result(script, env) for _ in range(runs + 1)][1:]  # the first one compiles
    return {k: statistics.median(s[k] for s in samples) for k in samples[0]}


def _child_result(script: Path, env: dict[str, str]) -> dict[str, float]:
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600)
    if res.returncode != 0:
        raise SystemExit(f"child failed:\n{res.stderr}")
    return json.loads(next(ln for ln in res.stdout.splitlines() if ln.startswith("RESULT "))[7:])


WORKERS = {"compile": lambda: worker_compile(15), "launch": lambda: worker_launch(LAUNCH_ITERS),
           "fresh": lambda: worker_fresh(8)}


# ---- driver -----------------------------------------------------------------------------------------------

def export_tree(rev: str, into: Path) -> tuple[Path, str]:
    """``src/`` of ``rev`` extracted under ``into``; returns the folder holding it and the full commit id."""
    sha = subprocess.run(["git", "rev-parse", "--verify", f"{rev}^{{commit}}"], cwd=ROOT, capture_output=True,
                         text=True)
    if sha.returncode != 0:
        raise SystemExit(f"--against {rev!r}: not a commit of this repository ({sha.stderr.strip()})")
    commit = sha.stdout.strip()
    tree = into / commit[:12]
    tree.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", "--format=tar", commit, "src"], cwd=ROOT, capture_output=True,
                             check=True)
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    return tree, commit


def run_worker(kind: str, tree: Path, cache: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree / "src"), "ENCELADUS_AB_TREE": str(tree / "src"),
           "ENCELADUS_CACHE_DIR": str(cache)}
    env.pop("ENCELADUS_DUMP", None)
    res = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", kind], capture_output=True,
                         text=True, env=env, cwd=ROOT, timeout=1800)
    if res.returncode != 0:
        raise SystemExit(f"{kind} worker on {tree} failed:\n{res.stdout}\n{res.stderr}")
    return json.loads(next(ln for ln in res.stdout.splitlines() if ln.startswith("RESULT "))[7:])


def compare(kind: str, rev: str, rounds: int) -> dict[str, Any]:
    """Interleaved rounds of the ``kind`` worker on this tree and on ``rev``; prints and returns the table."""
    with tempfile.TemporaryDirectory(prefix="enceladus-ab-") as tmp:
        base_tree, commit = export_tree(rev, Path(tmp) / "trees")
        trees = {"current": ROOT, "baseline": base_tree}
        caches = {label: Path(tmp) / f"cache-{label}" for label in trees}
        samples: dict[str, list[dict[str, float]]] = {label: [] for label in trees}
        for r in range(rounds):
            order = ("current", "baseline") if r % 2 == 0 else ("baseline", "current")
            for label in order:
                samples[label].append(run_worker(kind, trees[label], caches[label]))
            print(f"  round {r + 1}/{rounds} done", file=sys.stderr)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain", "src"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip())
    rows = {}
    for metric in samples["current"][0]:
        cur = statistics.median(s[metric] for s in samples["current"])
        base = statistics.median(s[metric] for s in samples["baseline"])
        rows[metric] = {"current": cur, "baseline": base, "speedup": base / cur if cur else None,
                        "current_rounds": [s[metric] for s in samples["current"]],
                        "baseline_rounds": [s[metric] for s in samples["baseline"]]}
    print(f"A/B {kind}: current tree ({head[:10]}{', with uncommitted changes' if dirty else ''}) vs {commit[:10]}, "
          f"{rounds} interleaved rounds, medians")
    print(f"{'':<40}{'current':>12}{'baseline':>12}{'speedup':>10}")
    for metric, row in rows.items():
        ratio = f"{row['speedup']:>9.2f}x" if row["speedup"] is not None else f"{'n/a':>10}"  # a count of 0
        print(f"{metric:<40}{row['current']:>12.3f}{row['baseline']:>12.3f}{ratio}")
    return {"benchmark": f"ab_{kind}", "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "current": head, "current_dirty": dirty, "baseline": commit, "rounds": rounds, "cpus": os.cpu_count(), "machine": {"platform": platform.platform(),
                                                                  "python": platform.python_version(),
                                                                  "load_average": _load_average()},
            "speedup": "baseline / current (above 1: current is faster)", "results": rows}


def _load_average() -> list[float] | None:
    """The 1/5/15-minute load averages when the run ended (how busy the machine was), where the system says."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def main(argv: list[str] | None = None, kind: str | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    if kind is None:
        ap.add_argument("kind", nargs="?", choices=(*KINDS, "all"))
    ap.add_argument("--against", metavar="REV", help="the earlier commit to compare with (e.g. 92d4d52)")
    ap.add_argument("--rounds", type=int, default=6, help="interleaved rounds per tree (default 6)")
    ap.add_argument("--worker", choices=KINDS, help=argparse.SUPPRESS)
    opts = ap.parse_args(argv)
    if opts.worker:
        _check_tree()
        print("RESULT " + json.dumps(WORKERS[opts.worker]()))
        return
    if kind is None and opts.kind is None:
        ap.error("say what to measure: one of compile, launch, fresh, all")
    if not opts.against:
        ap.error("--against REV is required (the commit to compare this tree with)")
    if opts.rounds < 1:
        ap.error("--rounds must be at least 1")
    for k in KINDS if (kind or opts.kind) == "all" else (kind or opts.kind,):
        record = compare(k, opts.against, opts.rounds)
        out = ROOT / "benchmarks" / "results" / f"ab_{k}.json"
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps(record, indent=2) + "\n")
        print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
