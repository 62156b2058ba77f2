"""The GPU proxy table's own pieces that run without a GPU: its benchmark kernels (benchmarks/gpu_proxy/kernels.py)
on every path against NumPy at small sizes (every kernel a session launches is also rewritten to CUDA and
type-checked by tests/conftest.py, so a kernel the device run could not translate fails here first), and
``table.py --markdown``, which turns a results file into the docs section's data."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

from codegen.gpu_proxy_loader import gpu_proxy
from paths import run_on_all_paths

ROOT = pathlib.Path(__file__).resolve().parents[2]
table = gpu_proxy("table")
kernels = gpu_proxy("source").load_functions(str(ROOT / "benchmarks" / "gpu_proxy" / "kernels.py"),
                                             ["histogram_kernel", "atomic_accumulate", "transpose_kernel",
                                              "transpose_strided_kernel", "transpose_config", "cross_entropy_fwd",
                                              "cross_entropy_config"], "enceladus")


@pytest.mark.parametrize("relaxed", [False, True], ids=["acq_rel", "relaxed"])
def test_histogram_kernel(relaxed):
    n = 5000  # not a multiple of the block: the masked tail must not count
    x = np.random.default_rng(0).integers(0, 256, n).astype(np.int32)
    run_on_all_paths(kernels.histogram_kernel, (-(-n // 1024),), lambda: (x.copy(), np.zeros(256, np.int32), n),
                     lambda *a: {1: np.bincount(x, minlength=256).astype(np.int32)},
                     constexprs={"BLOCK": 1024, "RELAXED": relaxed}, rtol=0, atol=0)


@pytest.mark.parametrize("relaxed", [False, True], ids=["acq_rel", "relaxed"])
def test_atomic_accumulate_kernel(relaxed):
    n = 3000
    x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    base = np.linspace(-1, 1, n, dtype=np.float32)
    run_on_all_paths(kernels.atomic_accumulate, (-(-n // 1024),), lambda: (x.copy(), base.copy(), n),
                     lambda *a: {1: base + x}, constexprs={"BLOCK": 1024, "RELAXED": relaxed}, rtol=0, atol=0)


def test_transpose_strided_kernel():
    M, N, bm, bn = 70, 100, 32, 128
    a = np.random.default_rng(4).standard_normal((M, N)).astype(np.float32)
    run_on_all_paths(kernels.transpose_strided_kernel, (-(-M // bm), -(-N // bn)),
                     lambda: (a.copy(), np.zeros((N, M), np.float32), M, N, N, 1, M), lambda *x: {1: a.T},
                     constexprs={"BLOCK_M": bm, "BLOCK_N": bn}, rtol=0, atol=0)


def test_transpose_kernel_at_the_table_config():
    bm, bn, warps = kernels.transpose_config()
    M, N = 3 * bm - 5, 2 * bn + 3
    a = np.random.default_rng(2).standard_normal((M, N)).astype(np.float32)
    run_on_all_paths(kernels.transpose_kernel, (-(-M // bm), -(-N // bn)),
                     lambda: (a.copy(), np.zeros((N, M), np.float32), M, N, N, M), lambda *x: {1: a.T},
                     constexprs={"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=warps, rtol=0, atol=0)


def test_cross_entropy_kernel_at_the_table_config():
    """exp2 of prescaled arguments: within the kernel's stated bound (about 2.3 * 2^-24 * ln V relative on the sum,
    1.4e-6 at V = 32768) plus the fp32 summation of V terms, far inside 1e-5 of a loss near ln V."""
    V = 3 * 4096 + 77  # a masked tail in the last step
    M = 6
    rng = np.random.default_rng(5)
    logits = (rng.standard_normal((M, V)) * 4).astype(np.float32)
    logits[1] += 80.0  # large logits: the prescaled argument x - m stays exact-sized
    logits[2, ::7] = -30.0
    labels = rng.integers(0, V, M).astype(np.int32)
    x64 = logits.astype(np.float64)
    mx = x64.max(1)
    want = (np.log(np.exp(x64 - mx[:, None]).sum(1)) + mx - x64[np.arange(M), labels]).astype(np.float32)
    blk, warps = kernels.cross_entropy_config(V)
    run_on_all_paths(kernels.cross_entropy_fwd, (M,), lambda: (logits, labels, np.zeros(M, np.float32), V, V),
                     lambda *a: {2: want}, constexprs={"BLOCK": blk}, num_warps=warps, rtol=1e-5, atol=1e-5)


def _row(name, enc_ms, others, spread=0.001):
    row = {"row": name, "bytes": 1, "note": "", "providers": {"enceladus": {"ms": enc_ms, "GB/s": 1.0, "spread": spread}}}
    for prov, ms in others.items():
        row["providers"][prov] = {"ms": ms, "spread": spread}
        row[f"vs {prov}"] = ms / enc_ms
        row[f"spread vs {prov}"] = spread
    return row


def test_markdown_of_the_committed_results():
    data = json.loads((ROOT / "benchmarks" / "results" / "gpu_proxy_h200.json").read_text())
    md = table.markdown(data)
    assert md.startswith("| kernel | Enceladus ms |")
    first_table = md.split("\n\n", 1)[0].splitlines()  # the rows' table (a sweep table may follow)
    assert len([line for line in first_table if line.startswith("| ") and "x |" in line]) == len(data["rows"])
    assert f"Triton {data['triton']}" in md and data["date"] in md


def test_markdown_reports_rows_below_fence_cost_and_eight_warps():
    data = {"date": "D", "device": "GPU", "cuda": "13", "torch": "T", "triton": "3", "python": "3.12", "reps": 25,
            "rows": [_row("softmax 8x8", 1.0, {"triton (our kernel)": 0.9}),
                     {**_row("softmax 8x8 8 warps", 1.0, {"triton (our kernel)": 0.8}), "informational": True},
                     _row("histogram 2^26 into 256 bins (acq_rel)", 2.0, {"triton (our kernel)": 2.2}),
                     _row("histogram 2^26 into 256 bins (relaxed)", 1.0, {"triton (our kernel)": 1.1}),
                     _row("ok row", 1.0, {"triton tutorial": 1.0005, "torch": 1.2})],
            "builds": [{"kernel": "k", "num_warps": 4, "threadgroup_memory": 16512,
                        "ptxas": "ptxas info    : Used 38 registers"}],
            "sweep": [{"variant": "v", "provider": "enceladus", "ms": 2.0}, {"variant": "v", "provider": "triton", "ms": 1.0}]}
    md = table.markdown(data)
    assert "**Rows below 1.00x by more than the spread:** softmax 8x8: 0.900x triton (our kernel) (spread 0.1%)" \
        in md.splitlines()
    assert "| softmax 8x8 8 warps (*) |" in md and "not held to the 1.00x goal" in md  # informational: not listed
    assert "- histogram 2^26 into 256 bins: Enceladus 2.000 ms fenced / 1.000 ms relaxed = 2.00x; " \
           "Triton 2.200 ms fenced / 1.100 ms relaxed = 2.00x" in md
    assert "softmax 8x8 8 warps: 0.80x Triton on our source" in md
    assert "k (4 warps, 16512 B threadgroup): 38 registers" in md
    assert "| v | 2.0000 | 1.0000 | 0.50x | — |" in md


def test_markdown_reports_the_fast_math_diagnostic_apart_from_the_ratios():
    diag = {**_row("softmax 8x8 8 warps", 1.0, {"triton (our kernel)": 0.96}), "informational": True}
    diag["providers"][table.DIAGNOSTIC] = {"ms": 0.98, "spread": 0.001}
    data = {"date": "D", "device": "GPU", "cuda": "13", "torch": "T", "triton": "3", "python": "3.12", "reps": 25,
            "rows": [diag]}
    md = table.markdown(data)
    assert "softmax 8x8 8 warps: 1.0000 ms as shipped (0.96x Triton on our source), 0.9800 ms with fast math " \
           "(0.98x)" in md and "not a config we ship" in md
    assert "vs " + table.DIAGNOSTIC not in diag  # never a ratio, never held to the goal
    diag["providers"]["triton (our kernel)"]["ptx_ops"] = {"bar.sync": 4, "ex2.approx.f32": 4, "mov.u32": 9}
    diag["providers"]["enceladus"]["sass_ops"] = {"BAR.SYNC.DEFER_BLOCKING": 2, "IMAD": 30, "MUFU.EX2": 4}
    md = table.markdown(data)
    assert "- softmax 8x8 8 warps, triton (our kernel) PTX: bar.sync=4 ex2.approx.f32=4" in md
    assert "- softmax 8x8 8 warps, enceladus SASS: BAR.SYNC.DEFER_BLOCKING=2 MUFU.EX2=4" in md
    assert table.below({"rows": [{**diag, "informational": False}]}) == [
        "softmax 8x8 8 warps: 0.960x triton (our kernel) (spread 0.1%)"]


def test_opcode_counts_of_sass_and_ptx():
    sass = """
        /*0080*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
        /*0090*/              @!P0 RED.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR4][R2.64], R5 ;
        /*00a0*/               @P1 RED.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR4][R2.64+0x4], R6 ;
        /*00b0*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
"""
    assert table.opcode_counts(sass, True) == {"BAR.SYNC.DEFER_BLOCKING": 1, "LDG.E.128": 1,
                                               "RED.E.ADD.F32.FTZ.RN.STRONG.GPU": 2}
    ptx = """.visible .entry k(
	.param .u64 k_param_0
)
{
	.reg .f32 %f<9>;
$L__BB0_1:
	ex2.approx.f32 %f2, %f1;
	@%p1 red.global.add.v4.f32 [%rd1], {%f1, %f2, %f3, %f4};
	div.full.f32 %f3, %f2, %f1;
	bar.sync 0;
	ret;
}
"""
    assert table.opcode_counts(ptx, False) == {"bar.sync": 1, "div.full.f32": 1, "ex2.approx.f32": 1,
                                               "red.global.add.v4.f32": 1, "ret": 1}


def test_code_record_of_each_provider(tmp_path):
    class Asm(dict):
        def __missing__(self, key):
            raise RuntimeError("no cuobjdump here")

    class Compiled:  # what a Triton launch returns: its CompiledKernel, with .asm
        asm = Asm(ptx="\tred.global.add.v4.f32 [%rd1], {%f1, %f2, %f3, %f4};\n\tret;\n")

    rec, ptx = table.code_record(Compiled(), "triton (our kernel)", None)
    assert rec["ptx_ops"] == {"red.global.add.v4.f32": 1, "ret": 1} and "no cuobjdump" in rec["sass_ops_failed"]
    assert ptx == Compiled.asm["ptx"]
    assert table.code_record(None, "triton (our kernel)", None)[0] == {"code": "no asm on the launch's result "
                                                                                "(NoneType)"}
    # ours: the SASS of the cubin the proxy built (none here: empty counts, never an exception)
    assert table.code_record(None, "enceladus", {"path": str(tmp_path / "missing.cubin")}) == ({"sass_ops": {}}, "")


def test_save_puts_tritons_ptx_beside_the_results(tmp_path):
    out = tmp_path / "table.json"
    table.save({"rows": [], "triton_ptx": {"softmax 8 warps": ".version 8.7"}}, str(out))
    assert json.loads(out.read_text()) == {"rows": []}
    assert json.loads((tmp_path / "table.json.triton_ptx.json").read_text()) == {"softmax 8 warps": ".version 8.7"}
    table.save({"rows": [1], "triton_ptx": {}}, str(tmp_path / "b.json"))
    assert not (tmp_path / "b.json.triton_ptx.json").exists()


def test_the_table_loads_every_kernel_and_helper_its_rows_use():
    """The rows reach kernels.py's functions as ``enc_k.NAME``/``tri_k.NAME`` and the examples' as
    ``enc_ex[...]``; a name missing from what run() loads would only fail on the GPU machine."""
    import re

    text = (ROOT / "benchmarks" / "gpu_proxy" / "table.py").read_text()
    used = set(re.findall(r"\benc_k\.(\w+)", text)) | set(re.findall(r"\btri_k\.(\w+)", text))
    assert used and used <= set(table.KERNELS) | set(table.HELPERS), used - set(table.KERNELS) - set(table.HELPERS)
    assert set(re.findall(r"\btri_k\.(\w+)", text)) <= set(table.KERNELS)
    source = (ROOT / "benchmarks" / "gpu_proxy" / "kernels.py").read_text()
    for name in table.KERNELS + table.HELPERS:
        assert f"def {name}(" in source, name


def test_every_enceladus_config_of_the_table_and_sweep_compiles_and_rewrites():
    """Every Enceladus config the device run launches (the table's rows and the sweep's variants), compiled at the
    table's row lengths (fewer rows) and rewritten to CUDA, type-checks against the stub header; a transpose tile
    whose conversion fits in 32 KB loads and stores 16-byte vectors, a larger one keeps narrow loads."""
    from enceladus.backends.cpu import find_compiler

    ex = ROOT / "examples"
    ln = gpu_proxy("source").load_functions(str(ex / "05_layer_norm.py"), ["layer_norm_fwd", "layer_norm_config"],
                                            "enceladus")
    sm = gpu_proxy("source").load_functions(str(ex / "02_softmax.py"), ["softmax_kernel", "softmax_config"],
                                            "enceladus")
    k = gpu_proxy("source").load_functions(str(ROOT / "benchmarks" / "gpu_proxy" / "kernels.py"),
                                           table.KERNELS + table.HELPERS, "enceladus")

    def f(*shape):
        return np.zeros(shape, np.float32)

    msls = []

    def compile_(fn, args, **meta):
        ck = fn.warmup(*args, grid=(1,), **meta)
        msls.append(ck.asm["msl"])
        return ck

    diagnostic = []  # the table's DIAGNOSTIC provider (fast math) runs these: softmax at 8 warps, cross-entropy
    for N in (1024, 4096):
        block, warps = sm.softmax_config(N)
        for w in (warps, 8):
            compile_(sm.softmax_kernel, (f(4, N), f(4, N), N, N, 4, N), BLOCK=block, num_warps=w)
        diagnostic.append(msls[-1])
        block, warps = ln.layer_norm_config(N, 4)
        configs = [(block, warps, block >= N)] + list(table.SWEEP_LN_FWD[(65536, 1024) if N == 1024 else (16384, 4096)])
        for blk, w, one in configs:
            compile_(ln.layer_norm_fwd, (f(4, N), f(4, N), f(N), f(N), f(4), f(4), N, N, 1e-5), BLOCK_SIZE=blk,
                     ONE_TILE=one, num_warps=w)
        for _, w in table.SWEEP_LN_BWD + ((None, k.layer_norm_bwd_dx_warps(N)),):
            w = min(w or (N // 256 if N < 2048 else 8), 16)
            compile_(k.layer_norm_bwd_dx, (f(4, N), f(4, N), f(4, N), f(4, N), f(4, N), f(N), f(4), f(4), N, 4, N),
                     BLOCK_N=N, num_warps=w)
    compile_(k.layer_norm_bwd_dwdb, (f(4, 1024), f(4, 1024), f(1024), f(1024), 4, 1024), BLOCK_P=32, BLOCK_N=128)
    V = 32768
    for blk, w in table.SWEEP_CROSS_ENTROPY + (k.cross_entropy_config(V),):
        compile_(k.cross_entropy_fwd, (f(4, V), np.zeros(4, np.int32), f(4), V, V), BLOCK=blk, num_warps=w)
    diagnostic.append(msls[-1])
    for bm, bn, w in table.SWEEP_TRANSPOSE + (k.transpose_config(),):
        ck = compile_(k.transpose_kernel, (f(1024, 1024), f(1024, 1024), 1024, 1024, 1024, 1024), BLOCK_M=bm,
                      BLOCK_N=bn, num_warps=w)
        widths = {(a.kind, a.vector) for a in ck.accesses}
        fits = bm * (bn + 1) * 4 <= 32 * 1024
        assert widths == ({("load", 4), ("store", 4)} if fits else {("load", 1), ("store", 4)}), (bm, bn, widths)
    for bm, bn, w in table.SWEEP_TRANSPOSE_UNCONVERTED:
        ck = compile_(k.transpose_strided_kernel, (f(1024, 1024), f(1024, 1024), 1024, 1024, 1024, 1, 1024),
                      BLOCK_M=bm, BLOCK_N=bn, num_warps=w)
        assert {(a.kind, a.vector) for a in ck.accesses} == {("load", 1), ("store", 4)}
        assert ck.metadata["threadgroup_memory"] == 0
    compile_(k.seeded_dropout, (f(4096), f(4096), 4096, 0.5, 1234), BLOCK_SIZE=1024)
    for relaxed in (False, True):
        compile_(k.histogram_kernel, (np.zeros(4096, np.int32), np.zeros(256, np.int32), 4096), BLOCK=1024,
                 RELAXED=relaxed)
        compile_(k.atomic_accumulate, (f(4096), f(4096), 4096), BLOCK=1024, RELAXED=relaxed)
    for blk, w, relaxed in table.SWEEP_ATOMIC:
        compile_(k.atomic_accumulate, (f(4096), f(4096), 4096), BLOCK=blk, RELAXED=relaxed, num_warps=w)
        # lanes on consecutive elements at every block size (issue 23: Metal has only scalar atomics), so the
        # sweep compares 8 elements per thread with 1, not 16-byte lane strides with none
        assert "spt=[1]" in msls[-1] and "spt=[4]" not in msls[-1], (blk, w)
    problems = gpu_proxy("check").syntax_check(msls, find_compiler().command)
    assert not problems, "\n".join(problems)[:4000]
    assert all("precise::exp" in m for m in diagnostic)  # exp or exp2: what the diagnostic rewrites
    problems = gpu_proxy("check").syntax_check(diagnostic, find_compiler().command, diagnostic_fast_math=True)
    assert not problems, "\n".join(problems)[:4000]
