"""Run a corpus of kernel tests under a build mode of the cpu backend, in CI, inside the README's test command.

The cpu backend has build modes that check what the normal build cannot: ``ubsan`` (ENCELADUS_CPU_UBSAN=1:
no -fwrapv, signed-overflow and shift checks, MSL_AUDIT B2). A mode is a set of environment variables; it is
run over a corpus of existing kernel tests (pytest node ids) in a child pytest process, so the mode's builds
never meet the parent's (the environment is read when a kernel library is built, and the disk cache keys on
the mode). The child records, through this module's hooks (installed by tests/conftest.py when
``ENCELADUS_TEST_MODE_RECORD`` names a directory):

- the IR ops every launched kernel contains, as ``op:dtype`` features (``add:int8``, ``store:``), so the
  parent can check that the corpus still covers every op family the emitter lowers;
- every launch error whose message carries one of the mode's report markers, with the test that launched it,
  so a report counts even when a test expected *some* launch error and caught it.

A second mode plugs in by adding a ``Mode`` to ``MODES`` (environment, report markers, how to tell a library
built in it), a corpus file (``python tests/cpu_modes.py survey NAME``) and a test that calls ``run_corpus``
and checks the records; see tests/backends/test_cpu_modes.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

RECORD_ENV = "ENCELADUS_TEST_MODE_RECORD"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass(frozen=True)
class Mode:
    """A build mode of the cpu backend: the environment that selects it and the text its reports carry."""

    name: str
    env: dict[str, str]
    report_markers: tuple[str, ...]
    built_in_mode: Callable[[Any], bool]  # whether a CpuLibrary was built in this mode
    doc: str = ""


MODES: dict[str, Mode] = {
    "ubsan": Mode("ubsan", {"ENCELADUS_CPU_UBSAN": "1"}, ("undefined behaviour in MSL (UBSan mode)",),
                  lambda lib: bool(lib.ubsan), "no -fwrapv; -fsanitize=signed-integer-overflow,shift (docs/cpu_backend.md)"),
}


# ---------------------------------------------------------------------------------------------------------
# The child's side: hooks installed by tests/conftest.py when RECORD_ENV is set.

_IR_LINE = re.compile(r"^\s*(?:%[\w.]+(?:\s*,\s*%[\w.]+)*\s*=\s*)?([a-z_][a-z0-9_]*)\b(.*)$")
_ELEM = re.compile(r"(\*?)(u?int(?:1|8|16|32|64)|fp(?:16|32|64)|bf16|fp8\w*)\b")


def ir_features(ir: str) -> set[str]:
    """``op:dtype`` for every IR op of a kernel (``dtype``: the element type of its result, ``ptr`` for
    pointers, empty when it has none); ops not in the op-trait table (``func``, ``}``) are left out."""
    from enceladus.compiler.op_traits import OPS

    out: set[str] = set()
    for line in ir.splitlines():
        m = _IR_LINE.match(line)
        if not m or m.group(1) not in OPS:
            continue
        op, rest = m.group(1), m.group(2)
        result = rest.rsplit(" : ", 1)[1] if " : " in rest else ""
        e = _ELEM.search(result)
        dtype = ("ptr" if e.group(1) else e.group(2)) if e else result.strip()
        out.add(f"{op}:{dtype}")
    return out


_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*(?:<[^;(){}]*>)?\s*\(")
# one emitted combine function per reduction (enc_combine7), one matmul2d tensor per dot (enc_a12: a tensor
# constructed like a call)
_NUMBERED = re.compile(r"^(enc_combine|enc_a|enc_b)\d+$")
_KERNEL_NAME = re.compile(r"\bkernel\s+void\s+(\w+)")
_NOT_A_FUNCTION = frozenset((
    "if", "for", "while", "switch", "return", "sizeof", "static_assert", "kernel", "void", "defined", "bool", "char",
    "uchar", "short", "ushort", "int", "uint", "long", "ulong", "half", "float", "bfloat", "size_t"))
_VECTOR_TYPE = re.compile(r"^(?:packed_)?(?:bool|char|uchar|short|ushort|int|uint|long|ulong|half|float|bfloat)[234]"
                          r"(?:x[234])?$")


def msl_features(msl: str) -> set[str]:
    """``msl:name`` for every function, builtin or helper that a kernel body of the MSL text calls
    (``enc_sdiv``, ``simd_sum``, ``atomic_fetch_add_explicit``, ``as_type``...): which code of the compatibility
    headers and of the emitted helpers it runs. Comments, attributes, type conversions and control keywords are
    left out."""
    text = re.sub(r"//[^\n]*|\[\[.*?\]\]", " ", msl)
    names = _KERNEL_NAME.findall(text)
    start = text.find("kernel void")
    body = text[start:] if start >= 0 else ""
    return {"msl:" + _NUMBERED.sub(r"\1", name) for name in _CALL.findall(body)
            if name not in _NOT_A_FUNCTION and name not in names and not _VECTOR_TYPE.match(name) and len(name) > 1}


class Recorder:
    """Collects features and reports in one pytest process and writes them to ``<dir>/<worker>.json``."""

    def __init__(self, directory: str, markers: tuple[str, ...]):
        self.directory = directory
        self.markers = markers
        self.test = "<session>"
        self.features: dict[str, set[str]] = {}
        self.kernels: dict[str, int] = {}
        self.seconds: dict[str, float] = {}
        self.reports: list[dict[str, str]] = []
        self.libraries: dict[str, dict[str, int]] = {}  # mode name -> {"True"/"False": libraries built}
        self._undo: list = []

    def install(self) -> None:
        from enceladus.backends.cpu import library
        from enceladus.backends.cpu.library import CpuBackend
        from enceladus.runtime import launch

        init = launch.KernelLauncher.__init__

        def record_kernel(launcher, kernel):
            try:
                feats = ir_features(kernel.asm["ir"]) | msl_features(kernel.asm["msl"])
            except Exception as exc:  # a kernel without IR text would make the coverage check meaningless
                feats = {f"<no ir: {type(exc).__name__}>"}
            self.features.setdefault(self.test, set()).update(feats)
            self.kernels[self.test] = self.kernels.get(self.test, 0) + 1
            init(launcher, kernel)

        error = library._error

        def record_error(*args, **kwargs):
            exc = error(*args, **kwargs)
            text = str(exc)
            if any(m in text for m in self.markers):
                self.reports.append({"test": self.test, "message": text})
            return exc

        compile_ = CpuBackend.compile

        def record_library(backend, *args, **kwargs):
            lib = compile_(backend, *args, **kwargs)
            for mode in MODES.values():
                counts = self.libraries.setdefault(mode.name, {})
                key = str(bool(mode.built_in_mode(lib)))
                counts[key] = counts.get(key, 0) + 1
            return lib

        launch.KernelLauncher.__init__ = record_kernel
        library._error = record_error
        CpuBackend.compile = record_library
        self._undo = [(launch.KernelLauncher, "__init__", init), (library, "_error", error),
                      (CpuBackend, "compile", compile_)]

    def uninstall(self) -> None:
        for owner, name, value in self._undo:
            setattr(owner, name, value)

    def start(self, nodeid: str) -> float:
        self.test = nodeid
        return time.perf_counter()

    def stop(self, nodeid: str, t0: float) -> None:
        self.seconds[nodeid] = self.seconds.get(nodeid, 0.0) + time.perf_counter() - t0
        self.test = "<session>"

    def write(self, worker: str) -> None:
        os.makedirs(self.directory, exist_ok=True)
        data = {"features": {k: sorted(v) for k, v in self.features.items()}, "kernels": self.kernels,
                "seconds": self.seconds, "reports": self.reports, "libraries": self.libraries}
        with open(os.path.join(self.directory, f"{worker}.json"), "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)


def recorder_from_env() -> Recorder | None:
    """The recorder a child process runs with (RECORD_ENV set), else None."""
    directory = os.environ.get(RECORD_ENV, "")
    if not directory:
        return None
    markers = tuple(m for mode in MODES.values() for m in mode.report_markers)
    return Recorder(directory, markers)


def read_records(directory: str) -> dict:
    """Every worker's record in ``directory`` merged: features (union per test), kernels, seconds, reports."""
    merged: dict = {"features": {}, "kernels": {}, "seconds": {}, "reports": [], "libraries": {}}
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(directory, name)) as f:
            data = json.load(f)
        for test, feats in data["features"].items():
            merged["features"].setdefault(test, set()).update(feats)
        for key in ("kernels", "seconds"):
            for test, v in data[key].items():
                merged[key][test] = merged[key].get(test, 0) + v
        merged["reports"].extend(data["reports"])
        for name, counts in data.get("libraries", {}).items():
            into = merged["libraries"].setdefault(name, {})
            for key, n in counts.items():
                into[key] = into.get(key, 0) + n
    return merged


