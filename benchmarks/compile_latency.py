"""Compile latency: Python -> MSL with Enceladus, side by side with upstream Triton's compile of the same source.

    python benchmarks/compile_latency.py [--repeat 30] [--triton-repeat 5]

For each kernel the *same source text* is written to two temporary modules that differ only in their two
import lines (``import enceladus`` / ``import enceladus.language as tl`` versus ``import triton as enceladus``
/ ``import triton.language as tl``). Vector add, softmax and layer norm are taken from examples/; matmul and
flash attention are the Triton-tutorial-style kernels below.

* Enceladus: ``enceladus.compile(...)`` on a **new** ``JITFunction`` each time (source parsed again, no
  memory or disk cache involved), median over ``--repeat`` compiles after one warm-up. The time is split
  into frontend (parse, inline, type-check, build IR), passes (axis info, layouts) and MSL codegen.
* Triton (when installed): the stages of ``triton.compile`` run by hand on a new ``JITFunction`` each time,
  with a CUDA target (``GPUTarget("cuda", 90, 32)``; no GPU is needed): Python -> TTIR -> TTGIR (its first
  target-specific IR) -> LLVM IR -> PTX, cumulative, median over ``--triton-repeat``. Triton's cache is not
  consulted. The ratios are Triton's time to TTGIR and to PTX over Enceladus's time to MSL.

Prints a table and writes benchmarks/results/compile_latency.json.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import statistics
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import describe, one_line  # noqa: E402

PUBLISHED_TARGET_MS = 0.37  # the product's published vector add compile time, measured by its authors on an M4 Pro

MATMUL = '''
@enceladus.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k * BLOCK_K), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k * BLOCK_K) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
'''

FLASH_ATTENTION = '''
@enceladus.jit
def attn_fwd(Q, K, V, Out, stride_qm, stride_kn, stride_vn, stride_om, N_CTX, sm_scale,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr):
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    base = off_hz * N_CTX * HEAD_DIM
    q = tl.load(Q + base + offs_m[:, None] * stride_qm + offs_d[None, :])
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    for start_n in range(0, N_CTX, BLOCK_N):
        k = tl.load(K + base + (start_n + offs_n)[None, :] * stride_kn + offs_d[:, None])
        qk = tl.dot(q, k) * qk_scale
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp2(qk - m_ij[:, None])
        alpha = tl.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + base + (start_n + offs_n)[:, None] * stride_vn + offs_d[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(Out + base + offs_m[:, None] * stride_om + offs_d[None, :], acc.to(Out.dtype.element_ty))
'''


def _i32(*names: str) -> dict[str, str]:
    return dict.fromkeys(names, "i32")


# name, where the kernel source comes from, kernel function, runtime signature, constexprs, num_warps
KERNELS: list[tuple[str, str, str, dict[str, str], dict[str, Any], int]] = [
    ("vector add", "examples/01_vector_add.py", "add_kernel",
     {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {"BLOCK": 1024}, 4),
    ("softmax", "examples/02_softmax.py", "softmax_kernel",
     {"out_ptr": "*fp32", "in_ptr": "*fp32", **_i32("in_row_stride", "out_row_stride", "n_rows", "n_cols")},
     {"BLOCK": 1024}, 4),
    ("layer norm", "examples/05_layer_norm.py", "layer_norm_fwd",
     {"X": "*fp32", "Y": "*fp32", "W": "*fp32", "B": "*fp32", "Mean": "*fp32", "Rstd": "*fp32", "stride": "i32",
      "N": "i32", "eps": "fp32"}, {"BLOCK_SIZE": 1024}, 4),
    ("matmul", "MATMUL", "matmul_kernel",
     {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32",
      **_i32("M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn")},
     {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, 4),
    ("flash attention", "FLASH_ATTENTION", "attn_fwd",
     {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "Out": "*fp16",
      **_i32("stride_qm", "stride_kn", "stride_vn", "stride_om", "N_CTX"), "sm_scale": "fp32"},
     {"BLOCK_M": 64, "BLOCK_N": 64, "HEAD_DIM": 64}, 4),
]

ENCELADUS_IMPORTS = "import enceladus\nimport enceladus.language as tl\n"
TRITON_IMPORTS = "import triton as enceladus\nimport triton.language as tl\n"


def kernel_source(origin: str) -> str:
    """The @jit functions of an example file (module-level host code left out), or an inline source above."""
    if origin in globals():
        return globals()[origin]
    text = (ROOT / origin).read_text()
    tree = ast.parse(text)
    parts = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in node.decorator_list):
            start = node.decorator_list[0].lineno - 1
            parts.append("\n".join(text.splitlines()[start:node.end_lineno]))
    return "\n\n\n".join(parts) + "\n"


def write_modules(tmp: Path) -> dict[str, tuple[Path, Path]]:
    """Two modules per kernel, identical but for the import lines."""
    out = {}
    for i, (_, origin, *_rest) in enumerate(KERNELS):
        src = kernel_source(origin)
        enc = tmp / f"enc_kernel_{i}.py"
        tri = tmp / f"tri_kernel_{i}.py"
        enc.write_text(ENCELADUS_IMPORTS + "\n\n" + src)
        tri.write_text(TRITON_IMPORTS + "\n\n" + src)
        out[origin] = (enc, tri)
    return out


def import_path(path: Path) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = mod
    spec.loader.exec_module(mod)
    return mod


class PhaseTimer:
    """Wraps the driver's phase functions to split a compile into frontend / passes / codegen."""

    def __init__(self) -> None:
        self.times: dict[str, list[float]] = {"frontend": [], "passes": [], "codegen": []}
        self._pending: dict[str, float] = {}
        self.installed = False

    def install(self) -> None:
        try:
            from enceladus.compiler import driver
        except ImportError:
            return
        wrap = [("lower_kernel", "frontend"), ("axis_info.analyze", "passes"), ("layouts.assign_layouts", "passes"),
                ("MSLEmitter.generate", "codegen")]
        for dotted, phase in wrap:
            owner = driver
            *path, attr = dotted.split(".")
            for p in path:
                owner = getattr(owner, p, None)
            if owner is None or not hasattr(owner, attr):
                return
            setattr(owner, attr, self._timed(getattr(owner, attr), phase))
        self.installed = True

    def _timed(self, fn: Any, phase: str) -> Any:
        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self._pending[phase] = self._pending.get(phase, 0.0) + time.perf_counter() - t0
        return timed

    def start(self) -> None:
        self._pending = {}

    def stop(self) -> None:
        for phase in self.times:
            self.times[phase].append(self._pending.get(phase, 0.0))

    def medians_ms(self) -> dict[str, float]:
        return {p: statistics.median(v) * 1e3 for p, v in self.times.items() if v}


