"""Run Triton's own language tests on Enceladus through the compatibility entry and report pass rates.

    python tools/triton_suite.py --triton-python ~/triton/python --sample 300            # seeded sample, both modes
    python tools/triton_suite.py --triton-python ~/triton/python --full --mode compiled  # every case
    python tools/triton_suite.py ... --baseline-python /path/to/venv-with-triton/bin/python
    python tools/triton_suite.py ... --full --jobs 16 --budget 36000 --json full.json     # sharded over 16 processes

``--triton-python`` is the ``python/`` directory of a Triton checkout (the tests are not part of Enceladus and are
never committed here). The interpreter-marked cases (``-m interpreter``, the set Triton runs on CPU) of
test_core.py, test_standard.py, test_random.py, test_tuple.py and test_tensor_descriptor.py run under
``pytest -p enceladus.triton`` (so ``triton._internal_testing.is_interpreter()`` is True) in each mode:
``compiled`` (the ``cpu`` backend, or ``metal`` on a Mac) and ``interpreted`` (``ENCELADUS_INTERPRET=1``).

With ``--baseline-python`` (a Python with upstream Triton installed) the same cases also run in Triton's own
interpreter (``TRITON_INTERPRET=1``), and the pass rate that counts is over the cases Triton passes.
Excluded by id, and counted separately: cases with float64 parameters (Apple GPUs have no fp64) and 64-bit
atomic read-modify-write cases (Metal has no 64-bit atomics). A case that crashes the process or runs past
``--case-timeout`` is recorded as such and the run continues after it.

The Python running the tests (``--python``, default this one) needs torch (CPU), scipy, numpy, pytest and
ml_dtypes (``enceladus[bfloat16]``: without it every bfloat16 torch tensor is refused, which would count as
failures); the run stops at once, naming what is missing, when one of them cannot be imported.
Results: a summary on stdout and, with ``--json``, every case's outcome and failure class.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

FILES = ("test_core.py", "test_standard.py", "test_random.py", "test_tuple.py", "test_tensor_descriptor.py")
SAMPLE_SEED = 17
DEFAULT_SAMPLE = 300
HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")

# --- exclusions, fixed by test id -------------------------------------------------------------------------------
_FP64 = re.compile(r"float64|fp64|\bf64\b|torch\.float64|\bdouble\b")
_ATOMIC_FN = re.compile(r"^test_(tensor_)?atomic")
_WIDE = re.compile(r"int64|uint64|float64|\bi64\b|\bu64\b")


def excluded(case_id: str) -> str | None:
    """'float64' or 'atomic64' for a case excluded by its id, else None."""
    func, _, params = case_id.split("::")[-1].partition("[")
    if _ATOMIC_FN.match(func) and _WIDE.search(params):
        return "atomic64"
    if _FP64.search(params):
        return "float64"
    return None


# --- the recorder: a pytest plugin loaded in the test process (-p triton_suite) ------------------------------------
def pytest_addoption(parser: object) -> None:
    parser.addoption("--suite-select", default=None)  # type: ignore[attr-defined]
    parser.addoption("--suite-record", default=None)  # type: ignore[attr-defined]
    parser.addoption("--suite-case-timeout", default="120")  # type: ignore[attr-defined]


def pytest_collection_modifyitems(session: object, config: object, items: list) -> None:
    path = config.getoption("--suite-select")  # type: ignore[attr-defined]
    if not path:
        return
    with open(path) as f:
        wanted = [line.strip() for line in f if line.strip()]
    order = {w: i for i, w in enumerate(wanted)}
    keep = [it for it in items if it.nodeid in order]
    keep.sort(key=lambda it: order[it.nodeid])
    config.hook.pytest_deselected(items=[it for it in items if it.nodeid not in order])  # type: ignore[attr-defined]
    items[:] = keep


def pytest_runtest_setup(item: object) -> None:
    import signal

    timeout = int(item.config.getoption("--suite-case-timeout"))  # type: ignore[attr-defined]

    def on_alarm(signum: int, frame: object) -> None:
        raise TimeoutError(f"case ran past {timeout} s")

    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(timeout)
    _record(item, "started", None)


def pytest_runtest_teardown(item: object) -> None:
    import signal

    signal.alarm(0)


def pytest_runtest_logreport(report: object) -> None:
    r = report
    if r.when == "call" or (r.when == "setup" and r.outcome != "passed"):  # type: ignore[attr-defined]
        outcome = r.outcome  # type: ignore[attr-defined]
        text = None
        if outcome == "failed":
            text = str(getattr(r, "longreprtext", ""))[-6000:]
        elif outcome == "skipped":
            text = str(r.longrepr[-1]) if isinstance(r.longrepr, tuple) else str(r.longrepr)  # type: ignore[attr-defined]
        _record(r, outcome, text)


_RECORD_FILE = None


def pytest_configure(config: object) -> None:
    global _RECORD_FILE
    path = config.getoption("--suite-record")  # type: ignore[attr-defined]
    if path:
        _RECORD_FILE = open(path, "a", buffering=1)  # noqa: SIM115 - one line per event, kept open for the run


def _record(item: object, outcome: str, text: str | None) -> None:
    if _RECORD_FILE is not None:
        _RECORD_FILE.write(json.dumps({"id": item.nodeid, "outcome": outcome, "text": text}) + "\n")  # type: ignore[attr-defined]
        _RECORD_FILE.flush()


# --- failure classes --------------------------------------------------------------------------------------------------
_CLASSES = [
    ("fp8 (not supported yet)", re.compile(r"float8|fp8", re.I)),
    ("missing tl name", re.compile(r"module 'enceladus\.language[\w.]*' has no attribute '(\w+)'")),
    ("missing triton name", re.compile(r"No module named 'triton[\w.]*'|module '(?:triton|enceladus\.triton)[\w.]*' has no attribute '(\w+)'")),
    ("timeout (hang?)", re.compile(r"TimeoutError: case ran past")),
    ("crash", re.compile(r"process crashed")),
    ("float64 data the test makes", re.compile(r"arrays of dtype float64 cannot be passed")),
    ("error message differs from Triton's", re.compile(r"Regex pattern did not match")),
    ("out of resources (threadgroup memory, threads)", re.compile(r"OutOfResources")),
    ("compile error", re.compile(r"CompilationError: (?:.*\n)*?.*error: ([^\n]+)")),
    ("interpreter error", re.compile(r"(InterpreterError|OutOfBoundsError)[:\n]\s*([^\n]*)")),
    ("expected an error, none raised", re.compile(r"DID NOT RAISE|Failed: DID NOT")),
    ("wrong values", re.compile(r"AssertionError|Mismatched elements|Not equal to tolerance|assert_close|are not close")),
    ("TypeError", re.compile(r"\bTypeError: ([^\n]+)")),
    ("ValueError", re.compile(r"\bValueError: ([^\n]+)")),
    ("NotImplementedError", re.compile(r"NotImplementedError: ([^\n]+)")),
    ("AttributeError", re.compile(r"AttributeError: ([^\n]+)")),
    ("LaunchError", re.compile(r"LaunchError: ([^\n]+)")),
]


def classify(text: str | None) -> tuple[str, str]:
    """(failure class, a short detail with numbers and quoted names normalized) of a failure's text."""
    text = text or ""
    error_lines = "\n".join(ln[1:].strip() for ln in text.splitlines() if ln.startswith("E "))
    text = error_lines or text  # pytest's error lines, not the source around them (which names fp8 etc.)
    for name, pat in _CLASSES:
        m = pat.search(text)
        if m:
            detail = next((g for g in m.groups() if g), "") if m.groups() else ""
            detail = re.sub(r"\d+", "N", detail)[:110]
            return name, detail
    last = [ln for ln in text.splitlines() if ln.startswith("E ")]
    return "other", re.sub(r"\d+", "N", last[-1][2:].strip())[:110] if last else ""