# ---------------------------------------------------------------------------------------------------------
# The parent's side.

@dataclass
class CorpusRun:
    """What a child pytest run of a corpus under a mode returned."""

    mode: Mode
    returncode: int
    output: str
    seconds: float
    records: dict

    @property
    def features(self) -> set[str]:
        return set().union(*self.records["features"].values()) if self.records["features"] else set()

    @property
    def reports(self) -> list[dict[str, str]]:
        return self.records["reports"]


def run_corpus(mode: Mode, node_ids: list[str], record_dir: str, *, workers: int = 0,
               timeout: float = 900.0, extra_env: dict[str, str] | None = None) -> CorpusRun:
    """Run the pytest node ids under ``mode`` in a child process (``workers`` > 0: that many xdist workers),
    recording into ``record_dir``. The child inherits ``CI``, so a path that cannot run fails there too."""
    env = dict(os.environ)
    env.pop("PYTEST_XDIST_WORKER", None)
    env.pop("PYTEST_XDIST_WORKER_COUNT", None)
    env.pop("PYTEST_ADDOPTS", None)
    env.update(mode.env)
    env.update(extra_env or {})
    env[RECORD_ENV] = record_dir
    env["ENCELADUS_BACKEND"] = "cpu"
    env["ENCELADUS_PROXY_CHECK"] = "0"  # the parent checks the GPU proxy rewrite of the same kernels
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=-ra", *(["-n", str(workers)] if workers else ["-p", "no:xdist"]), *node_ids]
    t0 = time.perf_counter()
    try:
        res = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
        rc, output = res.returncode, res.stdout + res.stderr
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        rc, output = -1, f"{out}\n(the {mode.name} corpus run passed its {timeout:g} s timeout and was stopped)"
    seconds = time.perf_counter() - t0
    records = read_records(record_dir) if os.path.isdir(record_dir) else {
        "features": {}, "kernels": {}, "seconds": {}, "reports": [], "libraries": {}}
    return CorpusRun(mode, rc, output, seconds, records)


