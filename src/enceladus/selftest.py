"""``python -m enceladus.selftest``: run the examples and a small conformance subset, print a report.

For the first person with a Mac: it says which backend ran (metal or cpu), the device, each check's
result and timing. ``--require-metal`` fails unless the kernels really ran on Metal. The checks:
NumPy launches (wrapped host memory), an in-place update with a float scalar, the integer div/mod
regression, Tensors on a second stream with DLPack export, compile_shader, a do_bench-timed vector
add (GPU timestamps on metal), then examples/01..05 (vector add, softmax, autotuned matmul, flash
attention, layer norm), each of which checks itself against NumPy.

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


def _check_tensors(backend: Any) -> str:
    """The asynchronous path: Tensors, a second stream, numpy() after synchronizing, DLPack to the host."""
    n, block = 10_007, 256
    x = enceladus.tensor(np.arange(n, dtype=np.float32))
    out = enceladus.ones(n)
    s = enceladus.Stream()
    with s:
        for _ in range(5):
            _axpy[(enceladus.cdiv(n, block),)](x, out, 2.0, n, BLOCK=block)
    s.synchronize()
    np.testing.assert_array_equal(out.numpy(), 1 + 10 * np.arange(n, dtype=np.float32))
    host = np.from_dlpack(out[3:], device="cpu")
    np.testing.assert_array_equal(host, out.numpy()[3:])
    return f"5 queued launches, DLPack device {out.__dlpack_device__()}"


def _check_shader(backend: Any) -> str:
    """enceladus.compile_shader with dispatchThreads (a partial edge threadgroup) and scalar parameters."""
    lib = enceladus.compile_shader("""#include <metal_stdlib>
using namespace metal;
kernel void scale(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                  constant float& a [[buffer(2)]], constant uint& n [[buffer(3)]],
                  uint i [[thread_position_in_grid]]) {
    if (i < n) y[i] = a * x[i];
}
""")
    x = np.arange(1001, dtype=np.float32)
    y = np.zeros_like(x)
    lib.scale(x, y, 3.0, x.size, threads=(x.size,))
    np.testing.assert_array_equal(y, 3 * x)
    return "dispatchThreads over 1001 threads"


def _bench_add(backend: Any) -> str:
    """Vector add on Tensors timed with enceladus.testing.do_bench (GPU timestamps on metal)."""
    from .testing import do_bench

    n, block = (1 << 24, 1024) if backend.name == "metal" else (1 << 22, 1024)
    x, y, out = enceladus.ones(n), enceladus.ones(n), enceladus.empty(n)
    ms = do_bench(lambda: _add[(n // block,)](x, y, out, n, BLOCK=block), warmup=10, rep=50)
    np.testing.assert_array_equal(out.numpy()[:4], 2)
    how = "GPU timestamps" if backend.name == "metal" else "wall clock"
    return f"{ms * 1e3:.1f} us per launch, {3 * 4 * n / (ms / 1e3) / 1e9:.1f} GB/s ({how}, {n} elements)"


def _run_example(path: Path, backend: str) -> str:
    env = {**os.environ, "ENCELADUS_BACKEND": backend}  # the backend this report is about, nothing else
    r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=600)
    if r.returncode != 0:
        raise RuntimeError((r.stdout + r.stderr).strip()[-2000:])
    last = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    if f"'{backend}' backend" not in last:
        raise RuntimeError(f"the example did not report running on the {backend} backend: {last!r}")
    return last


def main(argv: list[str] | None = None) -> int:
    """Run every check, print the report, return the exit status."""
    ap = argparse.ArgumentParser(prog="python -m enceladus.selftest", description=__doc__.splitlines()[0])
    ap.add_argument("--require-metal", action="store_true", help="fail unless the kernels ran on Metal")
    ap.add_argument("--no-examples", action="store_true", help="skip the scripts in examples/")
    ap.add_argument("--no-probes", action="store_true", help="skip the device probe report (runtime/probes.py)")
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
        ("Tensors, streams, DLPack", lambda: _check_tensors(backend)),
        ("compile_shader", lambda: _check_shader(backend)),
        ("vector add bandwidth (do_bench)", lambda: _bench_add(backend)),
    ]
    if not args.no_examples:
        for path in sorted(EXAMPLES.glob("[0-9]*.py")) if EXAMPLES.is_dir() else []:
            checks.append((f"example {path.name}", lambda p=path: _run_example(p, backend.name)))
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
    if not args.no_probes:
        from .runtime.probes import report

        print(report(backend))
    if args.require_metal and backend.name != "metal":
        print("--require-metal: the kernels did NOT run on Metal", file=sys.stderr)
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
