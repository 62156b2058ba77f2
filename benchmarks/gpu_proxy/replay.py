"""Replay a recorded corpus (record.py) on an NVIDIA GPU through the MSL -> CUDA rewrite.

    python -m benchmarks.gpu_proxy.replay --corpus DIR [--build-dir DIR] [--jobs 16] [--json OUT.json]

Every recorded kernel is translated, compiled with nvcc (cubins cached by source digest), launched with
the recorded grid, threads per threadgroup, scalars and buffer contents, and every buffer the kernel
may write is compared with the cpu backend's result (floats within a few ulps' worth of tolerance,
integers exactly). Run it under ``compute-sanitizer --tool memcheck|racecheck|synccheck`` for the race
and memory checks. Exit status 1 if any kernel fails to translate, compile, run or match.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import os
import sys
import time

import numpy as np

from . import cuda
from .rewrite import translate

# Tolerance by element type, relative to each element and to the buffer's largest magnitude: CUDA's and
# the host library's transcendental functions differ by an ulp or two, and reductions and dot products add
# in another order (a wrong index or a race gives errors of the data's own size, far above these).
_RTOL = {"f2": 2e-3, "f4": 2e-5, "f8": 1e-12}
_ATOL = {"f2": 2e-3, "f4": 2e-5, "f8": 1e-12}
_ATOMIC = ("atomic_fetch_", "atomic_exchange_", "atomic_compare_exchange_")


def build_all(sources: dict[str, str], build_dir: str, jobs: int) -> dict[str, str]:
    """Digest of each MSL -> cubin path (compiled in parallel; reused when the CUDA source is unchanged)."""
    os.makedirs(build_dir, exist_ok=True)
    todo, paths = {}, {}
    for key, src in sources.items():
        path = os.path.join(build_dir, hashlib.sha256(src.encode()).hexdigest()[:20] + ".cubin")
        paths[key] = path
        if not os.path.exists(path):
            todo[key] = (src, path)
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        futures = {pool.submit(cuda.build_cubin, src, path): key for key, (src, path) in todo.items()}
        for fut in concurrent.futures.as_completed(futures):
            fut.result()
    return paths


def _compare(got: np.ndarray, want: np.ndarray, dtype: str) -> str | None:
    kind = dtype.lstrip("<>|=")
    g, w = got.view(np.dtype(dtype)), want.view(np.dtype(dtype))
    if kind in _RTOL:
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        both_nan = np.isnan(g64) & np.isnan(w64)
        finite = np.abs(w64[np.isfinite(w64)])
        scale = float(finite.max()) if finite.size else 1.0
        close = np.isclose(g64, w64, rtol=_RTOL[kind], atol=_ATOL[kind] * max(scale, 1e-30)) | both_nan
        bad = np.flatnonzero(~close)
    else:
        bad = np.flatnonzero(g != w)
    if bad.size == 0:
        return None
    i = int(bad[0])
    return f"{bad.size} of {g.size} elements differ (first at {i}: got {g[i]!r}, cpu backend {w[i]!r})"


def replay_one(meta: dict, data: np.lib.npyio.NpzFile, module: cuda.Module, symbol: str, params: tuple) -> list[str]:
    """Run one recorded launch; returns the list of mismatches (empty when every output matches)."""
    regions = [cuda.alloc(n) for n in meta["regions"]]
    try:
        for i, ptr in enumerate(regions):
            cuda.upload(ptr, data[f"in{i}"].tobytes())
        by_slot = {b["slot"]: b for b in meta["buffers"]}
        values = []
        for p in params:
            if p.kind == "bytes":
                if p.slot != meta["args_slot"]:
                    raise cuda.CudaError(f"parameter {p.name} [[buffer({p.slot})]] is a struct but not the args slot")
                values.append(bytes.fromhex(meta["args"]).ljust(256, b"\0"))
            else:
                b = by_slot[p.slot]
                values.append(cuda.pointer(regions[b["region"]] + b["offset"]))
        grid = meta["grid"]
        if grid[1] > 65535 or grid[2] > 65535:
            raise cuda.CudaError(f"grid {grid}: CUDA limits the y and z grid dimensions to 65535")
        cuda.launch(module.function(symbol), grid, meta["threads"], values)
        cuda.synchronize()
        problems = []
        for b in meta["buffers"]:
            if not b["writes"]:
                continue
            r = b["region"]
            got = np.frombuffer(cuda.download(regions[r], meta["regions"][r]), np.uint8)
            want = data[f"out{r}"]
            size = np.dtype(b["dtype"]).itemsize
            lo = b["offset"]
            hi = lo + (len(want) - lo) // size * size
            msg = _compare(got[lo:hi], want[lo:hi], b["dtype"])
            if msg:
                problems.append(f"{b['name']}: {msg}")
        return problems
    finally:
        for ptr in regions:
            cuda.free(ptr)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--build-dir", default="/tmp/enc-proxy-build")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
    ap.add_argument("--json", help="write the per-kernel results here")
    ap.add_argument("--build-only", action="store_true", help="translate and compile, launch nothing")
    ap.add_argument("--shard", default="0/1", help="K/N: replay every N-th kernel starting at K (parallel runs)")
    args = ap.parse_args(argv)

    digests = sorted(f[:-5] for f in os.listdir(args.corpus) if f.endswith(".json") and f != "skipped.json")
    k, n = (int(v) for v in args.shard.split("/"))
    digests = digests[k::n]
    results: dict[str, dict] = {}
    modules, sources = {}, {}
    for d in digests:
        with open(os.path.join(args.corpus, d + ".metal")) as f:
            msl = f.read()
        try:
            modules[d] = translate(msl)
            sources[d] = modules[d].source
        except Exception as e:
            results[d] = {"status": "translate-failed", "error": f"{type(e).__name__}: {e}"}
    t0 = time.perf_counter()
    try:
        cubins = build_all(sources, args.build_dir, args.jobs)
    except cuda.CudaError as e:
        print(e, file=sys.stderr)
        cubins = {}
        for d, src in sources.items():  # find every kernel that fails, not only the first
            try:
                cubins.update(build_all({d: src}, args.build_dir, 1))
            except cuda.CudaError as e2:
                results[d] = {"status": "compile-failed", "error": str(e2)[-2000:]}
    print(f"built {len(cubins)} cubins in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    if not args.build_only:
        for d in digests:
            if d in results:
                continue
            with open(os.path.join(args.corpus, d + ".json")) as f:
                meta = json.load(f)
            data = np.load(os.path.join(args.corpus, d + ".npz"))
            kernel = modules[d].kernels[meta["kernel"]]
            try:
                problems = replay_one(meta, data, cuda.Module(cubins[d]), kernel.symbol, kernel.params)
                status = "ok"
                if problems:
                    # Which lane's atomic lands first is unspecified (Metal and CUDA alike): the values atomics
                    # return, exchanged results and the device log's record order may legitimately differ.
                    status = "atomic-order" if any(a in sources[d] for a in _ATOMIC) else "mismatch"
                results[d] = {"kernel": meta["name"], "status": status, "problems": problems}
            except cuda.CudaError as e:
                results[d] = {"kernel": meta["name"], "status": "launch-failed", "error": str(e)}
                if "illegal" in str(e) or "misaligned" in str(e):
                    break  # the context is unusable after a fault
    counts: dict[str, int] = {}
    for r in results.values():
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    for d, r in sorted(results.items()):
        if r["status"] != "ok":
            print(f"{d} {r.get('kernel', '?')}: {r['status']}: {r.get('error') or r.get('problems')}")
    print(f"replayed {len(digests)} kernels: {counts}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"counts": counts, "results": results}, f, indent=1)
    return 0 if set(counts) <= {"ok", "atomic-order"} else 1


if __name__ == "__main__":
    sys.exit(main())
