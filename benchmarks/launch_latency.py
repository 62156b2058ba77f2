"""Host cost of launching a cached @jit kernel on Tensors (asynchronous) and on NumPy arrays (synchronous).

    .venv/bin/python benchmarks/launch_latency.py [--iters 3000]

Prints a table and writes benchmarks/results/launch_latency.json. "host async" is the time the
launch call takes on the calling thread while the stream's worker runs the kernels (one tiny
threadgroup each); the breakdown times the pieces of that call in isolation: building the fast key
from the arguments (binding), the dict lookup of the plan (key lookup), and packing + enqueueing the
packet (enqueue).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

import enceladus
import enceladus.language as tl
from enceladus.runtime.stream import default_stream


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


def per_call_us(fn, iters: int) -> float:
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        best = min(best, (time.perf_counter() - t0) / iters)
    return best * 1e6


def measure(kernel, args: tuple, iters: int, block: int) -> dict[str, float]:
    launch = kernel[(1,)]
    launch(*args, BLOCK=block)
    enceladus.synchronize()
    # host cost: many queued launches, synchronize outside the timed region
    t_async = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(iters):
            launch(*args, BLOCK=block)
        t_async = min(t_async, (time.perf_counter() - t0) / iters * 1e6)
        enceladus.synchronize()
    t0 = time.perf_counter()
    for _ in range(iters):
        launch(*args, BLOCK=block)
    enceladus.synchronize()
    t_throughput = (time.perf_counter() - t0) / iters * 1e6
    kwargs = {"BLOCK": block}
    fkey = kernel._fast_key(args, kwargs)
    plan = kernel._fast[fkey]
    t_bind = per_call_us(lambda: kernel._fast_key(args, kwargs), iters)
    t_lookup = per_call_us(lambda: kernel._fast.get(fkey), iters)
    kl = plan.launcher
    addrs = [args[i]._address for i in plan.buffer_index]
    scal = [args[i] for i in plan.scalar_index]
    q = default_stream().queue
    pack = plan.pack if callable(plan.pack) else None  # the plan's compiled packer (runtime/fastpath.packer)
    gsize = (kl.tptg, 1, 1)

    def pack_enqueue() -> None:
        packet = pack(args, (1, 1, 1), gsize) if pack is not None else kl.packet((1, 1, 1), addrs, scal)
        q.submit(kl.fast.run, packet, args)

    t_enqueue = per_call_us(pack_enqueue, iters)
    enceladus.synchronize()
    np_args = tuple(a.numpy().copy() if isinstance(a, enceladus.Tensor) else a for a in args)
    launch(*np_args, BLOCK=block)
    t_sync = per_call_us(lambda: launch(*np_args, BLOCK=block), max(iters // 3, 100))
    return {"host_async_us": t_async, "throughput_us": t_throughput, "bind_us": t_bind, "key_lookup_us": t_lookup,
            "pack_enqueue_us": t_enqueue, "sync_numpy_us": t_sync}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=3000)
    ap.add_argument("--against", metavar="REV", help="A/B mode: interleave this tree with commit REV (benchmarks/ab.py)")
    ap.add_argument("--rounds", type=int, default=6, help="A/B mode: interleaved rounds per tree")
    opts = ap.parse_args()
    if opts.against:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import ab

        ab.main(["--against", opts.against, "--rounds", str(opts.rounds)], kind="launch")
        return
    n = 64
    t = [enceladus.tensor(np.ones(n, np.float32)) for _ in range(9)]
    rows = {
        "4 args": measure(k4, (t[0], t[1], n, 2.0), opts.iters, 64),
        "16 args": measure(k16, (*t[:9], n, 3, 5, 7, 11, 13, 0.5), opts.iters, 64),
    }
    cols = [("host_async_us", "host async"), ("bind_us", "binding"), ("key_lookup_us", "key lookup"),
            ("pack_enqueue_us", "pack+enqueue"), ("throughput_us", "queued throughput"),
            ("sync_numpy_us", "sync NumPy launch")]
    print(f"{'kernel':<10}" + "".join(f"{h:>20}" for _, h in cols) + "   (microseconds per launch)")
    for name, r in rows.items():
        print(f"{name:<10}" + "".join(f"{r[c]:>20.2f}" for c, _ in cols))
    out = Path(__file__).parent / "results" / "launch_latency.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"cpu_count": os.cpu_count(), "iters": opts.iters, "results": rows}, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
