"""The cpu backend's build modes over the kernel corpus, inside the README's test command (and so in CI).

UBSan mode (ENCELADUS_CPU_UBSAN=1, MSL_AUDIT B2): kernels built without -fwrapv, with signed-overflow and shift
checks. A child pytest process (tests/cpu_modes.py) runs tests/backends/data/ubsan_corpus.txt in that mode: a
subset of tests/codegen and tests/conformance that launches every feature (IR op and dtype, function a kernel
body calls) that the whole of both directories launches (tests/backends/data/kernel_corpus_features.txt), at
about a sixth of the cost (163 of 1273 tests). Clean means zero reports: the child records every report, also one that a test
caught as an expected launch error. The raw MSL canaries of test_ubsan_mode.py run in the same child and must
be reported, so a mode that silently does nothing fails here. The whole corpus in the mode:
``ENCELADUS_CPU_UBSAN=1 pytest -n 2 tests/codegen tests/conformance``; refresh the files after changing those
tests or the emitter with ``python tests/cpu_modes.py survey ubsan`` (``prune ubsan`` drops the tests of the
corpus file that the others make redundant).
"""

from __future__ import annotations

import os

import pytest

from cpu_modes import (
    FEATURES_FILE,
    MODES,
    corpus_file,
    drop_redundant,
    ir_features,
    msl_features,
    read_lines,
    run_corpus,
    select_corpus,
    selects,
)
from enceladus.compiler.op_traits import OPS
from paths import path_missing

# Raw MSL with a signed overflow and an out-of-range shift: reported in the mode (and caught by these tests).
UBSAN_CANARIES = (
    "tests/backends/cpu/test_ubsan_mode.py::test_ubsan_mode_reports_a_signed_overflow_in_raw_msl",
    "tests/backends/cpu/test_ubsan_mode.py::test_ubsan_mode_through_compile_shader",
)
# IR ops that no test of tests/codegen or tests/conformance launches (so the corpus cannot either): none; every
# op of the op-trait table must be launched.
NOT_IN_THE_CORPUS: set[str] = set()


def _clang_env() -> dict[str, str]:
    """The environment that makes the child build with clang (the mode needs its sanitizer checks)."""
    from enceladus.backends.cpu import CompilerNotFoundError
    from enceladus.backends.cpu.toolchain import find_compiler

    try:
        if find_compiler().kind in ("clang", "zig"):
            return {}
    except CompilerNotFoundError:
        pass
    try:
        find_compiler("clang++")
        return {"ENCELADUS_CXX": "clang++"}
    except CompilerNotFoundError:
        path_missing("cpu (UBSan mode)", "the UBSan mode needs clang (`apt-get install -y clang`)")
    return {}


def _ops(features: set[str]) -> set[str]:
    return {f.split(":", 1)[0] for f in features if not f.startswith("msl:")}


def test_ubsan_mode_over_the_kernel_corpus(tmp_path):
    mode = MODES["ubsan"]
    corpus = read_lines(corpus_file(mode))
    required = set(read_lines(FEATURES_FILE))
    run = run_corpus(mode, [*corpus, *UBSAN_CANARIES], str(tmp_path / "records"), extra_env=_clang_env(),
                     timeout=1500)
    if run.returncode == 4:
        pytest.fail(f"the {mode.name} corpus names a test that does not exist; rerun "
                    f"`python tests/cpu_modes.py survey {mode.name}`:\n{run.output[-3000:]}")
    assert run.returncode == 0, f"the {mode.name} corpus failed in the mode:\n{run.output[-8000:]}"
    stray = [r for r in run.reports if r["test"] not in UBSAN_CANARIES]
    assert not stray, "undefined behaviour reported in generated kernels:\n" + "\n".join(
        f"{r['test']}: {r['message']}" for r in stray[:20])
    assert {r["test"] for r in run.reports} == set(UBSAN_CANARIES), \
        f"the canaries' overflows were not reported: {run.reports}"
    built = run.records["libraries"].get(mode.name, {})
    assert built.get("True", 0) > 0 and not built.get("False"), \
        f"kernel libraries built in the mode / not in it: {built}"
    missing = required - run.features
    assert not missing, (f"the {mode.name} corpus no longer launches {len(missing)} feature(s) that the full corpus "
                         f"does: {sorted(missing)[:30]}; rerun `python tests/cpu_modes.py survey {mode.name}`")
    print(f"{mode.name} corpus: {len(corpus)} tests, {len(run.features)} features, {built.get('True')} libraries, "
          f"0 reports, {run.seconds:.1f} s")


