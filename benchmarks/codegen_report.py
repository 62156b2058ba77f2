"""Generated-code report: the static facts of each example kernel's MSL that decide its speed on an Apple GPU.

    python benchmarks/codegen_report.py

For each kernel, compiled for the specialization a real launch gets (NumPy arrays of the sizes below, so the
16-byte alignment and divisibility facts are the ones a user sees), it reports threads per threadgroup,
elements per thread of each tile layout (registers' worth), the vector width of every global load/store and
why, threadgroup memory, barriers (in all, and per iteration of each loop), the registers carried across each
loop, and the SIMD-group operations counted from the MSL text. The last column says what a hand-tuned Metal kernel
does for the same job (MLX's kernels; sources in docs/benchmarks.md); for the `tl.dot` rows, the figures of MLX's
steel GEMM and steel attention and of metal-flash-attention stand beside ours, derived from their source text
with repository, commit, file and line cited (benchmarks/reference_kernels.py).

Nothing here runs a kernel or needs a GPU. Prints a table and writes benchmarks/results/codegen_report.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from compile_latency import import_path, write_modules  # noqa: E402
from machine import describe  # noqa: E402
from reference_kernels import REFERENCES, derive  # noqa: E402

# What MLX (hand-written Metal, Apple's own framework) does for the same job; see docs/benchmarks.md for sources.
HAND_TUNED = {
    "vector add": "MLX binary_vv: one thread per 8 bytes (2 fp32, `WorkPerThread<T>::n = 8 / sizeof(T)`), "
                  "scalar loads, no threadgroup memory, no barriers, no SIMD-group ops",
    "softmax": "MLX softmax_single_row (rows <= 4096): 4 elements per thread (SOFTMAX_N_READS), threads = "
               "ceil(N/4) rounded up to 32 (256 for N=1024), 2 x 32 floats of threadgroup memory, 5 barriers, "
               "2 simd_max + 2 simd_sum, fast::exp",
    "layer norm": "MLX layer_norm_single_row: one pass over the row kept in registers (N_READS = 4 or 8 per "
                  "thread), sum and sum of squares together, ~264 B threadgroup memory, 3 barriers, 4 simd_sum",
    "matmul": "MLX steel GEMM: simdgroup_matrix 8x8 MMA, tiles staged in threadgroup memory, e.g. 32x32x16 "
              "or 64x64x16 blocks with 2x2 SIMD groups",
    "tutorial matmul fp16": "MLX steel GEMM: operand tiles loaded into threadgroup memory with 16-byte reads, "
                            "simdgroup_matrix 8x8 MMA, e.g. 32x32x16 or 64x64x16 blocks with 2x2 SIMD groups",
    "tutorial matmul fp32": "MLX steel GEMM: operand tiles loaded into threadgroup memory with 16-byte reads, "
                            "simdgroup_matrix 8x8 MMA, e.g. 32x32x16 or 64x64x16 blocks with 2x2 SIMD groups",
    "matmul matmul2d fp32 64x64x64": "MLX steel GEMM: simdgroup_matrix 8x8 MMA, tiles staged in threadgroup memory "
                                     "(no Metal 4 tensor-op GEMM in MLX at the cited commit)",
    "tutorial matmul fp16 matmul2d": "MLX steel GEMM: operand tiles loaded into threadgroup memory with 16-byte reads, "
                                     "simdgroup_matrix 8x8 MMA (no Metal 4 tensor-op GEMM in MLX at the cited commit)",
    "flash attention": "MLX steel_attention: Q staged once in threadgroup memory, K and V staged in turn in one "
                       "shared buffer, simdgroup_matrix MMAs on 4x1 SIMD groups, online softmax with the row "
                       "reductions inside each SIMD group (figures and sources: `references`)",
}

LOOP_HEADER = re.compile(r"^    (?:for \((?:int|uint|long|ulong|short|ushort|char|uchar) i\d+ = |while \(true\) \{)")
CARRIED = re.compile(r"^\s*(.*?)\bc\d+(?:\[(\d+)\])?(?: = .*)?;$")
# the declarations of a matmul2d accumulator kept in a cooperative tensor across the loop (codegen_msl/matmul.py)
COOP = re.compile(r"^\s*(?://|using enc_T[AB]\d+ |constexpr auto enc_desc\d+ |matmul2d<enc_desc|auto enc_acc\d+ |"
                  r"enc_T[AB]\d+ |for \(uint16_t i = 0; i < enc_acc)")
DESCRIPTOR = re.compile(r"matmul2d_descriptor\((\d+), (\d+), ")
THREADS = re.compile(r"max_total_threads_per_threadgroup\((\d+)\)")
_BYTES = {"float": 4, "int": 4, "uint": 4, "half": 2, "bfloat": 2, "short": 2, "ushort": 2, "char": 1, "uchar": 1,
          "bool": 1, "long": 8, "ulong": 8, "auto": 8}  # `auto` declares a scalar pointer


def loops(msl: str) -> list[dict[str, Any]]:
    """Each loop of the kernel body's top level: the barriers one iteration passes (static sites inside it) and
    the bytes per thread carried across it (the loop-carried variables declared just before it, and a matmul2d
    accumulator kept in a cooperative tensor: its m x n floats spread over the threadgroup, at least
    ceil(m n / threads) per thread; Apple's spread is implementation-defined)."""
    threads = THREADS.search(msl)
    lines = kernel_body(msl).splitlines()
    out = []
    for i, line in enumerate(lines):
        if not LOOP_HEADER.match(line):
            continue
        depth, end = 0, i
        for end in range(i, len(lines)):
            depth += lines[end].count("{") - lines[end].count("}")
            if depth == 0:
                break
        carried, j = 0, i - 1
        while j >= 0 and (CARRIED.match(lines[j].split("//")[0].rstrip()) or COOP.match(lines[j])
                          or lines[j].strip().startswith("for (int e = 0;")):
            m = CARRIED.match(lines[j].split("//")[0].rstrip())
            if COOP.match(lines[j]):
                d = DESCRIPTOR.search(lines[j])
                if d and threads:
                    carried += -(-int(d[1]) * int(d[2]) // int(threads[1])) * 4
            elif m and not lines[j].strip().startswith("for ("):
                decl = m[1].split()
                size = 8 if "*" in m[1] else _BYTES[decl[-1]]
                carried += size * int(m[2] or 1)
            j -= 1
        out.append({"msl_line": i, "barriers_per_iteration": sum("threadgroup_barrier(" in ln for ln in lines[i:end + 1]),
                    "carried_bytes_per_thread": carried, "carried_32bit_registers": (carried + 3) // 4})
    return out


SIMD_CALL = re.compile(r"\b(simd_\w+|simdgroup_\w+|quad_\w+|enc_shfl_xor)\s*\(")
BUTTERFLY = re.compile(r"for \(ushort m = 1; m < 32; m <<= 1\)")


def kernel_body(msl: str) -> str:
    """The text of the kernel function itself (helpers before it are counted where they are called)."""
    i = msl.find("kernel void")
    return msl[i:] if i >= 0 else msl


def simd_ops(msl: str) -> dict[str, Any]:
    body = kernel_body(msl)
    counts: dict[str, int] = {}
    for name in SIMD_CALL.findall(body):
        name = "simd_shuffle_xor" if name == "enc_shfl_xor" else name
        counts[name] = counts.get(name, 0) + 1
    return {"call_sites": counts, "butterfly_loops": len(BUTTERFLY.findall(body)),
            "note": "static call sites in the kernel body; each butterfly loop runs its shuffles 5 times (lanes 32)"}


def cases(modules: dict[str, tuple[Path, Path]]) -> list[tuple[str, Any, tuple, dict[str, Any]]]:
    """(name, kernel, launch arguments, constexprs and options) for each report row."""
    rng = np.random.default_rng(0)
    out = []
    mod = import_path(modules["examples/01_vector_add.py"][0])
    n = 1 << 20
    x, y, z = (rng.standard_normal(n, dtype=np.float32) for _ in range(3))
    out.append(("vector add", mod.add_kernel, (x, y, z, n), {"BLOCK": 1024, "num_warps": 4}))

    mod = import_path(modules["examples/02_softmax.py"][0])
    a = rng.standard_normal((4096, 1024), dtype=np.float32)
    o = np.empty_like(a)
    out.append(("softmax", mod.softmax_kernel, (o, a, 1024, 1024, 4096, 1024), {"BLOCK": 1024, "num_warps": 4}))

    mod = import_path(modules["examples/05_layer_norm.py"][0])
    w = np.ones(1024, np.float32)
    b = np.zeros(1024, np.float32)
    mean = np.empty(4096, np.float32)
    rstd = np.empty(4096, np.float32)
    out.append(("layer norm", mod.layer_norm_fwd, (a, o, w, b, mean, rstd, 1024, 1024, 1e-5),
                {"BLOCK_SIZE": 1024, "ONE_TILE": True, "num_warps": 4}))  # as layer_norm() picks at N = 1024

    mod = import_path(modules["MATMUL"][0])
    m = 512
    A, B, C = (rng.standard_normal((m, m), dtype=np.float32) for _ in range(3))
    out.append(("matmul", mod.matmul_kernel, (A, B, C, m, m, m, m, 1, m, 1, m, 1),
                {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4}))

    # the tutorial matmul itself (examples/03: grouped ordering, a fused activation, @autotune), at its first
    # config: its operand pointer tiles are carried across the K loop (`a_ptrs += BLOCK_K * stride_ak`)
    mod = import_path(ROOT / "examples" / "03_matmul.py")
    config = mod.matmul_kernel.configs[0]
    for dtype, tag in ((np.float16, "fp16"), (np.float32, "fp32")):
        A, B, C = (rng.standard_normal((m, m)).astype(dtype) for _ in range(3))
        out.append((f"tutorial matmul {tag}", mod.matmul_kernel.fn, (A, B, C, m, m, m, m, 1, m, 1, m, 1),
                    {**config.kwargs, "ACTIVATION": "leaky_relu", "num_warps": config.num_warps}))

    # Metal 4 tensor ops (dot_backend="matmul2d"): the accumulator kept in a cooperative tensor across the K loop
    mod = import_path(modules["MATMUL"][0])
    A, B, C = (rng.standard_normal((m, m), dtype=np.float32) for _ in range(3))
    out.append(("matmul matmul2d fp32 64x64x64", mod.matmul_kernel, (A, B, C, m, m, m, m, 1, m, 1, m, 1),
                {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "num_warps": 4, "dot_backend": "matmul2d"}))
    mod = import_path(ROOT / "examples" / "03_matmul.py")
    A, B, C = (rng.standard_normal((m, m)).astype(np.float16) for _ in range(3))
    out.append(("tutorial matmul fp16 matmul2d", mod.matmul_kernel.fn, (A, B, C, m, m, m, m, 1, m, 1, m, 1),
                {**config.kwargs, "ACTIVATION": "leaky_relu", "num_warps": config.num_warps, "dot_backend": "matmul2d"}))

    mod = import_path(modules["FLASH_ATTENTION"][0])
    q, k, v, oo = (rng.standard_normal((4, 1024, 64)).astype(np.float16) for _ in range(4))
    out.append(("flash attention", mod.attn_fwd, (q, k, v, oo, 64, 64, 64, 64, 1024, 0.125),
                {"BLOCK_M": 64, "BLOCK_N": 64, "HEAD_DIM": 64, "num_warps": 4}))
    return out


def report(name: str, kernel: Any, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
    try:
        ck = kernel.warmup(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - a refusal is a result
        lines = str(e).strip().splitlines()
        reason = next((ln for ln in lines if ln.startswith("error:")), lines[-1] if lines else type(e).__name__)
        return {"kernel": name, "status": "not yet compiled", "reason": reason.removeprefix("error: "),
                "hand_tuned": HAND_TUNED[name]}
    msl = ck.asm["msl"]
    layouts = [{"layout": str(lay), "elements_per_thread": lay.elems_per_thread} for lay in ck.metadata["layouts"]]
    accesses = [{"kind": a.kind, "line": a.line, "dtype": a.dtype, "shape": list(a.shape), "vector": a.vector,
                 "bytes": a.bytes, "reason": a.reason} for a in ck.accesses]
    return {
        "kernel": name, "status": "ok", "launch": dict(kwargs.items()),
        "threads_per_threadgroup": ck.abi.threads_per_threadgroup,
        "simd_groups": ck.metadata["num_warps"],
        "layouts": layouts,
        "max_elements_per_thread": max((lay["elements_per_thread"] for lay in layouts), default=0),
        "accesses": accesses,
        "threadgroup_memory_bytes": ck.abi.threadgroup_memory,
        "barriers": msl.count("threadgroup_barrier("),
        "loops": loops(msl),
        "simd_ops": simd_ops(msl),
        "msl_lines": msl.count("\n"),
        "notes": list(ck.metadata.get("notes", [])),
        "hand_tuned": HAND_TUNED[name],
        "references": [derive(ref, min(a["bytes"] // a["vector"] for a in accesses if a["kind"] == "load"))
                       for ref in REFERENCES if name in ref.compare],
    }


def access_summary(r: dict[str, Any]) -> str:
    parts = []
    for a in r["accesses"]:
        parts.append(f"{a['kind'][0]}{a['vector']}x{a['dtype']}")
    return " ".join(parts)


def compute_rows() -> list[dict[str, Any]]:
    """The report's rows: deterministic (no timing), so the committed JSON must equal them (tests/test_benchmarks.py)."""
    rows = []
    old_cache = os.environ.get("ENCELADUS_CACHE_DIR")
    try:
        with tempfile.TemporaryDirectory(prefix="enceladus-codegen-report-") as tmp:
            os.environ["ENCELADUS_CACHE_DIR"] = str(Path(tmp) / "cache")  # compile now; leave the user's cache alone
            modules = write_modules(Path(tmp))
            for name, kernel, args, kwargs in cases(modules):
                rows.append(report(name, kernel, args, kwargs))
    finally:
        if old_cache is None:
            os.environ.pop("ENCELADUS_CACHE_DIR", None)
        else:
            os.environ["ENCELADUS_CACHE_DIR"] = old_cache
    return json.loads(json.dumps(rows, default=str))  # as the JSON file holds them


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "codegen_report.json"))
    opts = ap.parse_args()
    os.environ.pop("ENCELADUS_DUMP", None)
    rows = compute_rows()

    head = f"{'kernel':<30} {'threads':>7} {'elems/thr':>9} {'tg mem':>7} {'barriers':>8}  {'accesses (l/s, vector x dtype)':<34} simd ops"
    print(head)
    print("-" * len(head))
    for r in rows:
        if r["status"] != "ok":
            print(f"{r['kernel']:<30} {r['status']}: {r['reason']}")
            continue
        ops = ", ".join(f"{k} x{v}" for k, v in sorted(r["simd_ops"]["call_sites"].items())) or "-"
        print(f"{r['kernel']:<30} {r['threads_per_threadgroup']:>7} {r['max_elements_per_thread']:>9} "
              f"{r['threadgroup_memory_bytes']:>6}B {r['barriers']:>8}  {access_summary(r):<34} {ops}")
    print("\nthe dot path beside hand-tuned Metal (figures derived from the cited source: benchmarks/reference_kernels.py)")
    print(f"{'kernel':<30} {'barriers/step':>13} {'carried regs':>12} {'tg bytes':>9}  global reads per thread")
    for r in rows:
        if r["status"] != "ok" or not r["references"]:
            continue
        loop = r["loops"][0] if r["loops"] else {}
        reads = " ".join(f"{a['vector'] * (a['bytes'] // a['vector'])}B" for a in r["accesses"] if a["kind"] == "load")
        print(f"{r['kernel']:<30} {loop.get('barriers_per_iteration', 0):>13} "
              f"{loop.get('carried_32bit_registers', 0):>12} {r['threadgroup_memory_bytes']:>9}  {reads}")
        for ref in r["references"]:
            rd = " ".join(f"{op}:{v['bytes']}B" for op, v in ref.get("reads_per_thread", {}).items()) or "async copy"
            print(f"  {ref['name'] + ' @' + ref['commit'][:7]:<28} {ref.get('barriers_per_step', '-'):>13} "
                  f"{'':>12} {ref.get('threadgroup_bytes', '-'):>9}  {rd}")
    print("\nhand-tuned Metal for the same job (MLX):")
    for r in rows:
        print(f"  {r['kernel']}: {r['hand_tuned']}")
    out = Path(opts.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"benchmark": "codegen_report", "machine": describe(), "results": rows}, indent=2,
                              default=str) + "\n")
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")


if __name__ == "__main__":
    main()
