"""benchmarks/results/codegen_report.json is what benchmarks/codegen_report.py produces now: the report is
deterministic (no timing), so a compiler change that alters the generated code makes this test fail until
the report is regenerated (and docs/benchmarks.md, docs/performance.md reviewed)."""

from __future__ import annotations

import importlib.util
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "benchmarks" / "results" / "codegen_report.json"


def _script():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location("codegen_report", ROOT / "benchmarks" / "codegen_report.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def stale_fields(committed: list, current: list) -> list[str]:
    """``kernel: field`` for every report field that differs (kernels added or removed included)."""
    old = {r["kernel"]: r for r in committed}
    new = {r["kernel"]: r for r in current}
    out = [f"{k}: only in the committed report" for k in old.keys() - new.keys()]
    out += [f"{k}: missing from the committed report" for k in new.keys() - old.keys()]
    for k in old.keys() & new.keys():
        out += [f"{k}: {f}" for f in sorted(old[k].keys() | new[k].keys()) if old[k].get(f) != new[k].get(f)]
    return sorted(out)


def test_committed_codegen_report_matches_the_script():
    current = _script().compute_rows()
    committed = json.loads(COMMITTED.read_text())["results"]
    stale = stale_fields(committed, current)
    assert not stale, ("benchmarks/results/codegen_report.json is stale; run `python benchmarks/codegen_report.py` "
                       "and update docs/benchmarks.md and docs/performance.md. Differences: " + "; ".join(stale))


def test_a_stale_report_is_detected():
    committed = json.loads(COMMITTED.read_text())["results"]
    old = json.loads(json.dumps(committed))
    softmax = next(r for r in old if r["kernel"] == "softmax")
    softmax["simd_ops"]["call_sites"] = {"simd_shuffle_xor": 999}  # e.g. the code before simd_sum/simd_max
    assert stale_fields(old, committed) == ["softmax: simd_ops"]
    assert stale_fields(committed[1:], committed) == [f"{committed[0]['kernel']}: missing from the committed report"]


def test_loop_figures_are_counted_from_the_msl():
    msl = """kernel void k(
{
    float c7[32];
    for (int e = 0; e < 32; ++e) c7[e] = 0.0f;
    device const half* c8[2];  // one pointer per run of 4 contiguous elements
    for (int e = 0; e < 8; e += 4) c8[e / 4] = a + e;
    int c9 = 0;
    for (int i10 = 0; i10 < n; i10 += 32) {
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (int kk = 0; kk < 32; kk += 8) {
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
"""
    (loop,) = _script().loops(msl)
    assert loop["barriers_per_iteration"] == 2  # the one after the loop is not in it
    assert loop["carried_bytes_per_thread"] == 32 * 4 + 2 * 8 + 4
    assert loop["carried_32bit_registers"] == 37
