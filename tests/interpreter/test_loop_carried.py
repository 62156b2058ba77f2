"""A Python int carried through a ``while`` loop is a runtime int32 scalar, as in compiled Triton."""

import numpy as np

import enceladus
import enceladus.language as tl
from paths import run_on_all_paths


@enceladus.jit
def counter_times_int8(x_ptr, acc_ptr, out_ptr, n_iter, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)  # int8
    acc = tl.load(acc_ptr + offs)  # int16
    i = 0
    while i < n_iter:
        acc = (acc + x * i).to(tl.int16)  # x * i is int32: i is the loop's int32 counter, not a Python int
        i += 1
    tl.store(out_ptr + offs, acc)


def test_while_counter_is_int32_in_arithmetic():
    x = np.array([1, -100, 100, 127, -128, 5, 0, 64], np.int8)
    acc0 = np.array([10, 20, 30, 32000, -32000, 0, 7, 1], np.int16)

    def reference(x, acc, out, n_iter):
        a = acc.astype(np.int64)
        for i in range(n_iter):
            a = (a + x.astype(np.int64) * i + 2**15) % 2**16 - 2**15  # int32 product, wrapped to int16 by .to
        return {2: a.astype(np.int16)}

    run_on_all_paths(counter_times_int8, (1,), lambda: (x, acc0, np.zeros(8, np.int16), 4), reference,
                     constexprs={"BLOCK": 8})