# --- running ------------------------------------------------------------------------------------------------------------
def _env(python: str, mode: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    env["PYTHONPATH"] = os.pathsep.join([HERE, SRC] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    if mode == "interpreted":
        env["ENCELADUS_INTERPRET"] = "1"
    elif mode == "compiled":
        env.pop("ENCELADUS_INTERPRET", None)
    elif mode == "triton":
        env["TRITON_INTERPRET"] = "1"
        env["PYTHONPATH"] = os.pathsep.join([HERE] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep)
                                                       if p and os.path.abspath(p) != SRC])
    return env


NEEDED = ("torch", "scipy", "numpy", "pytest", "ml_dtypes")


def check_python(python: str) -> None:
    """Stop with a clear message when ``python`` lacks a module the tests (or bfloat16 tensors) need."""
    probe = ("import importlib.util, sys; "
             f"print(' '.join(m for m in {NEEDED!r} if importlib.util.find_spec(m) is None))")
    try:
        out = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=300)
    except OSError as e:
        raise SystemExit(f"--python {python} does not run: {e}") from None
    if out.returncode != 0:
        raise SystemExit(f"--python {python} does not run: {out.stderr.strip()[-500:]}")
    missing = out.stdout.split()
    if missing:
        raise SystemExit(f"--python {python} lacks {', '.join(missing)}: install them into it "
                         f"(pip install {' '.join(missing)}; torch from https://download.pytorch.org/whl/cpu)")


