"""The neutral MSL signature parser accepts every kernel-argument attribute Metal defines; the cpu backend
refuses, naming it, only what it cannot emulate."""

import pytest

from enceladus.backends.cpu import parse_kernels as cpu_parse_kernels
from enceladus.backends.cpu.errors import MSLSyntaxError
from enceladus.compiler.msl_signature import BUILTIN_DIMS, MSLSignatureError, parse_kernels

QUAD = """
kernel void k(device float* x [[buffer(0)]], texture2d<float> t [[texture(3)]], sampler s [[sampler(1)]],
              uint q [[quadgroup_index_in_threadgroup]], uint2 o [[grid_origin]],
              uint tid [[thread_index_in_threadgroup]]) { x[tid] = float(q); }
"""


def test_metal_parser_accepts_every_kernel_attribute():
    sig = parse_kernels(QUAD)["k"]
    assert [p.attribute for p in sig.params] == ["buffer", "texture", "sampler", "quadgroup_index_in_threadgroup",
                                                 "grid_origin", "thread_index_in_threadgroup"]
    params = ", ".join(f"{'uint3' if dims == 3 else 'uint'} a{i} [[{name}]]"
                       for i, (name, dims) in enumerate(BUILTIN_DIMS.items()))
    assert len(parse_kernels(f"kernel void all({params}) {{}}")["all"].params) == len(BUILTIN_DIMS)


def test_cpu_backend_refuses_what_it_cannot_emulate_by_name():
    with pytest.raises(MSLSyntaxError, match=r"\[\[texture\]\].*cpu backend does not support"):
        cpu_parse_kernels(QUAD)
    with pytest.raises(MSLSyntaxError, match=r"\[\[quadgroup_index_in_threadgroup\]\]"):
        cpu_parse_kernels("kernel void k(uint q [[quadgroup_index_in_threadgroup]]) {}")


@pytest.mark.parametrize("bad,message", [
    ("kernel void k(uint q [[no_such_attribute]]) {}", "Metal does not define"),
    ("kernel void k(device float* x [[buffer(31)]]) {}", "outside 0..30"),
    ("kernel void k(texture2d<float> t [[texture(128)]]) {}", "outside 0..127"),
    ("kernel void k(float3 p [[thread_position_in_grid]]) {}", "use one of"),
])
def test_metal_parser_refuses_what_metal_refuses(bad, message):
    with pytest.raises(MSLSignatureError, match=message):
        parse_kernels(bad)
