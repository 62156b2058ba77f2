"""The hand-tuned Metal kernels the `tl.dot` path is measured against, with figures derived from their source.

MLX's steel GEMM and steel attention (ml-explore/mlx) and metal-flash-attention (philipturner/metal-flash-attention):
for each, the repository, commit, file and line of every source line a figure comes from, with the line's text
quoted exactly (leading spaces dropped; a quote over several lines joins them with one space). The figures are
computed from those quotes here (``derive``): barriers per step are the quoted `threadgroup_barrier` lines inside
the quoted loop's line range, threadgroup bytes and elements per read are the quoted C++ expressions evaluated
with the quoted instantiation's parameters. Nothing is typed in as a number.

    python benchmarks/reference_kernels.py --mlx PATH_TO_MLX_GIT --mfa PATH_TO_MFA_GIT

checks every quote against a checkout (a git directory or work tree holding the cited commit), and re-derives
each loop's barrier count from the whole file (the loop's body found by matching braces).
"""

from __future__ import annotations

import argparse
import ast
import operator
import re
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any

MLX = ("ml-explore/mlx", "846d176227a0ac13d2667e58d2bb68b322109ab0")
MFA = ("philipturner/metal-flash-attention", "8671cddc38f19a6eadb804dee6a3ca2954b8bf32")
STEEL = "mlx/backend/metal/kernels/steel/"
MFA_ATTN = "Sources/FlashAttention/Attention/AttentionKernel/"
BARRIER = "threadgroup_barrier(mem_flags::mem_threadgroup);"


@dataclass(frozen=True)
class Quote:
    path: str
    line: int
    text: str
    lines: int = 1  # a declaration spread over several source lines


@dataclass
class Reference:
    name: str
    source: tuple[str, str]  # (repository, commit)
    compare: tuple[str, ...]  # the codegen_report rows it stands beside
    instance: Quote | None = None  # the instantiation whose numbers fill `params`, in order
    params: tuple[str, ...] = ()
    loop: Quote | None = None  # the loop over K (or over key/value blocks)
    loop_end: int = 0  # the line of its closing brace
    barriers: tuple[Quote, ...] = ()  # every barrier line of the loop
    definitions: tuple[Quote, ...] = ()  # `name = expression` and `T name[expression]` lines
    reads: dict[str, dict[str, str]] = field(default_factory=dict)  # operand -> loader parameters (expressions)
    threadgroup: tuple[str, ...] = ()  # the names whose element counts add up to the threadgroup memory
    notes: tuple[Quote, ...] = ()  # lines quoted for what they show (no figure computed from them)
    summary: str = ""


GEMM_LOADER = Quote(STEEL + "gemm/loader.h", 22, "short n_reads = (BCOLS * BROWS) / (tgp_size),")

