# ruff: noqa: F841
"""A program from the differential fuzzer (tests/fuzz/generator.py).

Found by the 36,378-program campaign (3 Dec 2026): tl.max(bool tile) is int32 in Triton 3.9, so a bitcast to int32 is valid; the interpreter kept int1 and refused it.
"""

import enceladus
import enceladus.language as tl

LAUNCH = {'M': 2, 'N': 2, 'grid': 1, 'n': 4, 'n_iter': 0, 'flag': 0, 'seed': 0, 'inputs': [(0, 'int8', '2d')], 'outputs': [('int32', [2]), ('int8', [2, 2]), ('int32', [2])], 'atomics': [], 'features': [], 'floats': []}


@enceladus.jit
def fuzz_kernel(in0_ptr, out0_ptr, out1_ptr, out2_ptr, n, n_iter, flag, M: tl.constexpr, N: tl.constexpr):
    pid = tl.program_id(0)
    rows = tl.arange(0, M)
    cols = tl.arange(0, N)
    flat = rows[:, None] * N + cols[None, :]
    offs = pid * (M * N) + flat
    mask = offs < n
    x0 = tl.load(in0_ptr + offs)
    v0 = x0 == x0
    v1 = tl.max(v0, axis=0)
    v6 = v1.to(tl.int32, bitcast=True)
    tl.store(out0_ptr + pid * 2 + tl.arange(0, 2), v6)
    tl.store(out1_ptr + pid * 4 + tl.arange(0, 2)[:, None] * 2 + tl.arange(0, 2)[None, :], v0.to(tl.int8))
    tl.store(out2_ptr + pid * 2 + tl.arange(0, 2), v1)