def test_every_op_of_the_emitter_is_in_the_corpus_features():
    """A new IR op must be launched by tests/codegen or tests/conformance and the survey refreshed."""
    launched = _ops(set(read_lines(FEATURES_FILE)))
    assert launched <= set(OPS), f"features of ops that no longer exist: {sorted(launched - set(OPS))}"
    assert set(OPS) - launched == NOT_IN_THE_CORPUS, (
        f"ops not launched by the corpus: {sorted(set(OPS) - launched)}, expected {sorted(NOT_IN_THE_CORPUS)}; "
        "launch the new op in tests/codegen or tests/conformance and rerun `python tests/cpu_modes.py survey ubsan`")


def test_corpus_features_name_ops_dtypes_and_called_functions():
    ir = """func @k(%x_ptr: *int8, %n: int32) {
  %4 = program_id {axis=0} : int32
  %7 = arange {end=256, start=0} : tile<256xint32>
  %13 = addptr %12, %9 : tile<256x*int8>
  %16 = load %13, %11, %15 : tile<256xint8>
  %22 = shl %16, %21 : tile<256xint8>
  store %24, %22, %11
}"""
    assert ir_features(ir) == {"program_id:int32", "arange:int32", "addptr:ptr", "load:int8", "shl:int8",
                               "store:"}
    msl = """static inline int enc_helper(int a) { return a; }  // comment: call(me)
[[max_total_threads_per_threadgroup(128)]]
kernel void k(device int* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    const int v = as_type<int>(uint(x[i]) + 1u);
    for (int e = 0; e < 2; ++e) x[i] = enc_sdiv(v, int2(v, 1).x) + enc_combine17(v, v) + simd_sum(v);
}"""
    assert msl_features(msl) == {"msl:as_type", "msl:enc_sdiv", "msl:enc_combine", "msl:simd_sum"}


def test_the_corpus_cover_keeps_no_test_whose_features_the_others_launch():
    features = {"cheap_a": {"add:int8"}, "cheap_b": {"shl:int8"}, "both": {"add:int8", "shl:int8", "other"},
                "dear": {"add:int8", "store:"}, "store": {"store:"}, "<session>": {"arange:int32"}}
    seconds = {"cheap_a": 1.0, "cheap_b": 1.0, "both": 1.0, "dear": 9.0, "store": 1.0}
    required = {"add:int8", "shl:int8", "store:"}
    # greedy takes "both" (two new features a second), then "store"; "dear" is never worth its cost
    assert select_corpus(features, seconds, required) == ["both", "store"]
    # a cover with redundant tests: the costliest redundant one goes first, then what the rest still covers
    assert drop_redundant(["cheap_a", "dear", "cheap_b", "store"], features, seconds, required) == \
        ["cheap_a", "cheap_b", "store"]
    assert drop_redundant(["dear", "both"], features, seconds, required) == ["dear", "both"]
    assert drop_redundant(["dear", "both", "store"], features, seconds, required) == ["both", "store"]
    # a corpus entry may name a parametrized test without its parameters, or a whole file
    assert selects("t.py::f", "t.py::f[int8]") and selects("t.py", "t.py::f[1]") and selects("t.py::f", "t.py::f")
    assert not selects("t.py::f", "t.py::f_other") and not selects("t.py::f[1]", "t.py::f[10]")


@pytest.mark.parametrize("name", sorted(MODES))
def test_each_mode_has_a_corpus_of_existing_test_files(name):
    corpus = read_lines(corpus_file(MODES[name]))
    assert corpus, f"{corpus_file(MODES[name])} is empty"
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    files = {node.split("::")[0] for node in corpus}
    assert all(os.path.isfile(os.path.join(root, f)) for f in files), sorted(files)


def test_without_clang_the_mode_fails_in_ci_and_skips_visibly_elsewhere(monkeypatch):
    from enceladus.backends.cpu import CompilerNotFoundError, toolchain
    from enceladus.backends.cpu.toolchain import CompilerInfo

    def gcc_only(cxx=None):
        if cxx == "clang++":
            raise CompilerNotFoundError("clang++ is not installed")
        return CompilerInfo(("g++",), "gcc", "g++ (stand-in)")

    monkeypatch.setattr(toolchain, "find_compiler", gcc_only)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="UBSan mode needs clang"):
        _clang_env()
    monkeypatch.setenv("CI", "")
    with pytest.raises(pytest.skip.Exception, match="UBSan mode needs clang"):
        _clang_env()
    monkeypatch.setattr(toolchain, "find_compiler",
                        lambda cxx=None: CompilerInfo((cxx or "g++",), "clang" if cxx else "gcc", "stand-in"))
    assert _clang_env() == {"ENCELADUS_CXX": "clang++"}  # g++ is the default, clang++ is installed too
