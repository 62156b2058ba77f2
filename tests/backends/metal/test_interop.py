"""Framework interop routing, checked with stand-ins for what needs a Mac (the launches themselves are
unverified on hardware): torch ``mps`` tensors go through ``torch.mps.compile_shader`` (replaced here by
a stand-in that runs the MSL it receives on the cpu backend with torch's binding rules), MLX arrays
through evaluation + their shared memory (a stand-in ``mlx.core`` module)."""

from __future__ import annotations

import array
import sys
import types
from typing import Any

import numpy as np
import pytest

import enceladus
from enceladus.backends.metal.interop import is_mlx_array, is_torch_mps, launch_torch_mps
from enceladus.runtime.backend import use_backend

from . import kernels

try:  # torch is optional: only the mps tests need it; the MLX and detection tests run without it
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed (the mps routing tests need it)")


class FakeMPSTensor:
    """Looks like an mps tensor to Enceladus (module, device, metadata); its memory is a CPU tensor."""

    def __init__(self, cpu: Any) -> None:
        self.cpu = cpu
        self.device = types.SimpleNamespace(type="mps")
        self.dtype = cpu.dtype

    def storage_offset(self) -> int:
        return self.cpu.storage_offset()

    def element_size(self) -> int:
        return self.cpu.element_size()

    def numel(self) -> int:
        return self.cpu.numel()


FakeMPSTensor.__module__ = "torch.fake_mps"


class FakeShaderLibrary:
    """torch.mps.compile_shader's binding rules (argument i -> buffer(i); tensors as buffer + storage offset;
    ints as int64, floats as float; threads = total threads), executed on the cpu backend."""

    calls: list[dict[str, Any]] = []

    def __init__(self, source: str) -> None:
        self.source = source
        self.lib = enceladus.compile_shader(source)

    def __getattr__(self, name: str) -> Any:
        def run(*args: Any, threads: list[int], group_size: list[int]) -> None:
            FakeShaderLibrary.calls.append({"kernel": name, "threads": threads, "group_size": group_size,
                                            "scalars": [type(a).__name__ for a in args
                                                        if not isinstance(a, FakeMPSTensor)]})
            for a in args:
                assert isinstance(a, (FakeMPSTensor, int, float)), type(a)
            bound = [a.cpu if isinstance(a, FakeMPSTensor) else a for a in args]
            getattr(self.lib, name)(*bound, threads=tuple(threads), threads_per_threadgroup=tuple(group_size))
        return run


@pytest.fixture
def fake_mps(monkeypatch: pytest.MonkeyPatch) -> type[FakeShaderLibrary]:
    monkeypatch.setattr(torch.mps, "compile_shader", FakeShaderLibrary)
    FakeShaderLibrary.calls = []
    return FakeShaderLibrary


def test_detection() -> None:
    assert is_torch_mps(FakeMPSTensor(np.zeros(3)))  # detection reads the module and device only
    assert not is_torch_mps(np.zeros(3))
    assert not is_mlx_array(np.zeros(3))
    assert is_mlx_array(FakeMLXArray("f", bytes(4)))
    assert not is_torch_mps(FakeMLXArray("f", bytes(4)))


@needs_torch
def test_detection_of_real_torch_tensors() -> None:
    assert not is_torch_mps(torch.zeros(3))
    assert is_torch_mps(FakeMPSTensor(torch.zeros(3)))


@needs_torch
def test_mps_tensors_launch_through_compile_shader_with_views(fake_mps) -> None:
    axpy = enceladus.jit(kernels.axpy_kernel.fn)
    x = torch.arange(1200, dtype=torch.float32)
    out = torch.ones(1200)
    axpy[(4,)](FakeMPSTensor(x[200:]), FakeMPSTensor(out[200:]), 2.0, 1000, BLOCK=256)  # views: storage offsets
    np.testing.assert_array_equal(out[200:].numpy(), 2 * np.arange(200, 1200) + 1)
    assert out[:200].eq(1).all()
    (call,) = fake_mps.calls
    tptg = axpy.cache[next(iter(axpy.cache))].abi.threads_per_threadgroup
    assert call["threads"] == [4 * tptg, 1, 1] and call["group_size"] == [tptg, 1, 1]
    assert call["scalars"] == ["float", "int"]  # one parameter per scalar, as compile_shader passes them


@needs_torch
def test_mps_mixed_with_host_arrays_is_refused(fake_mps) -> None:
    axpy = enceladus.jit(kernels.axpy_kernel.fn)
    with pytest.raises(TypeError, match="needs every array argument on mps"):
        axpy[(1,)](FakeMPSTensor(torch.zeros(10)), np.zeros(10, np.float32), 1.0, 10, BLOCK=256)


@needs_torch
def test_launch_torch_mps_refuses_cpu_tensors_before_touching_mps() -> None:
    with pytest.raises(TypeError, match="needs every array argument on mps"):
        launch_torch_mps("kernel void k() {}", "k", (1,), 128, [torch.zeros(4)], [])


class FakeMLXArray(array.array):
    """An object of module ``mlx.core`` exposing float32 memory through the buffer protocol."""


FakeMLXArray.__module__ = "mlx.core"


@pytest.fixture
def fake_mlx(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    evaluated: list[Any] = []
    core = types.ModuleType("mlx.core")
    core.eval = lambda *arrays: evaluated.extend(arrays)  # type: ignore[attr-defined]
    pkg = types.ModuleType("mlx")
    pkg.core = core  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "mlx", pkg)
    monkeypatch.setitem(sys.modules, "mlx.core", core)
    return evaluated


def test_mlx_arrays_are_evaluated_and_bound_through_shared_memory(fake_mlx, metal) -> None:
    x = FakeMLXArray("f", np.arange(1000, dtype=np.float32).tobytes())
    out = FakeMLXArray("f", bytes(4000))
    with use_backend(metal):  # the metal host code on the recording stand-in: wrapped without a copy
        add = enceladus.jit(kernels.add_kernel.fn)
        add[(4,)](x, x, out, 1000, BLOCK=256)
    np.testing.assert_array_equal(np.asarray(memoryview(out)), 2 * np.arange(1000, dtype=np.float32))
    assert any(a is out for a in fake_mlx)  # evaluated before its memory was used


def test_mlx_and_detection_tests_run_without_torch(tmp_path) -> None:
    """The file once skipped as a whole when torch was missing, MLX tests included: run it with torch
    made unimportable and require the torch-free tests to pass, not skip."""
    import os
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    code = ("import sys; sys.modules['torch'] = None; import pytest; "
            "sys.exit(pytest.main(['-q', '-n', '0', '-p', 'no:cacheprovider', '-rs', "
            "'tests/backends/metal/test_interop.py', '-k', 'not without_torch']))")
    env = {**os.environ, "ENCELADUS_CACHE_DIR": str(tmp_path)}
    res = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert "2 passed" in res.stdout and "4 skipped" in res.stdout, res.stdout[-2000:]