def forget_memoised_work() -> int:
    """Empty every memo the compiler keeps between compiles in a process (its ``functools.lru_cache`` functions,
    e.g. the device-order pass's thread maps and conflict answers), so that each timed compile does the work the
    first compile of a new kernel in a new process does; returns how many memos it emptied. Repeated compiles of
    one kernel would otherwise find that work done by the previous round. Generic, so that it applies to an
    earlier commit's compiler in an A/B run too."""
    emptied = 0
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith("enceladus.compiler"):
            continue
        for obj in list(vars(module).values()):
            if callable(getattr(obj, "cache_clear", None)) and getattr(obj, "__module__", None) == name:
                obj.cache_clear()
                emptied += 1
    return emptied


def time_enceladus(mod: Any, fn_name: str, signature: dict[str, str], constexprs: dict[str, Any], num_warps: int,
                   repeat: int) -> dict[str, Any]:
    import enceladus

    raw = getattr(mod, fn_name).fn
    timer = PhaseTimer()
    timer.install()

    def once() -> float:
        kernel = enceladus.jit(raw)  # a new JITFunction: the source is parsed again, nothing is cached
        forget_memoised_work()
        timer.start()
        t0 = time.perf_counter()
        enceladus.compile(kernel, signature=signature, constexprs=constexprs, num_warps=num_warps)
        dt = time.perf_counter() - t0
        timer.stop()
        return dt

    try:
        once()  # warm-up: first-use imports inside the compiler
    except Exception as e:  # noqa: BLE001 - a kernel the compiler refuses is a result, reported as such
        first = str(e).strip().splitlines()
        reason = next((ln for ln in first if ln.startswith("error:")), first[-1] if first else type(e).__name__)
        return {"status": "not yet compiled", "reason": reason.removeprefix("error: ")}
    timer.times = {p: [] for p in timer.times}
    times = [once() for _ in range(repeat)]
    return {"status": "ok", "median_ms": statistics.median(times) * 1e3, "min_ms": min(times) * 1e3,
            "phases_ms": timer.medians_ms() if timer.installed else None, "repeat": repeat}


def time_triton(mod: Any, fn_name: str, signature: dict[str, str], constexprs: dict[str, Any], num_warps: int,
                repeat: int) -> dict[str, Any]:
    import triton
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import ASTSource, make_backend

    raw = getattr(mod, fn_name).fn
    target = GPUTarget("cuda", 90, 32)
    backend = make_backend(target)
    sig = dict(signature, **dict.fromkeys(constexprs, "constexpr"))
    wanted = ("ttir", "ttgir", "llir", "ptx")

    def once() -> dict[str, float]:
        src = ASTSource(triton.jit(raw), sig, constexprs=dict(constexprs))
        t0 = time.perf_counter()
        options = backend.parse_options({"num_warps": num_warps})
        metadata: dict[str, Any] = {"target": target, **options.__dict__}
        stages: dict[str, Any] = {}
        backend.add_stages(stages, options, src.language)
        context = ir.context()
        ir.load_dialects(context)
        backend.load_dialects(context)
        module = src.make_ir(target, options, backend.get_codegen_implementation(options), backend.get_module_map(),
                             context)
        marks = {"ast": time.perf_counter() - t0}
        for ext in wanted:
            module = stages[ext](module, metadata)
            marks[ext] = time.perf_counter() - t0
        return marks

    once()
    runs = [once() for _ in range(repeat)]
    return {"status": "ok", "repeat": repeat, "target": "cuda sm_90 (GPUTarget('cuda', 90, 32))",
            **{f"to_{ext}_ms": statistics.median(r[ext] for r in runs) * 1e3 for ext in ("ast",) + wanted}}


