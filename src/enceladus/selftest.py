"""``python -m enceladus.selftest``: run the examples and a small conformance subset, print a report.

For the first person with a Mac: it says which backend ran (metal or cpu), the device, each check's
result and timing. ``--require-metal`` fails unless the kernels really ran on Metal.

    python -m enceladus.selftest                 # whatever backend is available
    python -m enceladus.selftest --require-metal # exit 1 unless every check ran on the Apple GPU
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import enceladus
import enceladus.language as tl

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@enceladus.jit
def _add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@enceladus.jit
def _axpy(x_ptr, out_ptr, a, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, a * tl.load(x_ptr + offs, mask=mask) + tl.load(out_ptr + offs, mask=mask), mask=mask)


@enceladus.jit
def _divmod(out_ptr, n, BLOCK: tl.constexpr):
    # (idx / 65536) % 6 once miscompiled on Apple GPUs (PyTorch PR #175481): keep it as a regression check
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, (offs // 65536) % 6, mask=offs < n)


def _launch(backend: Any, ck: Any, grid: int, arrays: dict[str, np.ndarray], scalars: dict[str, Any]) -> None:
    """Launch a compiled kernel straight on the backend (independent of the JIT's launcher)."""
    from .runtime.launch import pack_scalars

    fn = backend.compile(ck.asm["msl"]).function(ck.abi.kernel_name)
    packed = pack_scalars(ck, scalars)
    if backend.name == "metal":
        buffers: dict[int, Any] = {p.slot: arrays[p.name] for p in ck.abi.buffer_params}
        if ck.abi.args_slot is not None:
            buffers[ck.abi.args_slot] = packed
    else:
        import ctypes

        raw = ctypes.create_string_buffer(packed, max(len(packed), 1))
        buffers = {p.slot: arrays[p.name].ctypes.data for p in ck.abi.buffer_params}
        if ck.abi.args_slot is not None:
            buffers[ck.abi.args_slot] = ctypes.addressof(raw)
    fn.launch((grid, 1, 1), (ck.abi.threads_per_threadgroup, 1, 1), buffers)


def _check_add(backend: Any) -> str:
    n, block = 1_000_003, 1024
    x = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
    y = np.random.default_rng(1).standard_normal(n, dtype=np.float32)
    out = np.zeros_like(x)
    ck = enceladus.compile(_add, "*fp32,*fp32,*fp32,i32", {"BLOCK": block})
    _launch(backend, ck, enceladus.cdiv(n, block), {"x_ptr": x, "y_ptr": y, "out_ptr": out}, {"n": n})
    np.testing.assert_array_equal(out, x + y)
    return f"{n} elements"


def _check_axpy(backend: Any) -> str:
    n, block = 4099, 256
    x = np.arange(n, dtype=np.float32)
    out = np.ones(n, dtype=np.float32)
    ck = enceladus.compile(_axpy, "*fp32,*fp32,fp32,i32", {"BLOCK": block})
    _launch(backend, ck, enceladus.cdiv(n, block), {"x_ptr": x, "out_ptr": out}, {"a": 0.5, "n": n})
    np.testing.assert_allclose(out, 0.5 * np.arange(n, dtype=np.float32) + 1, rtol=1e-6)
    return "in-place update, float scalar"


def _check_divmod(backend: Any) -> str:
    n, block = 1 << 20, 1024
    out = np.full(n, -1, dtype=np.int32)
    ck = enceladus.compile(_divmod, "*i32,i32", {"BLOCK": block})
    _launch(backend, ck, n // block, {"out_ptr": out}, {"n": n})
    np.testing.assert_array_equal(out, (np.arange(n) // 65536) % 6)
    return "(idx // 65536) % 6"


def _bench_add(backend: Any) -> str:
    """GPU-timed vector add on device memory (metal only)."""
    if backend.name != "metal":
        return "skipped (GPU timing needs the metal backend)"
    n, block, reps = 1 << 24, 1024, 20
    ck = enceladus.compile(_add, "*fp32,*fp32,*fp32,i32", {"BLOCK": block})
    fn = backend.compile(ck.asm["msl"]).function(ck.abi.kernel_name)
    from .runtime.launch import pack_scalars

    bufs = [backend.alloc(4 * n) for _ in range(3)]
    packed = pack_scalars(ck, {"n": n})
    with backend.timed() as t:
        for _ in range(reps):
            fn.launch((n // block, 1, 1), (ck.abi.threads_per_threadgroup, 1, 1),
                      {0: bufs[0], 1: bufs[1], 2: bufs[2], ck.abi.args_slot: packed})
    per = t.seconds / reps
    for b in bufs:
        b.release()
    return f"{per * 1e6:.1f} us per launch, {3 * 4 * n / per / 1e9:.0f} GB/s (GPU timestamps, {reps} launches)"


def _run_example(path: Path) -> str:
    env = dict(os.environ)
    r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=600)
    if r.returncode != 0:
        raise RuntimeError((r.stdout + r.stderr).strip()[-2000:])
    return r.stdout.strip().splitlines()[-1] if r.stdout.strip() else "ok"


def main(argv: list[str] | None = None) -> int:
    """Run every check, print the report, return the exit status."""
    ap = argparse.ArgumentParser(prog="python -m enceladus.selftest", description=__doc__.splitlines()[0])
    ap.add_argument("--require-metal", action="store_true", help="fail unless the kernels ran on Metal")
    ap.add_argument("--no-examples", action="store_true", help="skip the scripts in examples/")
    args = ap.parse_args(argv)

    from .runtime.backend import backend_notes, get_backend

    print(f"Enceladus {enceladus.__version__} self-test")
    print(f"platform: {platform.platform()} ({platform.machine()}), Python {platform.python_version()}")
    try:
        backend = get_backend()
    except Exception as e:
        print(f"backend: NONE ({e})")
        return 1
    device = getattr(backend, "device_name", None) or (
        f"host CPU ({platform.machine()}), MSL compiled by {' '.join(backend.compiler.command)}")
    print(f"backend: {backend.name}   device: {device}")
    if backend.name == "metal":
        print(f"MSL language version: {backend.device.language_name}")
    for note in backend_notes():
        print(f"note: {note}")

    checks: list[tuple[str, Callable[[], str]]] = [
        ("vector add (NumPy arrays)", lambda: _check_add(backend)),
        ("axpy in place", lambda: _check_axpy(backend)),
        ("integer div/mod regression", lambda: _check_divmod(backend)),
        ("vector add bandwidth", lambda: _bench_add(backend)),
    ]
    if not args.no_examples:
        for path in sorted(EXAMPLES.glob("[!_]*.py")) if EXAMPLES.is_dir() else []:
            checks.append((f"example {path.name}", lambda p=path: _run_example(p)))
    failed = 0
    for name, check in checks:
        t0 = time.perf_counter()
        try:
            detail = check()
            status = "PASS"
        except Exception as e:
            failed += 1
            status = "FAIL"
            detail = f"{type(e).__name__}: {e}"
            if os.environ.get("ENCELADUS_SELFTEST_TRACEBACK"):
                traceback.print_exc()
        print(f"  [{status}] {name:32s} {time.perf_counter() - t0:7.3f} s  {detail}")
    print(f"{len(checks) - failed} passed, {failed} failed (backend: {backend.name})")
    if args.require_metal and backend.name != "metal":
        print("--require-metal: the kernels did NOT run on Metal", file=sys.stderr)
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
