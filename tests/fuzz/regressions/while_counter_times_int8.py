# ruff: noqa: F841
"""A program from the differential fuzzer (tests/fuzz/generator.py): the interpreter took the while loop's counter
`i` as a Python int, so `x0 * i` stayed int8 and wrapped; compiled Triton (and Enceladus) carry it as int32."""

import enceladus
import enceladus.language as tl

LAUNCH = {'M': 2, 'N': 2, 'grid': 1, 'n': 4, 'n_iter': 3, 'flag': 0, 'seed': 0, 'inputs': [(0, 'int8', '2d'), (1, 'int16', '2d')], 'outputs': [('int16', [2, 2])], 'atomics': [], 'features': ['loop'], 'floats': []}


@enceladus.jit
def fuzz_kernel(in0_ptr, in1_ptr, out0_ptr, n, n_iter, flag, M: tl.constexpr, N: tl.constexpr):
    pid = tl.program_id(0)
    rows = tl.arange(0, M)
    cols = tl.arange(0, N)
    flat = rows[:, None] * N + cols[None, :]
    offs = pid * (M * N) + flat
    mask = offs < n
    x0 = tl.load(in0_ptr + offs)
    x1 = tl.load(in1_ptr + offs)
    acc = x1
    i = 0
    while i < n_iter:
        acc = (acc + x0 * i).to(tl.int16)
        i += 1
    v0 = acc
    v1 = -v0
    tl.store(out0_ptr + pid * 4 + tl.arange(0, 2)[:, None] * 2 + tl.arange(0, 2)[None, :], v1)
