"""Draw the benchmark figures used by docs/benchmarks.md from benchmarks/results/*.json into docs/img/.

    python benchmarks/plots.py

Each plot is drawn only when its JSON exists; nothing is measured here.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
IMG = ROOT / "docs" / "img"
COLORS = {"enceladus": "#2b6cb0", "triton": "#dd6b20", "triton2": "#c05621", "grey": "#718096"}


def load(name: str) -> dict | None:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def machine_note(data: dict) -> str:
    m = data.get("machine") or {}
    return f"{m.get('cpu', '?')}, {m.get('cores', '?')} cores, Python {m.get('python', '?')}" if m else ""


def compile_latency(data: dict) -> Path:
    rows = data["results"]
    names = [r["kernel"] for r in rows]
    enc = [r["enceladus"].get("median_ms") for r in rows]
    ttgir = [r.get("triton", {}).get("to_ttgir_ms") for r in rows]
    ptx = [r.get("triton", {}).get("to_ptx_ms") for r in rows]
    fig, ax = plt.subplots(figsize=(8, 3.8))
    x = range(len(names))
    w = 0.27
    ax.bar([i - w for i in x], [v or 0 for v in enc], w, label="Enceladus: Python → MSL", color=COLORS["enceladus"])
    if any(ttgir):
        ax.bar(list(x), [v or 0 for v in ttgir], w, label="Triton 3.9: Python → TTGIR", color=COLORS["triton"])
        ax.bar([i + w for i in x], [v or 0 for v in ptx], w, label="Triton 3.9: Python → PTX (sm_90)",
               color=COLORS["triton2"], alpha=0.6)
    for i, v in enumerate(enc):
        if v is None:
            ax.text(i - w, 1, "not yet\ncompiled", ha="center", va="bottom", fontsize=7, rotation=90)
        else:
            ax.text(i - w, v * 1.08, f"{v:.1f}", ha="center", va="bottom", fontsize=7)
    ax.set_yscale("log")
    ax.set_xticks(list(x), names)
    ax.set_ylabel("median compile time (ms, log scale)")
    ax.set_title(f"Compile latency, fresh compiles — {machine_note(data)}", fontsize=9)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    out = IMG / "compile_latency.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def interpreter(data: dict) -> Path:
    rows = data["results"]
    names = [r["kernel"] for r in rows]
    fig, ax = plt.subplots(figsize=(8, 3.2))
    x = range(len(names))
    w = 0.38
    ax.bar([i - w / 2 for i in x], [r["enceladus_s"] * 1e3 for r in rows], w, label="Enceladus interpreter",
           color=COLORS["enceladus"])
    if all(r.get("triton_s") for r in rows):
        ax.bar([i + w / 2 for i in x], [r["triton_s"] * 1e3 for r in rows], w,
               label="Triton 3.9 interpreter (TRITON_INTERPRET=1)", color=COLORS["triton"])
        for i, r in enumerate(rows):
            ax.text(i + w / 2, r["triton_s"] * 1e3 * 1.08, f"{r['speedup']:.0f}× slower", ha="center",
                    va="bottom", fontsize=7)
    ax.set_yscale("log")
    ax.set_xticks(list(x), names, fontsize=8)
    ax.set_ylabel("wall time per launch (ms, log)")
    ax.set_title("Interpreters on the same kernel source (best of repeats)", fontsize=9)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    out = IMG / "interpreter.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def launch_latency(data: dict) -> Path:
    rows = data["results"]
    names = list(rows)
    parts = [("bind_us", "binding"), ("key_lookup_us", "key lookup"), ("pack_enqueue_us", "pack + enqueue")]
    fig, ax = plt.subplots(figsize=(7, 2.6))
    for i, name in enumerate(names):
        left = 0.0
        for j, (key, label) in enumerate(parts):
            v = rows[name][key]
            ax.barh(i, v, left=left, color=plt.cm.Blues(0.4 + 0.2 * j), label=label if i == 0 else None)
            left += v
        total = rows[name]["host_async_us"]
        ax.barh(i, total - left, left=left, color=COLORS["grey"], alpha=0.4,
                label="rest of the call" if i == 0 else None)
        ax.text(total + 0.1, i, f"{total:.1f} µs", va="center", fontsize=8)
    ax.set_yticks(range(len(names)), [f"{n} (Tensor)" for n in names])
    ax.set_xlabel("host time of one asynchronous launch (µs)")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    out = IMG / "launch_latency.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main() -> None:
    IMG.mkdir(parents=True, exist_ok=True)
    for name, draw in (("compile_latency", compile_latency), ("interpreter", interpreter),
                       ("launch_latency", launch_latency)):
        data = load(name)
        if data is None:
            print(f"{name}: no results/{name}.json, plot not drawn")
            continue
        print(f"{name}: wrote {draw(data).relative_to(ROOT)}")


if __name__ == "__main__":
    main()
