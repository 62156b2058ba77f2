"""Atomics on tiles with a dimension of size 1, which the layout spreads over several threads."""

import enceladus
import enceladus.language as tl


@enceladus.jit
def column_atomic_kernel(counter_ptr, out_ptr, N: tl.constexpr, KIND: tl.constexpr):
    # an [N, 1] tile of pointers: each element's atomic must run once, its old value is used by every column
    rows = tl.arange(0, N)[:, None]
    if KIND == "add":
        old = tl.atomic_add(counter_ptr + rows, rows + 1)
    else:
        old = tl.atomic_cas(counter_ptr + rows, rows * 0, rows + 100)
    tl.store(out_ptr + rows * N + tl.arange(0, N)[None, :], old + tl.arange(0, N)[None, :])


@enceladus.jit
def row_atomic_kernel(counter_ptr, out_ptr, N: tl.constexpr):
    # [1, N] and [2, 1, N] tiles: size-1 dimensions anywhere, results used through a broadcast
    cols = tl.arange(0, N)[None, :]
    old = tl.atomic_max(counter_ptr + cols, cols)
    pair = tl.arange(0, 2)[:, None, None]
    old3 = tl.atomic_add(counter_ptr + N + pair * N + tl.arange(0, N)[None, None, :], 1)
    tl.store(out_ptr + tl.arange(0, 4)[:, None] * N + cols, old + tl.arange(0, 4)[:, None] * 0)
    tl.store(out_ptr + 4 * N + pair * N + tl.arange(0, N)[None, None, :] + tl.arange(0, 2)[None, :, None] * 2 * N,
             old3 + tl.arange(0, 2)[None, :, None] * 0)
