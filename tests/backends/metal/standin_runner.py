"""Run a script (e.g. examples/03_matmul.py) with the metal backend's host code on the recording stand-in.

    python tests/backends/metal/standin_runner.py examples/01_vector_add.py
    python tests/backends/metal/standin_runner.py -m enceladus.selftest --no-examples --require-metal

Every kernel the script launches goes through MetalBackend (launcher, queue, NumPy binding,
Tensors, DLPack) and the recording libobjc stand-in, which executes each dispatch on the cpu backend
when its command buffer is waited for; the script's own checks against NumPy then check the
results. Prints one ``STANDIN {json}`` line: dispatches executed, Objective-C messages sent,
protocol violations, Objective-C objects still alive. A check of our host code, not of Metal.
"""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root: tests.* imports

from tests.backends.metal.objc_recorder import RecordingObjCRuntime  # noqa: E402

from enceladus.backends.cpu import CpuBackend  # noqa: E402
from enceladus.backends.metal import MetalBackend  # noqa: E402
from enceladus.runtime.backend import use_backend  # noqa: E402


def main(script: str, *args: str) -> int:
    """Run ``script`` as __main__ on the stand-in; print the STANDIN summary; nonzero if the script failed or
    the protocol was violated."""
    recorder = RecordingObjCRuntime(cpu_backend=CpuBackend())
    backend = MetalBackend(runtime=recorder, macos=15)
    module = args[0] if script == "-m" else None
    sys.argv = [script, *args[1:]] if module else [script, *args]
    status = 0
    with use_backend(backend):
        try:
            if module:
                runpy.run_module(module, run_name="__main__", alter_sys=True)
            else:
                runpy.run_path(script, run_name="__main__")
        except SystemExit as e:
            status = int(e.code or 0)
        import enceladus

        enceladus.synchronize()
    summary = {"backend": backend.name, "dispatches": len(recorder.executed), "kernels": sorted(set(recorder.executed)),
               "messages": len(recorder.calls), "violations": recorder.violations,
               "live_command_buffers": len(recorder.live("MTLCommandBuffer")),
               "live_encoders": len(recorder.live("MTLComputeCommandEncoder"))}
    print("STANDIN " + json.dumps(summary))
    return 1 if recorder.violations else status


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:]))