REFERENCES = [
    Reference(
        "MLX steel GEMM", MLX, ("matmul", "tutorial matmul fp16", "tutorial matmul fp32",
                                 "matmul matmul2d fp32 64x64x64", "tutorial matmul fp16 matmul2d"),
        instance=Quote(STEEL + "gemm/kernels/steel_gemm_fused.metal", 22,
                       "instantiate_gemm_transpose_helper(iname, itype, oname, otype, 64, 64, 16, 2, 2) \\"),
        params=("BM", "BN", "BK", "WM", "WN"),
        loop=Quote(STEEL + "gemm/kernels/steel_gemm_fused.h", 174, "for (int k = 0; k < gemm_k_iterations; k++) {"),
        loop_end=188,
        barriers=(Quote(STEEL + "gemm/kernels/steel_gemm_fused.h", 175, BARRIER),
                  Quote(STEEL + "gemm/kernels/steel_gemm_fused.h", 180, BARRIER)),
        definitions=(
            Quote(STEEL + "gemm/gemm.h", 38, "STEEL_CONST short tgp_padding_a = 16 / sizeof(T);"),
            Quote(STEEL + "gemm/gemm.h", 39, "STEEL_CONST short tgp_padding_b = 16 / sizeof(T);"),
            Quote(STEEL + "gemm/gemm.h", 40, "STEEL_CONST short tgp_mem_size_a = transpose_a ? BK * (BM + "
                  "tgp_padding_a) : BM * (BK + tgp_padding_a);", lines=2),
            Quote(STEEL + "gemm/gemm.h", 42, "STEEL_CONST short tgp_mem_size_b = transpose_b ? BN * (BK + "
                  "tgp_padding_b) : BK * (BN + tgp_padding_b);", lines=2),
            GEMM_LOADER,
        ),
        # loader_a_t / loader_b_t (gemm.h lines 46-59): A's block is BM x BK, B's BK x BN (not transposed)
        reads={"A": {"BROWS": "BM", "BCOLS": "BK"}, "B": {"BROWS": "BK", "BCOLS": "BN"}},
        threadgroup=("tgp_mem_size_a", "tgp_mem_size_b"),
        notes=(Quote(STEEL + "gemm/loader.h", 77, "*((threadgroup ReadVector*)(&dst[i * dst_ld])) = "
                     "*((const device ReadVector*)(&src[i * src_ld]));", lines=2),
               # the result is stored from the 8x8 fragments, kElemCols = 2 adjacent elements per lane
               Quote(STEEL + "gemm/mma.h", 40, "STEEL_CONST int kElemCols = 2;"),
               Quote(STEEL + "gemm/mma.h", 109, "dst[i * str_x + j * str_y] = static_cast<U>(src[i * kElemCols + j]);")),
        summary="A and B blocks staged with one ReadVector (n_reads elements) per thread per row step, "
                "simdgroup_matrix 8x8 MMAs, a barrier before and after the staging; C stored from the fragments, "
                "2 elements per lane",
    ),
    Reference(
        "MLX steel attention", MLX, ("flash attention",),
        instance=Quote(STEEL + "attn/kernels/steel_attention.metal", 21,
                       "instantiate_attn(iname, itype, 32, 32,  64, 4, 1, mname, mtype)"),
        params=("BQ", "BK", "BD", "WM", "WN"),
        loop=Quote(STEEL + "attn/kernels/steel_attention.h", 250, "for (int kb = 0; kb < kb_lim; kb++) {"),
        loop_end=457,
        barriers=tuple(Quote(STEEL + "attn/kernels/steel_attention.h", n, BARRIER) for n in (252, 262, 372, 423)),
        definitions=(
            Quote(STEEL + "attn/kernels/steel_attention.h", 111, "constexpr short padQ = 16 / sizeof(T);"),
            Quote(STEEL + "attn/kernels/steel_attention.h", 112, "constexpr short padK = 16 / sizeof(T);"),
            Quote(STEEL + "attn/kernels/steel_attention.h", 113, "constexpr short padV = 16 / sizeof(T);"),
            Quote(STEEL + "attn/kernels/steel_attention.h", 119, "constexpr short tgp_mem_0 = (BK + padK) * (BD);"),
            Quote(STEEL + "attn/kernels/steel_attention.h", 120, "constexpr short tgp_mem_1 = BK * (BD + padV);"),
            Quote(STEEL + "attn/kernels/steel_attention.h", 121,
                  "constexpr short tgp_mem_s = tgp_mem_0 > tgp_mem_1 ? tgp_mem_0 : tgp_mem_1;"),
            Quote(STEEL + "attn/kernels/steel_attention.h", 123, "threadgroup T Q_smem[BQ * (BD + padQ)];"),
            Quote(STEEL + "attn/kernels/steel_attention.h", 124, "threadgroup T KV_smem[tgp_mem_s];"),
            Quote(STEEL + "attn/loader.h", 150, "short n_reads = (BCOLS * BROWS) / (tgp_size),"),
        ),
        # QBlockLoader, KBlockLoader, VBlockLoader (steel_attention.h lines 131-157): Q is BQ x BD, K and V BK x BD
        reads={"Q": {"BROWS": "BQ", "BCOLS": "BD"}, "K": {"BROWS": "BK", "BCOLS": "BD"},
               "V": {"BROWS": "BK", "BCOLS": "BD"}},
        threadgroup=("Q_smem", "KV_smem"),
        notes=(Quote(STEEL + "attn/kernels/steel_attention.h", 128, "threadgroup T* Vs = KV_smem;"),
               Quote(STEEL + "attn/loader.h", 201, "for (short i = 0; i < BROWS; i += TROWS) {"),
               Quote(STEEL + "attn/loader.h", 204, "dst[i * kDstStrRow + j * kDstStrCol] = src[i * src_ld + j];"),
               Quote(STEEL + "attn/mma.h", 54, "STEEL_CONST int kElemCols = 2;"),
               Quote(STEEL + "attn/mma.h", 134, "dst[i * str_x + j * str_y] = static_cast<U>(src[i * kElemCols + j]);")),
        summary="Q staged once in threadgroup memory (re-read into fragments every block), K and V share one "
                "buffer, n_reads contiguous elements per thread copied element by element (K transposed on "
                "the way), row reductions inside each SIMD group (WN = 1), O stored from the fragments, 2 elements "
                "per lane",
    ),
    Reference(
        "metal-flash-attention", MFA, ("flash attention",),
        barriers=(Quote(MFA_ATTN + "AttentionKernel+OuterProduct.swift", 104, BARRIER),
                  Quote(MFA_ATTN + "AttentionKernel+OuterProduct.swift", 93, BARRIER)),
        notes=(Quote(MFA_ATTN + "AttentionKernel+OuterProduct.swift", 105, "if (sidx == 0) {"),
               Quote(MFA_ATTN + "AttentionKernel+OuterProduct.swift", 124, "event.async_copy("),
               Quote(MFA_ATTN + "AttentionKernel+OuterProduct.swift", 127, "simdgroup_event::wait(1, &event);")),
        summary="kernel text generated in Swift: each operand block is copied device -> threadgroup by SIMD "
                "group 0 with simdgroup_event::async_copy (no per-thread loads), a barrier before the copy and "
                "one after; blocks per step and block sizes come from per-device tables "
                "(AttentionDescriptor+Parameters.swift), so no single count per step is derived here",
    ),
]