# ---------------------------------------------------------------------------------------------------------
# The corpus files and the survey that makes them.

DATA = os.path.join(REPO, "tests", "backends", "data")
FEATURES_FILE = os.path.join(DATA, "kernel_corpus_features.txt")  # what the full corpus launches
FULL_CORPUS = ("tests/codegen", "tests/conformance")


def corpus_file(mode: Mode) -> str:
    return os.path.join(DATA, f"{mode.name}_corpus.txt")


def read_lines(path: str) -> list[str]:
    """The non-empty lines of a corpus file that are not ``#`` comments."""
    with open(path) as f:
        return [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]


def select_corpus(features: dict[str, set[str]], seconds: dict[str, float], required: set[str]) -> list[str]:
    """Tests that together launch every required feature, chosen greedily by new features per second
    (a weighted set cover; ``seconds`` from a cold run, each test charged at least half a second), then
    without the tests that became redundant (:func:`drop_redundant`)."""
    chosen: list[str] = []
    covered: set[str] = set()
    candidates = {t: f & required for t, f in features.items() if t != "<session>" and f & required}
    reachable = set().union(*candidates.values())
    while covered != reachable:
        best = max(sorted(candidates), key=lambda t: len(candidates[t] - covered) / max(seconds.get(t, 1.0), 0.5))
        chosen.append(best)
        covered |= candidates.pop(best)
    return drop_redundant(chosen, features, seconds, required)


def drop_redundant(chosen: list[str], features: dict[str, set[str]], seconds: dict[str, float],
                   required: set[str]) -> list[str]:
    """``chosen`` (in its order) without each test whose required features the tests kept launch too; the
    costliest are tried first. A greedy cover keeps early picks whose features later picks brought again."""
    keep = list(chosen)
    for test in sorted(chosen, key=lambda t: (-seconds.get(t, 0.0), t)):
        others = set().union(*(features.get(t, set()) & required for t in keep if t != test))
        if features.get(test, set()) & required <= others:
            keep.remove(test)
    return keep


