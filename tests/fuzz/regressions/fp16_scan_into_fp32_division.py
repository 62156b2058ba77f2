# ruff: noqa: F841
"""Fuzzer find (long run, round 2): an fp16 reverse cumsum (whose last bit depends on the scan order)
divided into an fp32 output. Not a miscompile: the fp32 output inherits fp16 rounding, so the tolerance
uses the epsilon of the least precise float in the program (harness.tolerance)."""

import enceladus
import enceladus.language as tl

LAUNCH = {'M': 4, 'N': 2, 'grid': 1, 'n': 8, 'n_iter': 0, 'flag': 0, 'seed': 0, 'inputs': [(0, 'int8', '2d'), (1, 'float16', '2d')], 'outputs': [('float32', [4, 2]), ('float16', [4, 2]), ('int8', [4, 2])], 'features': ['div', 'float_reduction'], 'floats': ['float16', 'float32']}


@enceladus.jit
def fuzz_kernel(in0_ptr, in1_ptr, out0_ptr, out1_ptr, out2_ptr, n, n_iter, flag, M: tl.constexpr, N: tl.constexpr):
    pid = tl.program_id(0)
    rows = tl.arange(0, M)
    cols = tl.arange(0, N)
    flat = rows[:, None] * N + cols[None, :]
    offs = pid * (M * N) + flat
    mask = offs < n
    x0 = tl.load(in0_ptr + offs)
    x1 = tl.load(in1_ptr + offs)
    v0 = tl.cumsum(x1, axis=0, reverse=True)
    v1 = x0 + x0
    v4 = v0 / x0
    tl.store(out0_ptr + pid * 8 + tl.arange(0, 4)[:, None] * 2 + tl.arange(0, 2)[None, :], v4)
    tl.store(out1_ptr + pid * 8 + tl.arange(0, 4)[:, None] * 2 + tl.arange(0, 2)[None, :], v0)
    tl.store(out2_ptr + pid * 8 + tl.arange(0, 4)[:, None] * 2 + tl.arange(0, 2)[None, :], v1)
