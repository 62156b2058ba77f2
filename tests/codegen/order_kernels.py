"""Kernels whose global accesses must take effect in program order although different threads make them:
a load of elements that other threads later store, a store read back by other threads, two stores of one
element by different threads (passes/device_order.py)."""

import enceladus
import enceladus.language as tl


@enceladus.jit
def add_broadcast_kernel(Z, M: tl.constexpr, N: tl.constexpr, COL: tl.constexpr):
    """Z += Z's row 0 (or column 0) broadcast over the tile: every thread reads elements that others store."""
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    z = tl.load(Z + rm[:, None] * N + rn[None, :])
    if COL:
        z += tl.load(Z + rm[:, None] * N)  # column 0, the same for every column
    else:
        z += tl.load(Z + rn[None, :])  # row 0, the same for every row
    tl.store(Z + rm[:, None] * N + rn[None, :], z)


@enceladus.jit
def dot_epilogue_kernel(X, Y, Z, stride_zm, stride_zn, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                        EPILOGUE: tl.constexpr):
    """Z = X @ Y plus an epilogue reading Z itself: its first column per row ("rows"), its first row per column
    ("cols"), or all of it ("matrix", each element by the thread that stores it)."""
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    acc = tl.dot(tl.load(X + rm[:, None] * K + rk[None, :]), tl.load(Y + rk[:, None] * N + rn[None, :]))
    if EPILOGUE == "rows":
        acc += tl.load(Z + rm * stride_zm)[:, None]
    elif EPILOGUE == "cols":
        acc += tl.load(Z + rn * stride_zn)[None, :]
    elif EPILOGUE == "matrix":
        acc += tl.load(Z + rm[:, None] * stride_zm + rn[None, :] * stride_zn)
    tl.store(Z + rm[:, None] * stride_zm + rn[None, :] * stride_zn, acc.to(Z.dtype.element_ty))


@enceladus.jit
def aliased_rows_kernel(Src, Dst, M: tl.constexpr, N: tl.constexpr):
    """Dst = 2 * Dst + Src's row 0; called with one array as both arguments."""
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    row0 = tl.load(Src + rn)
    z = tl.load(Dst + rm[:, None] * N + rn[None, :])
    tl.store(Dst + rm[:, None] * N + rn[None, :], z * 2 + row0[None, :])


@enceladus.jit
def read_back_reversed_kernel(X, Out, BLOCK: tl.constexpr):
    """Store X, then read it back reversed: each element comes from another thread's store."""
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs, offs * 3 + 1)
    tl.store(Out + offs, tl.load(X + (BLOCK - 1 - offs)))


@enceladus.jit
def read_back_scalar_kernel(X, Out, n, BLOCK: tl.constexpr):
    """Store X, then read one element of it as a scalar (the element another thread stored)."""
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs, offs * 5)
    v = tl.load(X + n)
    tl.store(Out + offs, offs + v)


@enceladus.jit
def store_twice_kernel(X, BLOCK: tl.constexpr):
    """Two stores of every element, by different threads: the second must win."""
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs, offs)
    tl.store(X + (BLOCK - 1 - offs), offs + 1000)


@enceladus.jit
def blocks_chain_kernel(X, NB: tl.constexpr, BLOCK: tl.constexpr):
    """Block k += block k-1 reversed: each iteration reads what other threads stored in the previous one."""
    offs = tl.arange(0, BLOCK)
    for k in range(1, NB):
        prev = tl.load(X + (k - 1) * BLOCK + (BLOCK - 1 - offs))
        cur = tl.load(X + k * BLOCK + offs)
        tl.store(X + k * BLOCK + offs, cur + prev)


@enceladus.jit
def in_place_kernel(X, n, BLOCK: tl.constexpr):
    """X = 2 * X + 1 in place: each element is loaded and stored by the same thread."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(X + offs, tl.load(X + offs, mask=mask) * 2 + 1, mask=mask)


@enceladus.jit
def in_place_loop_kernel(X, Y, stride, N: tl.constexpr, BLOCK: tl.constexpr):
    """Y[row] = X[row] * 2 block by block (in place when X is Y): each block by the threads that load it."""
    row = tl.program_id(0)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(X + row * stride + cols)
        tl.store(Y + row * stride + cols, x * 2)


@enceladus.jit
def shift_row_kernel(X, Y, stride_x, stride_y, N: tl.constexpr):
    """Y[row, c] = X[row, c - 1] (0 at c = 0); in place when X is Y: each thread reads its left neighbour's element."""
    row = tl.program_id(0)
    cols = tl.arange(0, N)
    x = tl.load(X + row * stride_x + cols - 1, mask=cols >= 1, other=0.0)
    tl.store(Y + row * stride_y + cols, x)


@enceladus.jit
def shifted_base_kernel(X, BLOCK: tl.constexpr):
    """X[i + 1] = X[i] + 1 over one block, one offsets value for both accesses but a base one element apart: each
    thread stores the element its right neighbour loads."""
    offs = tl.arange(0, BLOCK)
    tl.store(X + 1 + offs, tl.load(X + offs) + 1)


@enceladus.jit
def narrow_then_wide_kernel(X, Y, BLOCK: tl.constexpr):
    """Y[i] = X[i] with X fp16 and Y fp32, the same offsets: when X is Y's memory, a store covers two elements
    of X that other threads load."""
    offs = tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs).to(tl.float32))


@enceladus.jit
def in_place_atomic_kernel(X, BLOCK: tl.constexpr):
    """X[i] += X[i] by an atomic add, then X[i] = 2 * (its old value), the same offsets (the old values are used:
    the atomic keeps the loads' layout)."""
    offs = tl.arange(0, BLOCK)
    old = tl.atomic_add(X + offs, tl.load(X + offs))
    tl.store(X + offs, old * 2)


@enceladus.jit
def in_place_in_loop_kernel(X, NB: tl.constexpr, BLOCK: tl.constexpr):
    """X[i] += 1, NB times, in a loop (the accesses are not at the kernel's top level)."""
    offs = tl.arange(0, BLOCK)
    for _ in range(NB):
        tl.store(X + offs, tl.load(X + offs) + 1)


@enceladus.jit
def row_scale_kernel(X, Y, stride_x, stride_y, N: tl.constexpr):
    """Y[row] = 2 X[row] (the shape of softmax's accesses: a row's base, then its columns); in place when X is Y."""
    row = tl.program_id(0)
    cols = tl.arange(0, N)
    tl.store(Y + row * stride_y + cols, tl.load(X + row * stride_x + cols) * 2)


@enceladus.jit
def next_row_kernel(X, Y, N: tl.constexpr):
    """Y[4 row + c] = X[4 (row + 1) + c]: the bases differ by 4 elements (a constant term through a product); when X
    is Y, each thread stores an element another thread loads."""
    row = tl.program_id(0)
    cols = tl.arange(0, N)
    tl.store(Y + row * 4 + cols, tl.load(X + (row + 1) * 4 + cols))
