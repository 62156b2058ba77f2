# ruff: noqa: F841
"""A program from the differential fuzzer (tests/fuzz/generator.py).

Found by the 36,378-program campaign (3 Dec 2026): ~tl.max(bool tile) was ~ of an int1 in the interpreter (1) and of an int32 compiled (-1); Triton 3.9 reduces max/min of types narrower than 32 bits in int32/fp32.
"""

import enceladus
import enceladus.language as tl

LAUNCH = {'M': 2, 'N': 2, 'grid': 1, 'n': 4, 'n_iter': 0, 'flag': 0, 'seed': 0, 'inputs': [(0, 'int8', '2d'), (1, 'int1', '2d')], 'outputs': [('int32', [2]), ('int8', [2, 2]), ('int8', [2, 2])], 'atomics': [], 'features': [], 'floats': []}


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
    v0 = x0 + x0
    v1 = x0 + x0
    v3 = tl.max(x1, axis=0)
    v7 = ~v3
    tl.store(out0_ptr + pid * 2 + tl.arange(0, 2), v7)
    tl.store(out1_ptr + pid * 4 + tl.arange(0, 2)[:, None] * 2 + tl.arange(0, 2)[None, :], v0)
    tl.store(out2_ptr + pid * 4 + tl.arange(0, 2)[:, None] * 2 + tl.arange(0, 2)[None, :], v1)
