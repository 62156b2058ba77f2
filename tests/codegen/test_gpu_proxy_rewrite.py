"""The GPU proxy's MSL -> CUDA rewrite (benchmarks/gpu_proxy/rewrite.py) on reviewed MSL: what each rule
produces. tests/conftest.py also rewrites and type-checks every kernel a test session launches."""

import os
import pathlib
import re

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from paths import needs_cpu

from .gpu_proxy_loader import gpu_proxy

ProxyTranslationError = gpu_proxy("rewrite").ProxyTranslationError
translate = gpu_proxy("rewrite").translate
ROOT = pathlib.Path(__file__).parent.parent.parent
GOLDEN = ROOT / "tests" / "codegen" / "golden"


def test_softmax_golden_becomes_cuda():
    module = translate((GOLDEN / "softmax.metal").read_text())
    src = module.source
    kernel = module.kernels["softmax_kernel"]
    # [[max_total_threads_per_threadgroup(128)]] becomes the wrapper's __launch_bounds__(128)
    assert kernel.symbol == "enc_proxy_softmax_kernel" and kernel.launch_bound == 128
    assert [(p.name, p.slot, p.kind) for p in kernel.params] == [
        ("x_ptr", 0, "pointer"), ("out_ptr", 1, "pointer"), ("enc_args", 2, "bytes")]
    assert "__shared__ __align__(16) float enc_smem3[4];" in src
    assert "__device__ __forceinline__ void softmax_kernel(" in src
    assert "static __device__ __forceinline__ void enc_combine1(" in src
    assert 'extern "C" __global__ void __launch_bounds__(128) enc_proxy_softmax_kernel(const float* x_ptr, ' \
           "float* out_ptr, softmax_kernel_args enc_args)" in src
    assert "softmax_kernel(x_ptr, out_ptr, enc_args, uint3(blockIdx.x, blockIdx.y, blockIdx.z), " \
           "uint(enc_linear_tid), uint((enc_linear_tid & 31u)), uint((enc_linear_tid >> 5)));" in src
    body = src.split('#line 1 "kernel.metal"', 1)[1]
    assert not re.search(r"\b(device|constant|threadgroup)\b(?!_)", body.split("#line 1", 1)[0])
    assert "#pragma METAL" not in src and "using namespace metal" not in src and "[[" not in body
    # line structure is kept: the kernel declaration is on the same line as in the MSL
    msl_lines = (GOLDEN / "softmax.metal").read_text().splitlines()
    cuda_lines = body.split("\n")[1:]
    assert msl_lines.index(next(line for line in msl_lines if line.startswith("kernel void"))) == \
        cuda_lines.index(next(line for line in cuda_lines if "void softmax_kernel(" in line))


def test_diagnostic_fast_math_is_opt_in():
    """rewrite.py's DIAGNOSTIC (issue 22): precise:: calls become fast:: and nvcc gets -prec-div=false (fp32
    division as div.full.f32), only when asked; the default keeps our precise math and nvcc's IEEE division."""
    msl = (GOLDEN / "softmax.metal").read_text()
    assert "precise::exp(" in msl
    plain = translate(msl)
    assert "precise::exp(" in plain.source and "fast::" not in plain.source and plain.nvcc_flags == ()
    diag = translate(msl, diagnostic_fast_math=True)
    assert "precise::" not in diag.source and "fast::exp(" in diag.source
    assert diag.nvcc_flags == ("-prec-div=false",)
    assert diag.source.replace("fast::", "precise::") == plain.source  # nothing else changes
    flags = gpu_proxy("cuda").nvcc_flags(("-Xptxas", "-v", *diag.nvcc_flags))
    assert "-prec-div=false" in flags and "-prec-div=true" not in flags and "-prec-sqrt=true" in flags
    assert gpu_proxy("cuda").nvcc_flags(()).count("-prec-div=true") == 1


def test_launch_bound_and_literals():
    msl = """#include <metal_stdlib>
using namespace metal;
[[max_total_threads_per_threadgroup(256)]]
kernel void k(device half* out [[buffer(0)]], uint tid [[thread_position_in_grid]]) {
    threadgroup half tile[64];
    #pragma unroll full
    for (int i = 0; i < 2; ++i) tile[i] = 1.5h;
    out[tid] = tile[0];
}
"""
    module = translate(msl)
    assert module.kernels["k"].launch_bound == 256
    assert "__launch_bounds__(256) enc_proxy_k(half* out)" in module.source
    assert "half(1.5f)" in module.source and "#pragma unroll " in module.source
    assert "uint(blockIdx.x * blockDim.x + threadIdx.x)" in module.source


def test_unknown_file_scope_function_is_refused():
    msl = """#include <metal_stdlib>
using namespace metal;
float helper(float x) { return x; }
kernel void k(device float* out [[buffer(0)]]) { out[0] = helper(1.0f); }
"""
    with pytest.raises(ProxyTranslationError, match="file-scope function"):
        translate(msl)


def test_threadgroup_buffer_parameters_are_refused():
    msl = """#include <metal_stdlib>
using namespace metal;
kernel void k(device float* out [[buffer(0)]], threadgroup float* tmp [[threadgroup(0)]]) { out[0] = tmp[0]; }
"""
    with pytest.raises(ProxyTranslationError, match="threadgroup"):
        translate(msl)


@pytest.mark.skipif(not os.environ.get("ENCELADUS_PROXY_NVCC"), reason="set ENCELADUS_PROXY_NVCC=1 where nvcc exists")
def test_nvcc_compiles_golden(tmp_path):
    build_cubin = gpu_proxy("cuda").build_cubin

    for name in ("softmax", "vector_add", "copy2d", "divmod_chain"):
        build_cubin(translate((GOLDEN / f"{name}.metal").read_text()).source, str(tmp_path / f"{name}.cubin"))



@enceladus.jit
def scaled(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


@needs_cpu
def test_the_recorder_saves_a_launch(tmp_path, monkeypatch):
    """record.py wraps KernelLauncher.submit: it must pass every argument through (extents and timeout joined the
    signature with the cpu backend's access checks, and the recorder's fixed signature broke every launch)."""
    from enceladus.runtime import launch

    monkeypatch.setattr(launch.KernelLauncher, "submit", launch.KernelLauncher.submit)  # restored after the test
    recorder = gpu_proxy("record").Recorder(str(tmp_path), 1 << 20)
    recorder.install()
    x = np.arange(10, dtype=np.float32)
    out = np.zeros(10, np.float32)
    scaled[(1,)](x, out, 10, BLOCK=16, timeout=30)
    np.testing.assert_array_equal(out, x * 2)
    assert len(recorder.sizes) == 1, recorder.skipped
    digest = next(iter(recorder.sizes))
    assert (tmp_path / f"{digest}.metal").read_text().count("kernel void scaled") == 1
