"""Replay a recorded corpus (record.py) on an NVIDIA GPU through the MSL -> CUDA rewrite.

    python -m benchmarks.gpu_proxy.replay --corpus DIR [--build-dir DIR] [--jobs 16] [--json OUT.json]

Every recorded kernel is translated, compiled with nvcc (cubins cached by source digest), launched with
the recorded grid, threads per threadgroup, scalars and buffer contents, and every buffer the kernel
may write is compared with the cpu backend's result (floats within a few ulps' worth of tolerance,
integers exactly). Run it under ``compute-sanitizer --tool memcheck|racecheck|synccheck`` for the race
and memory checks. Exit status 1 if any kernel fails to translate, compile, run or match.

The launches run in a child process (``--worker``); a kernel that faults (an illegal address kills the CUDA
context) is that kernel's failure, named with what the process printed (the sanitizer's report), and a fresh
child replays the rest. Integers the kernel reads that point into a recorded region's host memory (addresses
made into pointers, issue #18) are moved to the same offset in that region's device copy, and moved back
in the outputs before the comparison; the regions include memory that is no argument but that the kernel
reaches through such addresses (record.py's ``memory``), compared like the arguments. Each region is allocated rounded up to 16 bytes, as the runtime binds
16-bit buffers so that the last element's 32-bit word lies in memory it owns (16-bit atomics loop on it).

Statuses: ok; atomic-order (a kernel with atomics whose outputs differ from the cpu backend's only in what
depends on the order the atomics landed in, checked by an order-free rule for the operation: final memory,
and the old values as a multiset or running totals); undefined-conversion (integer elements that only differ
where a float -> int conversion of NaN or an out-of-range value gives the x86 "integer indefinite" on the cpu
backend and a saturated value or 0 on CUDA: undefined in Metal, see docs/language.md; counted, not failures);
mismatch; atomic-unverified (outputs differ and no order-free rule covers the kernel: a failure);
translate-failed, compile-failed, launch-failed, fault, judge-failed (the comparison itself raised).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

from . import cuda
from .rewrite import translate

# Tolerance by element type, relative to each element and to the buffer's largest magnitude: CUDA's and
# the host library's transcendental functions differ by an ulp or two, and reductions and dot products add
# in another order (a wrong index or a race gives errors of the data's own size, far above these).
_RTOL = {"f2": 2e-3, "f4": 2e-5, "f8": 1e-12, "bf2": 1.6e-2}
_ATOL = {"f2": 2e-3, "f4": 2e-5, "f8": 1e-12, "bf2": 1.6e-2}
_ATOMIC = ("atomic_fetch_", "atomic_exchange_", "atomic_compare_exchange_")


def build_all(sources: dict[str, str], build_dir: str, jobs: int) -> dict[str, str]:
    """Digest of each MSL -> cubin path (compiled in parallel; reused when the CUDA source is unchanged)."""
    os.makedirs(build_dir, exist_ok=True)
    todo, paths = {}, {}
    for key, src in sources.items():
        path = _cubin_path(build_dir, src)
        paths[key] = path
        if not os.path.exists(path):
            todo[key] = (src, path)
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        futures = {pool.submit(cuda.build_cubin, src, path): key for key, (src, path) in todo.items()}
        for fut in concurrent.futures.as_completed(futures):
            fut.result()
    return paths


_FLOAT_TO_INT = re.compile(r"static_cast<(char|short|int|long)>\(")


def _undefined_conversion(g: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Elements whose difference is a float -> signed int conversion of NaN or an out-of-range value: the cpu
    backend (x86 cvtt*: the "integer indefinite", the type's minimum, for 32 and 64 bits; narrower types
    convert through int32 and wrap) against CUDA (saturated to the type's limits, NaN -> 0). Metal leaves
    these conversions undefined."""
    info = np.iinfo(g.dtype)
    if info.min == 0:
        return np.zeros(g.shape, bool)
    if g.dtype.itemsize >= 4:
        return (w == info.min) & ((g == 0) | (g == info.max))
    return (g != w) & ((g == info.min) | (g == info.max))