def survey(mode: Mode, workers: int = 2) -> None:
    """Run the full corpus (tests/codegen, tests/conformance) under ``mode`` with a cold cache, then write
    FEATURES_FILE (every feature it launched) and the mode's corpus file (a subset launching all of them)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="enceladus-survey-") as tmp:
        cache = os.path.join(tmp, "cache")
        os.makedirs(cache, mode=0o700)
        run = run_corpus(mode, list(FULL_CORPUS), os.path.join(tmp, "records"), workers=workers, timeout=7200,
                         extra_env={"ENCELADUS_CACHE_DIR": cache})
    if run.returncode != 0 or run.reports:
        sys.exit(f"the full corpus did not pass cleanly under {mode.name} (fix that first):\n{run.output[-6000:]}"
                 + "".join(f"\n{r['test']}: {r['message']}" for r in run.reports))
    per_test = {t: f for t, f in run.records["features"].items() if t != "<session>"}
    required = set().union(*per_test.values())
    chosen = select_corpus(per_test, run.records["seconds"], required)
    os.makedirs(DATA, exist_ok=True)
    head = (f"# Written by `python tests/cpu_modes.py survey {mode.name}`: ")
    with open(FEATURES_FILE, "w") as f:
        f.write(head + f"every feature the kernels of {' and '.join(FULL_CORPUS)} launch\n"
                "# (op:dtype of each IR op, msl:name of each function a kernel body calls; see tests/cpu_modes.py)\n")
        f.write("\n".join(sorted(required)) + "\n")
    total = sum(run.records["seconds"].values())
    cost = sum(run.records["seconds"].get(t, 0.0) for t in chosen)
    with open(corpus_file(mode), "w") as f:
        f.write(head + f"{len(chosen)} tests launching every feature of {os.path.basename(FEATURES_FILE)};\n"
                f"# {cost:.0f} s of the {total:.0f} s that the full corpus took per test in the survey run "
                f"({run.seconds:.0f} s wall, {workers} workers)\n")
        f.write("\n".join(chosen) + "\n")
    print(f"{len(required)} features; {len(chosen)} of {len(run.records['seconds'])} tests cover them "
          f"({cost:.0f} s of {total:.0f} s); wrote {FEATURES_FILE} and {corpus_file(mode)}")


def selects(entry: str, nodeid: str) -> bool:
    """Whether the corpus entry ``entry`` (a node id, or a file or test named without parameters) selects
    the test ``nodeid``."""
    return nodeid == entry or nodeid.startswith((entry + "[", entry + "::"))


def prune(mode: Mode, workers: int = 2) -> None:
    """Run the mode's corpus file in the mode with a cold cache and drop from it every test whose features the
    rest of the corpus launches too (:func:`drop_redundant`); the features file is unchanged."""
    import tempfile

    corpus = read_lines(corpus_file(mode))
    with tempfile.TemporaryDirectory(prefix="enceladus-prune-") as tmp:
        cache = os.path.join(tmp, "cache")
        os.makedirs(cache, mode=0o700)
        run = run_corpus(mode, corpus, os.path.join(tmp, "records"), workers=workers, timeout=7200,
                         extra_env={"ENCELADUS_CACHE_DIR": cache})
    if run.returncode != 0 or run.reports:
        sys.exit(f"the {mode.name} corpus did not pass cleanly (fix that first):\n{run.output[-6000:]}")
    required = set(read_lines(FEATURES_FILE))
    missing = required - run.features
    if missing:
        sys.exit(f"the corpus no longer launches {sorted(missing)[:30]}: run `survey {mode.name}` instead")
    # an entry may select several node ids (a parametrized test named without its parameters)
    features = {e: set().union(*(f for t, f in run.records["features"].items() if selects(e, t))) for e in corpus}
    seconds = {e: sum(s for t, s in run.records["seconds"].items() if selects(e, t)) for e in corpus}
    kept = drop_redundant(corpus, features, seconds, required)
    with open(corpus_file(mode)) as f:
        head = [ln.rstrip("\n") for ln in f if ln.startswith("#")]
    head.append(f"# then `python tests/cpu_modes.py prune {mode.name}`: {len(corpus) - len(kept)} tests whose features "
                f"the others launch too dropped (the {len(kept)} kept took {sum(seconds.get(t, 0.0) for t in kept):.0f} "
                f"s of the {sum(seconds.get(t, 0.0) for t in corpus):.0f} s in that run)")
    with open(corpus_file(mode), "w") as f:
        f.write("\n".join(head) + "\n" + "\n".join(kept) + "\n")
    print(f"{len(kept)} of {len(corpus)} tests kept; wrote {corpus_file(mode)}")


if __name__ == "__main__":
    commands = {"survey": survey, "prune": prune}
    if len(sys.argv) != 3 or sys.argv[1] not in commands or sys.argv[2] not in MODES:
        sys.exit(f"usage: python tests/cpu_modes.py {{survey,prune}} {{{','.join(MODES)}}}")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    commands[sys.argv[1]](MODES[sys.argv[2]])
