"""Record every distinct kernel the codegen test corpus and the examples launch, for replay on a GPU.

Runs here, on the cpu backend (no GPU needed)::

    python -m benchmarks.gpu_proxy.record --out /tmp/corpus [pytest arguments, default: tests/codegen]

While pytest (and then each example) runs, every launch of a compiled kernel is intercepted: the MSL,
grid, threads per threadgroup, packed scalars, and the bytes of every buffer before and after the launch
(the cpu backend's results, which the tests check against NumPy) are saved, one launch per distinct MSL
(the smallest seen, at most --max-bytes). ``replay.py`` runs the same MSL through the CUDA rewrite on
the GPU, under compute-sanitizer, and compares the outputs.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import hashlib
import json
import os
import runpy
import sys
from typing import Any

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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
        spans = [byte_span(a) for a in arrays]
        total = sum(hi - lo for lo, hi in spans)
        if total > self.max_bytes or (digest in self.sizes and self.sizes[digest] <= total):
            if digest not in self.sizes:
                self.skipped.setdefault(digest, f"{kl.name}: every launch moves more than {self.max_bytes} bytes")
            return None
        # Overlapping buffers (aliases, views of one array) share one region on the GPU too.
        order = sorted(range(len(spans)), key=lambda i: spans[i][0])
        regions: list[list[int]] = []
        region_of = [0] * len(spans)
        for i in order:
            lo, hi = spans[i]
            if regions and lo < regions[-1][1]:
                regions[-1][1] = max(regions[-1][1], hi)
            else:
                regions.append([lo, hi])
            region_of[i] = len(regions) - 1
        inputs = [ctypes.string_at(lo, hi - lo) for lo, hi in regions]
        abi = kl.kernel.abi
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
            "args_slot": abi.args_slot,
            "args": pack_scalars(kl.kernel, dict(zip(kl.scalar_names, scalars))).hex() if abi.args_slot is not None
            else None,
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
