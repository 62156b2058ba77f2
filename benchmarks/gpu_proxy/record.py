"""Record every distinct kernel the codegen test corpus and the examples launch, for replay on a GPU.

Runs here, on the cpu backend (no GPU needed)::

    python -m benchmarks.gpu_proxy.record --out /tmp/corpus [pytest arguments, default: tests/codegen]

While pytest (and then each example) runs, every launch of a compiled kernel is intercepted: the MSL,
grid, threads per threadgroup, packed scalars, and the bytes of every buffer before and after the launch
(the cpu backend's results, which the tests check against NumPy) are saved, one launch per distinct MSL
(the smallest seen, at most --max-bytes). For a kernel that makes pointers from integer addresses, the
memory those addresses point into is saved too where it is no argument of the launch (``reachable_memory``).
``replay.py`` runs the same MSL through the CUDA rewrite on the GPU, under compute-sanitizer, and compares
the outputs.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import hashlib
import json
import os
import runpy
import sys
from typing import Any, NamedTuple

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


_ADDRESS_DTYPES = ("<i8", "<u8")


class Span(NamedTuple):
    """Memory a kernel reaches only through integer addresses: bytes [lo, hi), their element type, and whose."""

    lo: int
    hi: int
    dtype: str
    origin: str  # "enceladus.Tensor" or "numpy"


def _words(blob: bytes) -> np.ndarray:
    """The 64-bit words of ``blob`` (its whole 8-byte words), as unsigned integers."""
    return np.frombuffer(blob[: len(blob) // 8 * 8], np.uint64)


def _root(arr: np.ndarray) -> np.ndarray:
    """The NumPy array that owns ``arr``'s memory (the end of its chain of ``base`` arrays)."""
    while isinstance(arr.base, np.ndarray):
        arr = arr.base
    return arr


class _Owners:
    """Where an integer address points: the live enceladus.Tensor allocations (what the cpu backend checks a
    pointer made from an integer against, backends/cpu/memory.py), then the NumPy arrays the running program
    holds (in the locals of any thread's stack, or referred to by any object the garbage collector tracks, one
    list, tuple or dict deep): memory Enceladus does not know, which the cpu backend lets a kernel touch
    unchecked. Each owner is a whole allocation, as the kernel may touch any of it."""

    def __init__(self) -> None:
        self._arrays: list[np.ndarray] | None = None
        self._roots: list[np.ndarray] = []
        self._bounds = np.zeros((2, 0), np.uint64)  # each root's [first, one-past-last) byte

    def arrays(self) -> list[np.ndarray]:
        from enceladus.runtime.launch import byte_span

        if self._arrays is None:
            seen: dict[int, np.ndarray] = {}

            def add(x: Any, depth: int = 0) -> None:
                if isinstance(x, np.ndarray):
                    seen.setdefault(id(x), x)
                elif depth == 0 and isinstance(x, list | tuple):
                    for y in x:
                        add(y, 1)
                elif depth == 0 and isinstance(x, dict):
                    for y in x.values():
                        add(y, 1)

            for top in sys._current_frames().values():
                frame: Any = top
                while frame is not None:
                    for v in frame.f_locals.values():
                        add(v)
                    frame = frame.f_back
            for obj in gc.get_objects():
                for ref in gc.get_referents(obj):
                    add(ref)
            self._arrays = list(seen.values())
            roots = {id(r): r for r in map(_root, self._arrays) if r.size}
            self._roots = list(roots.values())
            self._bounds = np.array([byte_span(r) for r in self._roots], np.uint64).reshape(-1, 2).T
        return self._arrays

    def _dtype(self, lo: int, hi: int, address: int, default: str) -> str:
        """The element type of the memory at ``address`` in [lo, hi): that of an array viewing it (an
        enceladus.Tensor's view rather than the raw bytes of its allocation), else ``default``."""
        from enceladus.runtime.launch import byte_span

        best = None
        for a in self.arrays():
            a_lo, a_hi = byte_span(a)
            inside = lo <= a_lo and a_hi <= hi and a_lo <= address < a_hi and a.size
            if inside and (best is None or (best.dtype == np.uint8 and a.dtype != np.uint8)):
                best = a
        return best.dtype.str if best is not None else default

    def owner(self, address: int) -> Span | None:
        from enceladus.backends.cpu.memory import LIVE

        for lo, n in list(LIVE.items()):
            if lo <= address < lo + n:
                return Span(lo, lo + n, self._dtype(lo, lo + n, address, "|u1"), "enceladus.Tensor")
        self.arrays()
        inside = np.flatnonzero((self._bounds[0] <= address) & (address < self._bounds[1]))
        if not inside.size:
            return None
        # the largest holder (two roots overlap only when both view memory NumPy does not own)
        i = max(inside.tolist(), key=lambda k: int(self._bounds[1, k] - self._bounds[0, k]))
        lo, hi = int(self._bounds[0, i]), int(self._bounds[1, i])
        return Span(lo, hi, self._dtype(lo, hi, address, self._roots[i].dtype.str), "numpy")


