"""dot_backend="auto" on Metal, and how MSL with Metal 4 tensor ops is compiled (checked with the recording
stand-in for libobjc: our call sequence, not Metal)."""

from __future__ import annotations

import numpy as np
import pytest

import enceladus
from enceladus.backends.metal import MetalBackend
from enceladus.backends.metal.backend import tensor_ops_options
from enceladus.runtime.backend import use_backend

from .objc_recorder import RecordingObjCRuntime


def _worked_example() -> str:
    """The matmul2d kernel the cpu backend's tensor-ops tests run (execution_simdgroups<4>)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parent.parent / "cpu" / "test_tensor_ops.py"
    spec = importlib.util.spec_from_file_location("enceladus_tensor_ops_corpus", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.WORKED


WORKED = _worked_example()
MSL4 = (0x30002, 0x40000)  # a stand-in OS that compiles MSL 3.2 and 4.0 (macOS 26)


@pytest.fixture
def cpu():
    from enceladus.backends.cpu import CpuBackend

    return CpuBackend()


def test_auto_prefers_matmul2d_only_on_apple10_with_msl4(cpu):
    m1 = MetalBackend(runtime=RecordingObjCRuntime(cpu_backend=cpu, msl_versions=MSL4), macos=26)
    assert m1.prefers_matmul2d() is False  # Metal 4 but no neural accelerators
    m5 = MetalBackend(runtime=RecordingObjCRuntime(cpu_backend=cpu, families=(1007, 1010, 5002), msl_versions=MSL4), macos=26)
    assert m5.prefers_matmul2d() is True  # and its probe kernel built
    old = MetalBackend(runtime=RecordingObjCRuntime(cpu_backend=cpu, families=(1007, 1010, 5002)), macos=15)
    assert old.prefers_matmul2d() is False  # MSL 3.2 has no tensor ops


def test_tensor_ops_msl_needs_msl4_and_declares_its_threadgroup(cpu):
    d26 = MetalBackend(runtime=RecordingObjCRuntime(cpu_backend=cpu, msl_versions=MSL4), macos=26).device
    opts = tensor_ops_options(d26, WORKED)
    assert opts["required_threads"] == (128, 1, 1) and opts["language_version"] == 0x40000
    assert tensor_ops_options(d26, "kernel void k() {}") == {}
    d15 = MetalBackend(runtime=RecordingObjCRuntime(cpu_backend=cpu), macos=15).device
    with pytest.raises(enceladus.CompilationError, match="need MSL 4.0") as info:
        tensor_ops_options(d15, WORKED)
    assert "dot_backend='simdgroup'" in info.value.fix


def test_jit_auto_picks_matmul2d_on_an_m5_class_device(cpu):
    from codegen import dot_kernels as dk

    rec = RecordingObjCRuntime(cpu_backend=cpu, families=(1007, 1010, 5002), msl_versions=MSL4)
    metal = MetalBackend(runtime=rec, macos=26)
    with use_backend(metal):
        a = np.zeros((64, 64), np.float16)
        ck = enceladus.jit(dk.matmul_kernel.fn).warmup(a, a, np.zeros((64, 64), np.float32), 64, 64, 64, 64, 1, 64,
                                                       1, 64, 1, BM=64, BN=64, BK=32, EPILOGUE="none")
    assert ck.metadata["dot_backend"] == "matmul2d" and ck.metadata["uses_tensor_ops"]


def test_uint64_atomics_follow_the_gpu_family(cpu):
    """Metal's 64-bit atomic_max/min: Apple9 (M3 and later) or Apple8 with Mac2 (M2); an M1-class device gets a
    located refusal, an M3-class one the kernel (checked with the recording stand-in: our reading of the family)."""
    from codegen import word_atomic_kernels as wk

    def attempt(families):
        metal = MetalBackend(runtime=RecordingObjCRuntime(cpu_backend=cpu, families=families), macos=15)
        with use_backend(metal):
            v = np.zeros(8, np.uint64)
            return metal.device.atomic_u64_minmax, enceladus.jit(wk.u64_minmax_kernel.fn).warmup(
                v, v, v, 8, NSLOT=2, BLOCK=128)

    ok, ck = attempt((1007, 1008, 1009, 5002))
    assert ok and "atomic_max_explicit((device atomic_ulong*)" in ck.asm["msl"]
    assert attempt((1007, 1008, 2002, 5002))[0]  # M2: Apple8 + Mac2
    with pytest.raises(enceladus.CompilationError, match="Apple9 family"):
        attempt((1007, 5002))
