"""One generated body, two signatures: packed scalars (our encoder) and one parameter per scalar
(torch.mps.compile_shader). Both run here on the cpu backend and must compute the same results."""

from __future__ import annotations

import numpy as np
import pytest

import enceladus
from enceladus.compiler.codegen_msl.signatures import scalars_as_parameters

from . import kernels

BLOCK = 256


@pytest.mark.parametrize("a,big,flag", [(0.5, 2**40 + 123, True), (-3.0, -(2**35) - 7, False)])
def test_same_body_same_results_through_both_signatures(a: float, big: int, flag: bool) -> None:
    n = 1000
    grid = (enceladus.cdiv(n, BLOCK),)
    packed = np.zeros(n, np.float32)
    ck = kernels.mixed_scalars_kernel[grid](packed, a, n, big, flag, BLOCK=BLOCK)
    msl, scalars = scalars_as_parameters(ck.asm["msl"], ck.abi.kernel_name)
    assert [(s.name, s.is_float, s.slot) for s in scalars] == [("a", True, 1), ("n", False, 2), ("big", False, 3),
                                                               ("flag", False, 4)]
    assert "constant long& enc_arg_big [[buffer(3)]]" in msl and "enc_args [[buffer" not in msl
    separate = np.zeros(n, np.float32)
    lib = enceladus.compile_shader(msl)
    getattr(lib, ck.abi.kernel_name)(separate, a, n, big, int(flag), threadgroups=grid,
                                     threads_per_threadgroup=(ck.abi.threads_per_threadgroup,))
    np.testing.assert_array_equal(separate, packed)
    ref = a * np.arange(n, dtype=np.float32) + np.float32(np.fmod(big, 1000))
    np.testing.assert_allclose(packed, ref if flag else -ref, rtol=1e-6)


def test_kernels_without_scalars_are_unchanged() -> None:
    ck = enceladus.compile(kernels.add_kernel, "*fp32,*fp32,*fp32,i32", {"BLOCK": BLOCK})
    msl, scalars = scalars_as_parameters(ck.asm["msl"], ck.abi.kernel_name)
    assert len(scalars) == 1  # n
    src = "kernel void k(device float* p [[buffer(0)]], uint i [[thread_position_in_grid]]) { p[i] = 1; }"
    assert scalars_as_parameters(src, "k") == (src, [])
    with pytest.raises(ValueError, match="no generated kernel 'missing'"):
        scalars_as_parameters(src, "missing")