def _is_bf16(name: str) -> bool:
    return name.lstrip("<>|=") == "V2"  # how ml_dtypes' bfloat16 records (the corpus's only 2-byte void)


def _numeric(buf: np.ndarray | bytes, name: str) -> tuple[np.ndarray, str]:
    """A buffer's elements as NumPy numbers (bfloat16 widened exactly to float32) and their tolerance kind."""
    if _is_bf16(name):
        bits = np.frombuffer(buf, "<u2").astype("<u4") << np.uint32(16)
        return bits.view("<f4"), "bf2"
    dt = np.dtype(name)
    return np.frombuffer(buf, dt), f"{dt.kind}{dt.itemsize}"


def _compare(got: np.ndarray, want: np.ndarray, dtype: str, conversions: bool = False) -> tuple[str | None, int]:
    """(description of the elements that differ, or None; how many differ only by an undefined conversion)."""
    (g, kind), (w, _) = _numeric(got, dtype), _numeric(want, dtype)
    undefined = 0
    if kind in _RTOL:
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        both_nan = np.isnan(g64) & np.isnan(w64)
        finite = np.abs(w64[np.isfinite(w64)])
        scale = float(finite.max()) if finite.size else 1.0
        close = np.isclose(g64, w64, rtol=_RTOL[kind], atol=_ATOL[kind] * max(scale, 1e-30)) | both_nan
        bad = np.flatnonzero(~close)
    else:
        differ = g != w
        if conversions and g.dtype.kind == "i":
            loose = _undefined_conversion(g, w)
            undefined = int(np.count_nonzero(loose))
            differ &= ~loose
        bad = np.flatnonzero(differ)
    if bad.size == 0:
        return None, undefined
    i = int(bad[0])
    return f"{bad.size} of {g.size} elements differ (first at {i}: got {g[i]!r}, cpu backend {w[i]!r})", undefined


_ALIGN = 16
_ADDRESS_TYPES = ("<i8", "<u8")


