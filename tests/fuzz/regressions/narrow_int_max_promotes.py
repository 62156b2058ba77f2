# ruff: noqa: F841
"""A program from the differential fuzzer (tests/fuzz/generator.py).

Found by the 36,378-program campaign (3 Dec 2026): tl.max of a bool tile is int32 in Triton 3.9 (standard.py max/min promote types narrower than 32 bits), so bool tile + its max is int32 (True + 1 == 2), not an int1 wrap-around (the interpreter gave 0).
"""

import enceladus
import enceladus.language as tl

LAUNCH = {'M': 2, 'N': 2, 'grid': 1, 'n': 4, 'n_iter': 0, 'flag': 0, 'seed': 0, 'inputs': [(0, 'int1', '2d')], 'outputs': [('int32', [2, 2])], 'atomics': [], 'features': [], 'floats': []}


@enceladus.jit
def fuzz_kernel(in0_ptr, out0_ptr, n, n_iter, flag, M: tl.constexpr, N: tl.constexpr):
    pid = tl.program_id(0)
    rows = tl.arange(0, M)
    cols = tl.arange(0, N)
    flat = rows[:, None] * N + cols[None, :]
    offs = pid * (M * N) + flat
    mask = offs < n
    x0 = tl.load(in0_ptr + offs)
    v0 = tl.max(x0, axis=0)
    v1 = x0 + v0[:, None]
    tl.store(out0_ptr + pid * 4 + tl.arange(0, 2)[:, None] * 2 + tl.arange(0, 2)[None, :], v1)