def triton_available() -> str | None:
    """None when upstream Triton can run the comparison, else the reason it cannot."""
    if sys.platform != "linux":
        return f"upstream Triton's CUDA compiler is only installed on Linux (this is {sys.platform})"
    try:
        import triton  # noqa: F401
        from triton.backends.compiler import GPUTarget  # noqa: F401
    except Exception as e:  # noqa: BLE001
        return f"triton is not importable ({type(e).__name__}: {e}); pip install -e '.[bench]'"
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=30, help="Enceladus compiles per kernel (median)")
    ap.add_argument("--triton-repeat", type=int, default=5, help="Triton compiles per kernel (median)")
    ap.add_argument("--no-triton", action="store_true", help="skip the upstream Triton comparison")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "compile_latency.json"))
    ap.add_argument("--against", metavar="REV", help="A/B mode: interleave this tree with commit REV (benchmarks/ab.py)")
    ap.add_argument("--rounds", type=int, default=6, help="A/B mode: interleaved rounds per tree")
    opts = ap.parse_args()
    if opts.against:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import ab

        ab.main(["--against", opts.against, "--rounds", str(opts.rounds)], kind="compile")
        return

    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton 3.9's default; silences its warning
    os.environ.pop("ENCELADUS_DUMP", None)
    why_no_triton = "--no-triton given" if opts.no_triton else triton_available()

    machine = describe()
    rows = []
    with tempfile.TemporaryDirectory(prefix="enceladus-compile-bench-") as tmp:
        os.environ["TRITON_CACHE_DIR"] = str(Path(tmp) / "triton-cache")  # never touch the user's cache
        modules = write_modules(Path(tmp))
        for name, origin, fn_name, signature, constexprs, num_warps in KERNELS:
            enc_path, tri_path = modules[origin]
            row: dict[str, Any] = {"kernel": name, "source": origin if origin.endswith(".py") else
                                   "benchmarks/compile_latency.py", "constexprs": constexprs, "num_warps": num_warps}
            row["enceladus"] = time_enceladus(import_path(enc_path), fn_name, signature, constexprs, num_warps,
                                              opts.repeat)
            if why_no_triton is None:
                try:
                    row["triton"] = time_triton(import_path(tri_path), fn_name, signature, constexprs, num_warps,
                                                opts.triton_repeat)
                except Exception as e:  # noqa: BLE001 - report, keep going
                    traceback.print_exc()
                    row["triton"] = {"status": "failed", "reason": f"{type(e).__name__}: {e}"}
            enc, tri = row["enceladus"], row.get("triton", {})
            if enc.get("status") == "ok" and tri.get("status") == "ok":
                row["ratio_ttgir"] = tri["to_ttgir_ms"] / enc["median_ms"]
                row["ratio_ptx"] = tri["to_ptx_ms"] / enc["median_ms"]
            rows.append(row)

    print(f"Compile latency on {one_line(machine)}")
    print(f"(published target for vector add: {PUBLISHED_TARGET_MS} ms, measured by the product's authors on an "
          "M4 Pro; not this machine)")
    head = f"{'kernel':<16} {'Enceladus -> MSL':>17} {'Triton -> TTGIR':>16} {'Triton -> PTX':>14} {'TTGIR/MSL':>10} " \
           f"{'PTX/MSL':>8}"
    print(head)
    print("-" * len(head))
    for r in rows:
        enc, tri = r["enceladus"], r.get("triton", {})
        e = f"{enc['median_ms']:.2f} ms" if enc["status"] == "ok" else enc["status"]
        g = f"{tri['to_ttgir_ms']:.1f} ms" if tri.get("status") == "ok" else "-"
        p = f"{tri['to_ptx_ms']:.1f} ms" if tri.get("status") == "ok" else "-"
        rg = f"{r['ratio_ttgir']:.0f}x" if "ratio_ttgir" in r else "-"
        rp = f"{r['ratio_ptx']:.0f}x" if "ratio_ptx" in r else "-"
        print(f"{r['kernel']:<16} {e:>17} {g:>16} {p:>14} {rg:>10} {rp:>8}")
        if enc["status"] != "ok":
            print(f"{'':<16}   ({enc['reason']})")
    if why_no_triton:
        print(f"Triton comparison skipped: {why_no_triton}")
    result = {"benchmark": "compile_latency", "machine": machine, "published_target_ms": {
        "vector add": PUBLISHED_TARGET_MS, "note": "measured by the product's authors on an M4 Pro"},
        "triton_skipped_reason": why_no_triton, "timing": "median of fresh compiles after one warm-up",
        "results": rows}
    out = Path(opts.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")


if __name__ == "__main__":
    main()