def collect(python: str, pydir: str, mode: str) -> list[str]:
    """Every interpreter-marked case id of the five files."""
    args = [python, "-m", "pytest", "--collect-only", "-q", "-m", "interpreter", "--device", "cpu", "-p",
            "no:cacheprovider", "-W", "ignore", f"--rootdir={pydir}"]
    if mode != "triton":
        args += ["-p", "enceladus.triton"]
    args += [f"test/unit/language/{f}" for f in FILES]
    out = subprocess.run(args, cwd=pydir, env=_env(python, mode), capture_output=True, text=True, timeout=900)
    ids = [ln.strip() for ln in out.stdout.splitlines() if "::" in ln and not ln.startswith(" ")]
    if not ids:
        raise SystemExit(f"no test collected in {pydir}:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return ids


def run_cases(python: str, pydir: str, mode: str, ids: list[str], case_timeout: int, deadline: float,
              log: str) -> dict[str, dict]:
    """Run ``ids`` in ``mode``; a process that dies or hangs is restarted after the case it was running."""
    results: dict[str, dict] = {}
    remaining = list(ids)
    while remaining and time.time() < deadline:
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as sel:
            sel.write("\n".join(remaining))
        record = sel.name + ".jsonl"
        args = [python, "-m", "pytest", "-q", "-p", "triton_suite", "-p", "no:cacheprovider", "-W", "ignore",
                "-m", "interpreter", "--device", "cpu", f"--rootdir={pydir}", f"--suite-select={sel.name}",
                f"--suite-record={record}", f"--suite-case-timeout={case_timeout}"]
        if mode != "triton":
            args += ["-p", "enceladus.triton"]
        args += sorted({i.split("::")[0] for i in remaining})
        started = None
        try:
            with open(log, "a") as logf:
                proc = subprocess.run(args, cwd=pydir, env=_env(python, mode), stdout=logf, stderr=subprocess.STDOUT,
                                      timeout=max(10.0, deadline - time.time()))
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            rc = None
        if os.path.exists(record):
            with open(record) as f:
                for line in f:
                    ev = json.loads(line)
                    if ev["outcome"] == "started":
                        started = ev["id"]
                    else:
                        results[ev["id"]] = ev
                        started = None if started == ev["id"] else started
            os.unlink(record)
        os.unlink(sel.name)
        if started is not None and started not in results:  # the process died inside this case, or time ran out
            results[started] = ({"id": started, "outcome": "not run", "text": "the run's time budget ran out"}
                                if rc is None else
                                {"id": started, "outcome": "failed", "text": f"process crashed (exit status {rc})"})
        remaining = [i for i in remaining if i not in results]
        if rc is None or (started is None and remaining and rc in (0, 1, 5)):
            break  # out of time, or pytest finished without reaching the rest (not collected)
    for i in remaining:
        results.setdefault(i, {"id": i, "outcome": "not run", "text": None})
    return results


def run_sharded(python: str, pydir: str, mode: str, ids: list[str], case_timeout: int, deadline: float, log: str,
                jobs: int) -> dict[str, dict]:
    """``run_cases`` over ``jobs`` shards at once (case i in shard i % jobs), each a pytest process of its own with
    its own log (``log``.shardK); one shard's crash or hang restarts only that shard's process."""
    if jobs <= 1 or len(ids) <= 1:
        return run_cases(python, pydir, mode, ids, case_timeout, deadline, log)
    from concurrent.futures import ThreadPoolExecutor

    shards = [ids[k::jobs] for k in range(jobs) if ids[k::jobs]]
    with ThreadPoolExecutor(len(shards)) as pool:
        parts = pool.map(lambda ks: run_cases(python, pydir, mode, ks[1], case_timeout, deadline,
                                              f"{log}.shard{ks[0]}"), enumerate(shards))
        results: dict[str, dict] = {}
        for part in parts:
            results.update(part)
    return results


def summarize(mode: str, results: dict[str, dict], counted: list[str], baseline: dict[str, dict] | None) -> dict:
    """Pass rates per file, per test function and per failure class, over the counted cases."""
    if baseline is not None:
        counted = [i for i in counted if baseline.get(i, {}).get("outcome") == "passed"]
    ran = [i for i in counted if results[i]["outcome"] != "not run"]
    passed = [i for i in ran if results[i]["outcome"] == "passed"]
    skipped = [i for i in ran if results[i]["outcome"] == "skipped"]
    failed = [i for i in ran if results[i]["outcome"] == "failed"]
    print(f"\n=== {mode}: {len(passed)}/{len(ran)} passed ({100 * len(passed) / max(len(ran), 1):.1f}%), "
          f"{len(skipped)} skipped, {len(failed)} failed, {len(counted) - len(ran)} not run"
          + (" -- over the cases Triton's interpreter passes" if baseline is not None else ""))
    per_file: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    per_fn: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for i in ran:
        f = i.split("::")[0].split("/")[-1]
        fn = i.split("::")[-1].split("[")[0]
        ok = results[i]["outcome"] == "passed"
        per_file[f][0] += ok
        per_file[f][1] += 1
        per_fn[f"{f}::{fn}"][0] += ok
        per_fn[f"{f}::{fn}"][1] += 1
    print("per file:")
    for f, (p, n) in sorted(per_file.items()):
        print(f"  {f:28s} {p:5d}/{n:<5d} {100 * p / n:5.1f}%")
    print("per test function (those with failures):")
    for fn, (p, n) in sorted(per_fn.items(), key=lambda kv: kv[1][0] - kv[1][1]):
        if p < n:
            print(f"  {fn:60s} {p:4d}/{n:<4d}")
    classes: collections.Counter = collections.Counter()
    details: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for i in failed:
        c, d = classify(results[i].get("text"))
        results[i]["class"], results[i]["detail"] = c, d
        classes[c] += 1
        details[c][d] += 1
    print("failure classes:")
    for c, n in classes.most_common():
        print(f"  {n:5d}  {c}")
        for d, m in details[c].most_common(6):
            print(f"         {m:4d}  {d}")
    return {"mode": mode, "passed": len(passed), "ran": len(ran), "skipped": len(skipped), "failed": len(failed),
            "not_run": len(counted) - len(ran), "per_file": dict(per_file), "classes": dict(classes)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--triton-python", default=None, help="the python/ directory of a Triton checkout")
    ap.add_argument("--python", default=sys.executable, help="the Python that runs the tests (needs torch, scipy)")
    ap.add_argument("--baseline-python", default=None, help="a Python with upstream Triton, for its interpreter's pass list")
    ap.add_argument("--baseline-json", default=None, help="reuse the baseline of an earlier run's --json output")
    ap.add_argument("--mode", choices=("compiled", "interpreted", "both"), default="both")
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--sample", type=int, default=DEFAULT_SAMPLE, help=f"seeded sample size (default {DEFAULT_SAMPLE})")
    group.add_argument("--full", action="store_true", help="every interpreter-marked case")
    ap.add_argument("--seed", type=int, default=SAMPLE_SEED)
    ap.add_argument("--case-timeout", type=int, default=120, help="seconds before a case counts as hung")
    ap.add_argument("--budget", type=float, default=3600, help="seconds for each mode's run (the rest is 'not run')")
    ap.add_argument("--jobs", type=int, default=1,
                    help="pytest processes run at once, each on a shard of the cases (e.g. the machine's cores)")
    ap.add_argument("--json", default=None, help="write every case's outcome here")
    ap.add_argument("--from-json", default=None, help="print the summary of an earlier run's --json output again")
    ap.add_argument("--resume", default=None,
                    help="an earlier run's --json output: its cases with an outcome are kept, only the rest run "
                         "(to finish a run that ran out of --budget)")
    ap.add_argument("--log", default=os.path.join(tempfile.gettempdir(), "triton_suite.log"))
    args = ap.parse_args(argv)

    if args.from_json:
        with open(args.from_json) as f:
            data = json.load(f)
        for mode, res in data["results"].items():
            summarize(mode, res, list(res), data.get("baseline"))
        return 0
    pydir = os.path.abspath(args.triton_python)
    check_python(args.python)
    ids = collect(args.python, pydir, "compiled")
    exclusions = {i: why for i in ids if (why := excluded(i))}
    counted = [i for i in ids if i not in exclusions]
    if not args.full:
        counted = sorted(random.Random(args.seed).sample(counted, min(args.sample, len(counted))))
    print(f"{len(ids)} interpreter-marked cases; excluded by id: "
          f"{sum(w == 'float64' for w in exclusions.values())} float64, "
          f"{sum(w == 'atomic64' for w in exclusions.values())} 64-bit atomic RMW; "
          f"running {len(counted)} ({'full set' if args.full else f'seeded sample, seed {args.seed}'})")
    out: dict = {"cases": len(ids), "excluded": collections.Counter(exclusions.values()), "selected": len(counted),
                 "seed": None if args.full else args.seed, "modes": {}}
    baseline = None
    if args.baseline_json:
        with open(args.baseline_json) as f:
            baseline = json.load(f)["baseline"]
        counted = [i for i in counted if baseline.get(i, {}).get("outcome") == "passed"]
        print(f"Triton's interpreter passed {len(counted)} of them (from {args.baseline_json})")
        out["triton_passes"] = len(counted)
    elif args.baseline_python:
        t0 = time.time()
        baseline = run_sharded(args.baseline_python, pydir, "triton", counted, args.case_timeout, t0 + args.budget,
                               args.log, args.jobs)
        tb = [i for i in counted if baseline[i]["outcome"] == "passed"]
        print(f"Triton's interpreter passes {len(tb)}/{len(counted)} of them ({time.time() - t0:.0f} s)")
        out["triton_passes"] = len(tb)
        out["baseline_seconds"] = round(time.time() - t0)
        counted = tb  # only these count; the rest need not run
    earlier: dict[str, dict] = {}
    if args.resume:
        with open(args.resume) as f:
            earlier = json.load(f)["results"]
    modes = ("compiled", "interpreted") if args.mode == "both" else (args.mode,)
    all_results = {}
    for mode in modes:
        t0 = time.time()
        done = {i: r for i, r in earlier.get(mode, {}).items() if r["outcome"] != "not run"}
        todo = [i for i in counted if i not in done]
        if done:
            print(f"{mode}: {len(counted) - len(todo)} cases kept from {args.resume}, {len(todo)} to run")
        res = run_sharded(args.python, pydir, mode, todo, args.case_timeout, t0 + args.budget, args.log, args.jobs)
        res.update({i: done[i] for i in counted if i in done})
        summary = summarize(mode, res, counted, baseline)
        summary["seconds"] = round(time.time() - t0)
        out["modes"][mode] = summary
        all_results[mode] = res
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": out, "baseline": baseline, "results": all_results}, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