# --- a tiny evaluator for the quoted C++ constant expressions ------------------------------------------------------
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.floordiv,
        ast.Gt: operator.gt, ast.Lt: operator.lt, ast.GtE: operator.ge, ast.LtE: operator.le}


def _eval(node: ast.AST, env: dict[str, int]) -> int:
    if isinstance(node, ast.Expression):
        return _eval(node.body, env)
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_eval(node.left, env), _eval(node.right, env))
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _OPS:
        return _OPS[type(node.ops[0])](_eval(node.left, env), _eval(node.comparators[0], env))
    if isinstance(node, ast.IfExp):
        return _eval(node.body, env) if _eval(node.test, env) else _eval(node.orelse, env)
    raise ValueError(f"not a constant expression this evaluator reads: {ast.dump(node)}")


def c_value(expr: str, env: dict[str, int]) -> int:
    """The value of a C++ integer constant expression (names, + - * /, comparisons, one ?: at the top)."""
    expr = expr.strip().rstrip(";,").replace("gemm_kernel::", "")
    expr = re.sub(r"sizeof\(T\)", "sizeof_T", expr)
    m = re.fullmatch(r"(.+?)\?(.+?):(.+)", expr)
    if m:
        expr = f"({m[2]}) if ({m[1]}) else ({m[3]})"
    return _eval(ast.parse(expr, mode="eval"), env)


def definitions(quotes: tuple[Quote, ...], env: dict[str, int]) -> dict[str, int]:
    """Evaluate ``... name = expression;`` and ``threadgroup T name[expression];`` lines in order."""
    env = dict(env)
    for q in quotes:
        m = re.fullmatch(r"threadgroup \w+ (\w+)\[(.+)\];", q.text) or re.fullmatch(r"(?:[\w:]+ )*(\w+) = (.+)",
                                                                                      q.text)
        if not m:
            raise ValueError(f"{q.path}:{q.line}: not a definition: {q.text!r}")
        if m[1] == "n_reads":  # the loader's default template argument, evaluated per operand in derive()
            env["n_reads_expr"] = m[2]
            continue
        env[m[1]] = c_value(m[2], env)
    return env


