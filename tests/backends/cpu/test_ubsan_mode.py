"""The cpu backend's UBSan mode (ENCELADUS_CPU_UBSAN=1, MSL_AUDIT B2): kernels built without -fwrapv with
signed-overflow and shift checks, so behaviour MSL leaves undefined is reported instead of wrapping silently."""

from __future__ import annotations

import numpy as np
import pytest

import enceladus
from enceladus.backends.cpu import CompilerNotFoundError, CpuBackend, KernelLaunchError
from enceladus.backends.cpu.toolchain import CompilerInfo, kernel_flags
from paths import needs_clang

# Raw MSL (not generated): a signed add that overflows for the largest input, and a shift by the type's width.
OVERFLOW_MSL = """
#include <metal_stdlib>
using namespace metal;
kernel void bump(device const int* x [[buffer(0)]], device int* y [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    y[i] = x[i] + 1;
}
kernel void shift(device const int* x [[buffer(0)]], device int* y [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    y[i] = 1 << x[i];
}
"""


@pytest.fixture
def ubsan(monkeypatch):
    monkeypatch.setenv("ENCELADUS_CPU_UBSAN", "1")


def _launch(lib, name, x):
    y = np.zeros_like(x)
    lib.function(name).launch((1, 1, 1), (len(x), 1, 1), {0: x.ctypes.data, 1: y.ctypes.data})
    return y


@needs_clang
def test_ubsan_mode_reports_a_signed_overflow_in_raw_msl(ubsan):
    lib = CpuBackend().compile(OVERFLOW_MSL)
    assert lib.ubsan and "-fwrapv" not in lib._flags and any(f.startswith("-fsanitize=") for f in lib._flags)
    np.testing.assert_array_equal(_launch(lib, "bump", np.arange(4, dtype=np.int32)), [1, 2, 3, 4])  # clean
    x = np.array([0, 2**31 - 1], np.int32)
    with pytest.raises(KernelLaunchError, match=r"line 5: .*signed integer overflow: 2147483647 \+ 1 cannot be "
                                                r"represented in type 'int'"):
        _launch(lib, "bump", x)
    with pytest.raises(KernelLaunchError, match=r"line 8: .*shift out of bounds: 1 << or >> 32"):
        _launch(lib, "shift", np.array([1, 32], np.int32))


@needs_clang
def test_ubsan_mode_through_compile_shader(ubsan):
    lib = enceladus.compile_shader(OVERFLOW_MSL)  # the test suite's backend is cpu
    x = np.array([2**31 - 1], np.int32)
    with pytest.raises(Exception, match="signed integer overflow"):
        lib.bump(x, np.zeros_like(x), threads=(1,))


def test_without_ubsan_the_overflow_wraps_silently(monkeypatch):
    monkeypatch.delenv("ENCELADUS_CPU_UBSAN", raising=False)
    lib = CpuBackend().compile(OVERFLOW_MSL)
    assert "-fwrapv" in lib._flags
    np.testing.assert_array_equal(_launch(lib, "bump", np.array([2**31 - 1], np.int32)), [-(2**31)])


def test_ubsan_mode_fails_instead_of_skipping_without_clang():
    gcc = CompilerInfo(command=("g++",), kind="gcc", version="g++ (stand-in)")
    with pytest.raises(CompilerNotFoundError, match="needs clang"):
        kernel_flags(gcc, ubsan=True)
    assert "-fwrapv" in kernel_flags(gcc, ubsan=False)