def _padded(nbytes: int) -> int:
    return max(-(-nbytes // _ALIGN) * _ALIGN, _ALIGN)


def _move_addresses(words: np.ndarray, frm: list[int], to: list[int], sizes: list[int]) -> tuple[np.ndarray, int]:
    """``words`` (uint64) with every value inside region j of ``frm`` moved to the same offset from ``to[j]``,
    and one past a region's end too where no region holds the value (two allocations may be adjacent: an
    address is the start of the next one before it is the end of the previous); and how many moved."""
    out = words.copy()
    done = np.zeros(words.shape, bool)
    for one_past in (False, True):
        for lo, dst, n in zip(frm, to, sizes):
            inside = ~done & (words >= np.uint64(lo)) & \
                ((words == np.uint64(lo + n)) if one_past else (words < np.uint64(lo + n)))
            out[inside] = words[inside] - np.uint64(lo) + np.uint64(dst)
            done |= inside
    return out, int(np.count_nonzero(done))


def _address_words(meta: dict, sizes: list[int], writes_only: bool = False) -> dict[int, np.ndarray]:
    """Region -> byte offsets (each once, though views overlap) of the 64-bit words that may hold addresses:
    every element of an int64/uint64 buffer (8-byte aligned in its region), and of the 64-bit memory reached
    through integer addresses (``meta["memory"]``: always, as whether the kernel writes it is not known)."""
    spans = [(b["region"], b["offset"], sizes[b["region"]] - b["offset"]) for b in meta["buffers"]
             if b["dtype"] in _ADDRESS_TYPES and not (writes_only and not b["writes"])]
    spans += [(m["region"], m["offset"], m["nbytes"]) for m in meta.get("memory", ()) if m["dtype"] in _ADDRESS_TYPES]
    words: dict[int, list[np.ndarray]] = {}
    for region, offset, nbytes in spans:
        if offset % 8 == 0:
            words.setdefault(region, []).append(np.arange(offset, offset + nbytes // 8 * 8, 8))
    return {r: np.unique(np.concatenate(w)) for r, w in words.items()}


def _move_in(meta: dict, blobs: list[bytearray], frm: list[int], to: list[int], writes_only: bool = False) -> int:
    """Move the addresses in ``blobs`` (the regions' bytes) from regions at ``frm`` to regions at ``to``."""
    moved = 0
    for region, offsets in _address_words(meta, [len(b) for b in blobs], writes_only).items():
        words = np.frombuffer(memoryview(blobs[region])[: len(blobs[region]) // 8 * 8], np.uint64)
        words[offsets // 8], k = _move_addresses(words[offsets // 8], frm, to, meta["regions"])
        moved += k
    return moved


def host_to_device(meta: dict, inputs: list[bytes], args: bytes | None, device: list[int]):
    """The inputs and packed scalars with recorded host addresses moved into the device regions."""
    blobs = [bytearray(x) for x in inputs]
    host = meta.get("host_regions")
    moved = 0
    if host:
        moved += _move_in(meta, blobs, host, device)
        if args:
            words = np.frombuffer(args[: len(args) // 8 * 8], np.uint64)
            new, k = _move_addresses(words, host, device, meta["regions"])
            args = new.tobytes() + args[len(args) // 8 * 8:]
            moved += k
    return [bytes(b) for b in blobs], args, moved


def device_to_host(meta: dict, outputs: list[bytes], device: list[int]) -> list[bytes]:
    """The outputs with device addresses of the regions moved back to the recorded host addresses."""
    host = meta.get("host_regions")
    if not host:
        return outputs
    blobs = [bytearray(x) for x in outputs]
    _move_in(meta, blobs, device, host, writes_only=True)
    return [bytes(b) for b in blobs]


def replay_one(meta: dict, data, module: cuda.Module, symbol: str, params: tuple) -> list[bytes]:
    """Run one recorded launch; returns every region's bytes afterwards (addresses moved back to the host's)."""
    sizes = meta["regions"]
    regions = [cuda.alloc(_padded(n)) for n in sizes]
    try:
        args = bytes.fromhex(meta["args"]) if meta.get("args") else None
        inputs, args, _ = host_to_device(meta, [data[f"in{i}"].tobytes() for i in range(len(sizes))], args,
                                         regions)
        for ptr, blob, n in zip(regions, inputs, sizes):
            cuda.upload(ptr, blob + bytes(_padded(n) - n))
        by_slot = {b["slot"]: b for b in meta["buffers"]}
        values = []
        for p in params:
            if p.kind == "bytes":
                if p.slot != meta["args_slot"]:
                    raise cuda.CudaError(f"parameter {p.name} [[buffer({p.slot})]] is a struct but not the args slot")
                values.append((args or b"").ljust(256, b"\0"))
            else:
                b = by_slot[p.slot]
                values.append(cuda.pointer(regions[b["region"]] + b["offset"]))
        grid = meta["grid"]
        if grid[1] > 65535 or grid[2] > 65535:
            raise cuda.CudaError(f"grid {grid}: CUDA limits the y and z grid dimensions to 65535")
        cuda.launch(module.function(symbol), grid, meta["threads"], values)
        cuda.synchronize()
        return device_to_host(meta, [cuda.download(ptr, n) for ptr, n in zip(regions, sizes)], regions)
    finally:
        for ptr in regions:
            cuda.free(ptr)


# --- judging the outputs (no GPU needed) ---

_OPS16 = {0: "add", 1: "max", 2: "min", 3: "xchg", 4: "cas"}


def _kernel_body(msl: str) -> str:
    i = msl.find("kernel void")
    return msl[i:] if i >= 0 else msl


def atomic_ops(body: str) -> set[str]:
    """The read-modify-write operations a kernel body performs on device memory."""
    ops = {_OPS16[int(m[1])] for m in re.finditer(r"enc_atomic16<(\d)>", body)}
    ops |= set(re.findall(r"atomic_fetch_(add|sub|max|min|and|or|xor)_explicit", body))
    ops |= {"max" if m == "true" else "min" for m in re.findall(r"atomic_fminmax\([^;]*?,\s*(true|false)\)", body)}
    if "atomic_exchange_explicit" in body:
        ops.add("xchg")
    if "atomic_compare_exchange" in body:
        ops.add("cas")
    return ops


def _view(blob: bytes, b: dict) -> tuple[np.ndarray, str]:
    size = 2 if _is_bf16(b["dtype"]) else np.dtype(b["dtype"]).itemsize
    hi = b["offset"] + (len(blob) - b["offset"]) // size * size
    return _numeric(blob[b["offset"]:hi], b["dtype"])


def _same(a, b, kind: str, scale: float = 0.0) -> bool:
    """Equal, for integer types; for float types within rounding: the type's relative tolerance, or ``scale``
    (the sum of the magnitudes added) times the type's epsilon per addition, for running sums."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if kind not in _RTOL:
        return bool(np.all(a == b))
    eps = {"bf2": 2.0 ** -7, "f2": 2.0 ** -10, "f4": 2.0 ** -23, "f8": 2.0 ** -52}[kind]
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return bool(np.all(np.abs(a64 - b64) <= np.maximum(_RTOL[kind] * np.abs(b64), _ATOL[kind] + eps * scale)))


def _check_slot(op: str, init, vals: np.ndarray, final, olds: np.ndarray, kind: str) -> str | None:
    """The order-free facts about NSLOT-style contention on one address: ``vals`` offered in some order to
    memory holding ``init``, each lane getting its ``olds`` value back; memory ends at ``final``."""
    f64 = kind in _RTOL
    if op in ("add", "sub"):
        sign = 1 if op == "add" else -1
        total = (np.float64(init) + sign * vals.astype(np.float64).sum()) if f64 else \
            (np.asarray(init) + sign * vals.astype(vals.dtype).sum(dtype=vals.dtype)).astype(vals.dtype)
        scale = float(np.abs(vals.astype(np.float64)).sum()) if f64 else 0.0  # each addition rounds once
        if not _same(np.asarray([final]).astype(np.float64 if f64 else vals.dtype), np.asarray([total]),
                     kind, scale * len(vals) / 2):
            return f"final {final!r}, not init {init!r} {'+-'[op == 'sub']} the sum of the values ({total!r})"
        if olds is not None and op == "add" and (vals.astype(np.float64) >= 0).all():  # a rising chain
            chain = np.sort(np.append(olds.astype(np.float64), np.float64(final)))
            steps = np.diff(chain) * sign
            if not _same(np.sort(steps), np.sort(vals.astype(np.float64)), kind, scale) \
                    or not _same(chain[:1], [init], kind, scale):
                return "the old values are not the running totals of any order of the values"
        return None
    if op in ("max", "min"):
        pick = np.maximum if op == "max" else np.minimum
        want = pick.reduce(np.append(vals, np.asarray(init, vals.dtype)))
        if not _same(np.asarray([final], vals.dtype), np.asarray([want]), kind):
            return f"final {final!r}, not the {op} of the values and init ({want!r})"
        if olds is not None:
            if not set(olds.tolist()) <= set(vals.tolist()) | {np.asarray(init, vals.dtype).item()}:
                return "an old value was never in memory"
            if not ((olds <= final) if op == "max" else (olds >= final)).all():
                return f"an old value is beyond the final {op}"
        return None
    if op == "xchg":
        have = np.sort(np.append(olds, np.asarray(final, vals.dtype)))
        offered = np.sort(np.append(vals, np.asarray(init, vals.dtype)))
        return None if np.array_equal(have, offered) else "the old values and the final one are not the values offered"
    if op in ("and", "or", "xor"):
        red = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op].reduce(
            np.append(vals, np.asarray(init, vals.dtype)))
        if final != red:
            return f"final {final!r}, not the {op} of the values and init ({red!r})"
        if olds is not None and op == "or" and (olds & ~np.asarray(final, vals.dtype)).any():
            return "an old value has a bit the final value lacks"
        if olds is not None and op == "and" and (np.asarray(final, vals.dtype) & ~olds).any():
            return "an old value lacks a bit the final value has"
        return None
    if op == "cas":  # compare with 0 (the corpus's contention kernels): one lane wins, the others see its value
        if init != 0:
            return "compare-and-swap from a nonzero initial value: no order-free rule"
        winners = np.flatnonzero(olds == 0)
        if winners.size != 1 or vals[winners[0]] != final or not (np.delete(olds, winners) == final).all():
            return "not exactly one lane swapped its value in with the others seeing it"
        return None
    return f"no order-free rule for atomic {op}"


def order_free_check(meta: dict, data, got: list[bytes], msl: str) -> tuple[bool, str | None]:
    """(whether a rule covers the kernel, None when the outputs of a contention kernel satisfy every order-free fact about its one atomic operation else why not). Layouts: (memory, values, olds) with lane i on element i % len(memory), as tests/codegen's
    atomic_kernel and word_atomic_kernel; (counter, tickets): one ``atomic_add(counter, 1)`` per element."""
    ops = atomic_ops(_kernel_body(msl))
    if len(ops) != 1:
        return False, f"atomic operations {sorted(ops)}: an order-free check needs exactly one"
    op = ops.pop()
    bufs = sorted(meta["buffers"], key=lambda b: b["slot"])
    init = lambda b: _view(data[f"in{b['region']}"].tobytes(), b)[0]  # noqa: E731
    final = lambda b: _view(got[b["region"]], b)[0]  # noqa: E731
    kind = _view(got[bufs[0]["region"]], bufs[0])[1]
    if len(bufs) == 3 and bufs[0]["writes"] and not bufs[1]["writes"] and bufs[2]["writes"] \
            and len(init(bufs[1])) == len(final(bufs[2])):
        mem0, vals, mem1, olds = init(bufs[0]), init(bufs[1]), final(bufs[0]), final(bufs[2])
    elif len(bufs) == 2 and all(b["writes"] for b in bufs) and len(init(bufs[0])) == 1 and op == "add":
        mem0, mem1, olds = init(bufs[0]), final(bufs[0]), final(bufs[1])
        vals = np.ones(len(olds), mem0.dtype)
    else:
        return False, "no order-free rule for this kernel's buffers"
    nslot = len(mem0)
    for slot in range(nslot):
        why = _check_slot(op, mem0[slot], vals[slot::nslot], mem1[slot], olds[slot::nslot], kind)
        if why:
            return not why.startswith("no order-free rule"), f"atomic {op}, element {slot} of {nslot}: {why}"
    return True, None


def judge(meta: dict, data, got: list[bytes], msl: str) -> dict:
    """Compare the replayed regions with the recorded cpu-backend outputs; the result's status and details."""
    body = _kernel_body(msl)
    conversions = bool(_FLOAT_TO_INT.search(body))
    problems, undefined = [], 0
    for b in meta["buffers"]:
        if not b["writes"]:
            continue
        r = b["region"]
        want = data[f"out{r}"]
        g = np.frombuffer(got[r], np.uint8)
        size = np.dtype(b["dtype"]).itemsize
        lo = b["offset"]
        hi = lo + (len(want) - lo) // size * size
        msg, u = _compare(g[lo:hi], want[lo:hi], b["dtype"], conversions)
        undefined += u
        if msg:
            problems.append(f"{b['name']}: {msg}")
    for m in meta.get("memory", ()):  # reached through integer addresses: whether the kernel wrote it is unknown
        r, lo = m["region"], m["offset"]
        want = data[f"out{r}"]
        g = np.frombuffer(got[r], np.uint8)
        hi = lo + m["nbytes"] // np.dtype(m["dtype"]).itemsize * np.dtype(m["dtype"]).itemsize
        msg, u = _compare(g[lo:hi], want[lo:hi], m["dtype"], conversions)
        undefined += u
        if msg:
            problems.append(f"{m['origin']} memory at region {r} + {lo}: {msg}")
    result = {"kernel": meta["name"], "status": "ok", "problems": problems}
    if undefined:
        result["undefined_elements"] = undefined
    if problems and (atomic_ops(body) or any(a in body for a in _ATOMIC)):
        # Which lane's atomic lands first is unspecified (Metal and CUDA alike): accepted only when every
        # order-free fact about the results holds
        covered, why = order_free_check(meta, data, got, msl)
        result["status"] = "atomic-order" if why is None else "mismatch" if covered else "atomic-unverified"
        if why:
            result["problems"].append(why)
    elif problems:
        result["status"] = "mismatch"
    elif undefined:
        result["status"] = "undefined-conversion"
    return result


_MARK = "@@replay "
_PASS = {"ok", "atomic-order", "undefined-conversion"}
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _cubin_path(build_dir: str, source: str) -> str:
    return os.path.join(build_dir, hashlib.sha256(source.encode()).hexdigest()[:20] + ".cubin")


def _load(corpus: str, digest: str) -> tuple[dict, object, str]:
    with open(os.path.join(corpus, digest + ".json")) as f:
        meta = json.load(f)
    with open(os.path.join(corpus, digest + ".metal")) as f:
        msl = f.read()
    return meta, np.load(os.path.join(corpus, digest + ".npz")), msl


def worker(corpus: str, build_dir: str, digests: list[str], out=sys.stdout) -> int:
    """Replay ``digests`` in this process (one CUDA context), one result line each; stop at the first CUDA
    error, as a fault leaves the context unusable (exit status 3: the parent starts another worker)."""
    cuda.lib()  # the driver and a context first: a machine without them fails here, before any kernel
    print(f"{_MARK}ready", file=out, flush=True)
    for d in digests:
        print(f"{_MARK}start {d}", file=out, flush=True)
        meta, data, msl = _load(corpus, d)
        module = translate(msl)
        kernel = module.kernels[meta["kernel"]]
        try:
            got = replay_one(meta, data, cuda.Module(_cubin_path(build_dir, module.source)), kernel.symbol,
                             kernel.params)
        except cuda.CudaError as e:
            print(f"{_MARK}result {json.dumps({'kernel': meta['name'], 'status': 'launch-failed', 'error': str(e)})}",
                  file=out, flush=True)
            return 3
        try:
            result = judge(meta, data, got, msl)
        except Exception as e:  # a fault of the comparison, not of the kernel: name it and go on
            result = {"kernel": meta["name"], "status": "judge-failed", "error": f"{type(e).__name__}: {e}"}
        print(f"{_MARK}result {json.dumps(result)}", file=out, flush=True)
    print(f"{_MARK}done", file=out, flush=True)
    return 0


def _lines(stream, q: queue.Queue) -> None:
    for line in stream:
        q.put(line)
    q.put(None)


def run_isolated(corpus: str, build_dir: str, todo: list[str], results: dict[str, dict],
                 command: list[str] | None = None, kernel_timeout: float = 180.0) -> int:
    """Replay ``todo`` in worker processes, starting a fresh one after each fault; each kernel's result goes
    into ``results`` (a kernel whose worker died is a "fault", with the last lines the worker printed: the
    sanitizer's report under compute-sanitizer; one silent for ``kernel_timeout`` seconds is killed, a hang
    being that kernel's fault too). Returns how many workers were started."""
    remaining = list(todo)
    started = 0
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))
    while remaining:
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("\n".join(remaining))
        cmd = (command or [sys.executable, "-m", "benchmarks.gpu_proxy.replay"]) + [
            "--corpus", corpus, "--build-dir", build_dir, "--worker", f.name]
        started += 1
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        current, report, progress, hung, ready = None, [], False, False, False
        assert proc.stdout is not None
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=_lines, args=(proc.stdout, lines), daemon=True).start()
        while True:
            try:
                line = lines.get(timeout=kernel_timeout)
            except queue.Empty:
                hung = True
                proc.kill()
                continue
            if line is None:
                break
            if line.startswith(_MARK + "ready"):
                ready = True
            elif line.startswith(_MARK + "start "):
                current, report = line.split()[2], []
            elif line.startswith(_MARK + "result ") and current is not None:
                r = json.loads(line[len(_MARK + "result "):])
                if r["status"] not in _PASS and report:
                    r["report"] = report[-60:]
                results[current] = r
                remaining.remove(current)
                current, progress = None, True
            elif not line.startswith(_MARK):
                report.append(line.rstrip("\n"))
                sys.stderr.write(line)
        rc = proc.wait()
        os.unlink(f.name)
        if current is not None:  # the worker died inside this kernel's replay
            with open(os.path.join(corpus, current + ".json")) as meta_file:
                name = json.load(meta_file)["name"]
            results[current] = {"kernel": name, "status": "fault",
                                "error": f"the replay process hung for {kernel_timeout:.0f} s and was killed" if hung
                                else f"the replay process died (exit status {rc}) replaying this kernel",
                                "report": report[-60:]}
            remaining.remove(current)
        elif remaining and (not progress or not ready):
            for d in remaining:
                results[d] = {"kernel": "?", "status": "launch-failed",
                              "error": f"the replay worker exited (status {rc}) before replaying anything"
                              + ("" if ready else " (it could not start CUDA)"), "report": report[-60:]}
            break
    return started


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--build-dir", default="/tmp/enc-proxy-build")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
    ap.add_argument("--json", help="write the per-kernel results here")
    ap.add_argument("--build-only", action="store_true", help="translate and compile, launch nothing")
    ap.add_argument("--shard", default="0/1", help="K/N: replay every N-th kernel starting at K (parallel runs)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)  # a file of digests: replay them in this process
    args = ap.parse_args(argv)
    if args.worker:
        with open(args.worker) as f:
            return worker(args.corpus, args.build_dir, f.read().split())

    digests = sorted(f[:-5] for f in os.listdir(args.corpus) if f.endswith(".json") and f != "skipped.json")
    k, n = (int(v) for v in args.shard.split("/"))
    digests = digests[k::n]
    results: dict[str, dict] = {}
    sources = {}
    for d in digests:
        with open(os.path.join(args.corpus, d + ".metal")) as f:
            msl = f.read()
        try:
            sources[d] = translate(msl).source
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
    workers = 0
    if not args.build_only:
        workers = run_isolated(args.corpus, args.build_dir, [d for d in digests if d not in results], results)
    counts: dict[str, int] = {}
    for r in results.values():
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    undefined = sum(r.get("undefined_elements", 0) for r in results.values())
    for d, r in sorted(results.items()):
        if r["status"] != "ok":
            print(f"{d} {r.get('kernel', '?')}: {r['status']}: {r.get('error') or r.get('problems')}"
                  + (f" ({r['undefined_elements']} elements from undefined float -> int conversions)"
                     if r.get("undefined_elements") else ""))
            for line in r.get("report", []):
                print(f"    | {line}")
    print(f"replayed {len(digests)} kernels in {workers} worker process(es): {counts}; elements left undefined "
          f"by float -> int conversions of NaN or out-of-range values: {undefined}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"counts": counts, "undefined_elements": undefined, "results": results}, f, indent=1)
    return 0 if set(counts) <= _PASS else 1


if __name__ == "__main__":
    sys.exit(main())