def reachable_memory(arrays: list[np.ndarray], spans: list[tuple[int, int]], args: bytes | None) -> list[Span]:
    """The memory, besides the launch's arguments (``arrays`` at byte ``spans``), that integers the kernel reads
    (64-bit elements of its arguments, its packed scalars ``args``) point into, and, transitively, that the
    64-bit elements of that memory point into. A value inside no allocation (a null, a plain integer) is left."""
    known = list(spans)
    pending = [_words(np.ascontiguousarray(a).tobytes()) for a in arrays if a.dtype.str in _ADDRESS_DTYPES]
    if args:
        pending.append(_words(args))
    owners = _Owners()
    found: list[Span] = []
    while pending:
        for w in np.unique(pending.pop()).tolist():
            if w == 0 or any(lo <= w < hi for lo, hi in known):
                continue
            span = owners.owner(w)
            if span is None:
                continue  # one past the end of a known span, or an integer that is no address
            found.append(span)
            known.append((span.lo, span.hi))
            if span.dtype in _ADDRESS_DTYPES:
                pending.append(_words(ctypes.string_at(span.lo, span.hi - span.lo)))
    return found


class Recorder:
    """Patches KernelLauncher.submit to save launches into ``out``."""

    def __init__(self, out: str, max_bytes: int) -> None:
        self.out = out
        self.max_bytes = max_bytes
        self.sizes: dict[str, int] = {}  # MSL digest -> bytes of the recorded launch
        self.skipped: dict[str, str] = {}
        os.makedirs(out, exist_ok=True)

    def install(self) -> None:
        from enceladus.runtime import launch as launch_mod

        original = launch_mod.KernelLauncher.submit
        recorder = self

        def submit(kl: Any, grid: Any, addresses: list[int], scalars: list[Any], keepalive: Any,
                   asynchronous: bool, *rest: Any, **options: Any) -> None:  # extents, timeout: passed through
            from enceladus.runtime.stream import wait_all_idle

            wait_all_idle()
            state = recorder.before(kl, grid, addresses, scalars, keepalive)
            original(kl, grid, addresses, scalars, keepalive, False, *rest, **options)
            if state is not None:
                recorder.after(*state)

        launch_mod.KernelLauncher.submit = submit

    def _arrays(self, kl: Any, addresses: list[int], keepalive: Any) -> list[np.ndarray] | None:
        from enceladus.runtime import arguments

        candidates: list[Any] = []
        if isinstance(keepalive, list):
            candidates = list(keepalive)
        elif isinstance(keepalive, tuple) and len(keepalive) == 2:
            args, kwargs = keepalive
            for v in [*args, *kwargs.values()]:
                candidates.extend(v if isinstance(v, tuple | list) else [v])
        by_address: dict[int, np.ndarray] = {}
        for c in candidates:
            try:
                arr = arguments.as_numpy(c)
            except Exception:
                continue
            if isinstance(arr, np.ndarray):
                by_address.setdefault(int(arr.__array_interface__["data"][0]), arr)
        arrays = [by_address.get(a) for a in addresses]
        return None if any(a is None for a in arrays) else arrays  # type: ignore[return-value]

    def before(self, kl: Any, grid: Any, addresses: list[int], scalars: list[Any], keepalive: Any) -> Any:
        from enceladus.runtime.launch import byte_span, pack_scalars

        msl = kl.kernel.asm["msl"]
        digest = hashlib.sha256(msl.encode()).hexdigest()[:16]
        arrays = self._arrays(kl, addresses, keepalive)
        if arrays is None:
            self.skipped.setdefault(digest, f"{kl.name}: could not map buffer addresses to arrays")
            return None
        abi = kl.kernel.abi
        pack = lambda: pack_scalars(kl.kernel, dict(zip(kl.scalar_names, scalars)))  # noqa: E731
        spans = [byte_span(a) for a in arrays]
        memory: list[Span] = []
        if kl.kernel.metadata.get("int_pointers", False):  # memory reached through integer addresses only
            memory = reachable_memory(arrays, spans, pack() if abi.args_slot is not None else None)
        total = sum(hi - lo for lo, hi in spans) + sum(m.hi - m.lo for m in memory)
        if total > self.max_bytes or (digest in self.sizes and self.sizes[digest] <= total):
            if digest not in self.sizes:
                self.skipped.setdefault(digest, f"{kl.name}: every launch moves more than {self.max_bytes} bytes")
            return None
        # Overlapping buffers (aliases, views of one array) share one region on the GPU too.
        all_spans = spans + [(m.lo, m.hi) for m in memory]
        order = sorted(range(len(all_spans)), key=lambda i: all_spans[i][0])
        regions: list[list[int]] = []
        region_of = [0] * len(all_spans)
        for i in order:
            lo, hi = all_spans[i]
            if regions and lo < regions[-1][1]:
                regions[-1][1] = max(regions[-1][1], hi)
            else:
                regions.append([lo, hi])
            region_of[i] = len(regions) - 1
        inputs = [ctypes.string_at(lo, hi - lo) for lo, hi in regions]
        params = sorted(abi.buffer_params, key=lambda p: p.slot)
        buffers = []
        for p, a, addr, r in zip(params, arrays, addresses, region_of):
            buffers.append({"name": p.name, "slot": p.slot, "region": r, "offset": addr - regions[r][0],
                            "dtype": a.dtype.str, "writes": bool(p.writes)})
        meta = {
            "kernel": abi.kernel_name, "name": kl.name, "grid": list(grid), "threads": abi.threads_per_threadgroup,
            "buffers": buffers, "regions": [hi - lo for lo, hi in regions],
            # the host address of each region: replay.py moves integers that point into a region (addresses a
            # kernel makes into pointers, issue #18) to the same offset in that region's device copy
            "host_regions": [lo for lo, hi in regions],
            # memory that is no argument of the launch but that the kernel reaches through integer addresses;
            # the replay allocates, fills and compares it like the arguments
            "memory": [{"region": r, "offset": m.lo - regions[r][0], "nbytes": m.hi - m.lo, "dtype": m.dtype,
                        "origin": m.origin} for m, r in zip(memory, region_of[len(spans):])],
            "args_slot": abi.args_slot,
            "args": pack().hex() if abi.args_slot is not None else None,
        }
        return digest, msl, meta, regions, inputs, total

    def after(self, digest: str, msl: str, meta: dict, regions: list, inputs: list, total: int) -> None:
        outputs = [ctypes.string_at(lo, hi - lo) for lo, hi in regions]
        with open(os.path.join(self.out, f"{digest}.metal"), "w") as f:
            f.write(msl)
        with open(os.path.join(self.out, f"{digest}.json"), "w") as f:
            json.dump(meta, f)
        np.savez_compressed(os.path.join(self.out, f"{digest}.npz"),
                            **{f"in{i}": np.frombuffer(b, np.uint8) for i, b in enumerate(inputs)},
                            **{f"out{i}": np.frombuffer(b, np.uint8) for i, b in enumerate(outputs)})
        self.sizes[digest] = total
        self.skipped.pop(digest, None)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="directory for the recorded corpus")
    ap.add_argument("--max-bytes", type=int, default=4 << 20, help="largest launch recorded (bytes of buffers)")
    ap.add_argument("--no-examples", action="store_true", help="record only the pytest run, not examples/*.py")
    ap.add_argument("pytest_args", nargs="*", default=["tests/codegen"])
    args = ap.parse_args(argv)
    os.environ.setdefault("ENCELADUS_BACKEND", "cpu")
    rec = Recorder(args.out, args.max_bytes)
    rec.install()
    import pytest

    status = pytest.main(["-q", "-n", "0", "-p", "no:cacheprovider", *args.pytest_args])
    if not args.no_examples:
        for name in sorted(os.listdir(os.path.join(ROOT, "examples"))):
            if name.endswith(".py"):
                print(f"recording examples/{name}", file=sys.stderr)
                sys.argv = [name]
                with contextlib.suppress(SystemExit):
                    runpy.run_path(os.path.join(ROOT, "examples", name), run_name="__main__")
    with open(os.path.join(args.out, "skipped.json"), "w") as f:
        json.dump(rec.skipped, f, indent=1)
    print(f"recorded {len(rec.sizes)} distinct kernels into {args.out}; skipped {len(rec.skipped)} "
          f"(see skipped.json); pytest status {int(status)}")
    return 0 if int(status) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