def derive(ref: Reference, itemsize: int) -> dict[str, Any]:
    """The figures of ``ref`` for elements of ``itemsize`` bytes, computed from its quotes."""
    out: dict[str, Any] = {"name": ref.name, "repository": ref.source[0], "commit": ref.source[1],
                           "summary": ref.summary}
    env: dict[str, int] = {"sizeof_T": itemsize, "transpose_a": 0, "transpose_b": 0}
    if ref.instance is not None:
        numbers = [int(x) for x in re.findall(r"(?<![\w])(\d+)(?![\w])", ref.instance.text)]
        env.update(zip(ref.params, numbers))
        out["config"] = {p: env[p] for p in ref.params}
        out["config_from"] = f"{ref.instance.path}:{ref.instance.line}"
    env = definitions(ref.definitions, env)
    if ref.loop is not None:
        inside = [q for q in ref.barriers if q.path == ref.loop.path and ref.loop.line < q.line < ref.loop_end
                  and q.text == BARRIER]
        out["barriers_per_step"] = len(inside)
        out["loop"] = f"{ref.loop.path}:{ref.loop.line}-{ref.loop_end}"
    out["barrier_lines"] = [f"{q.path}:{q.line}" for q in ref.barriers]
    if ref.reads:
        tgp = env["WM"] * env["WN"] * 32
        reads = {}
        for operand, dims in ref.reads.items():
            n = c_value(env["n_reads_expr"], {**env, "tgp_size": tgp, **{k: env[v] for k, v in dims.items()}})
            reads[operand] = {"elements": n, "bytes": n * itemsize}
        out["reads_per_thread"] = reads
    if ref.threadgroup:
        out["threadgroup_bytes"] = sum(env[name] for name in ref.threadgroup) * itemsize
    out["quotes"] = [f"{q.path}:{q.line}: {q.text}" for q in (ref.instance, ref.loop, *ref.barriers,
                                                              *ref.definitions, *ref.notes) if q is not None]
    return out


# --- checking the quotes against a checkout ---------------------------------------------------------------------------
def source_lines(git_dir: str, commit: str, path: str) -> list[str]:
    text = subprocess.run(["git", "--git-dir", git_dir, "show", f"{commit}:{path}"], check=True,
                          capture_output=True, text=True).stdout
    return text.splitlines()


def check(ref: Reference, git_dir: str) -> list[str]:
    """Mismatches between ``ref``'s quotes and the cited commit; and the loop's barriers counted from the file."""
    problems = []
    files: dict[str, list[str]] = {}
    quotes = [q for q in (ref.instance, ref.loop, *ref.barriers, *ref.definitions, *ref.notes) if q is not None]
    for q in quotes:
        lines = files.setdefault(q.path, source_lines(git_dir, ref.source[1], q.path))
        got = " ".join(s.strip() for s in lines[q.line - 1: q.line - 1 + q.lines])
        if got != q.text:
            problems.append(f"{q.path}:{q.line}: quoted {q.text!r}, the source has {got!r}")
    if ref.loop is not None:
        lines = files[ref.loop.path]
        depth, end = 0, None
        for i in range(ref.loop.line - 1, len(lines)):
            depth += lines[i].count("{") - lines[i].count("}")
            if depth == 0:
                end = i + 1
                break
        if end != ref.loop_end:
            problems.append(f"{ref.loop.path}: the loop at line {ref.loop.line} ends at line {end}, not {ref.loop_end}")
        counted = sum(1 for s in lines[ref.loop.line: (end or 0) - 1] if s.strip() == BARRIER)
        if counted != len([q for q in ref.barriers if ref.loop.line < q.line < ref.loop_end]):
            problems.append(f"{ref.loop.path}: {counted} barriers in the loop, the quotes have a different count")
    return problems


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mlx", help="git directory of an ml-explore/mlx checkout holding the cited commit")
    ap.add_argument("--mfa", help="git directory of a philipturner/metal-flash-attention checkout")
    opts = ap.parse_args()
    bad = 0
    for ref in REFERENCES:
        git_dir = opts.mlx if ref.source == MLX else opts.mfa
        if git_dir:
            problems = check(ref, git_dir)
            bad += len(problems)
            print(f"{ref.name}: {'every quote matches ' + ref.source[1][:10] if not problems else ''}")
            for p in problems:
                print("  " + p)
        for size in (2, 4):
            d = derive(ref, size)
            print(f"  {size}-byte elements: " + ", ".join(f"{k}={d[k]}" for k in
                                                          ("barriers_per_step", "reads_per_thread", "threadgroup_bytes")
                                                          if k in d))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
