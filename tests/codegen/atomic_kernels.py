"""Kernels for atomics, gather, histogram and sort."""

import enceladus
import enceladus.language as tl


@enceladus.jit
def atomic_kernel(ptr, val_ptr, old_ptr, n, KIND: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(val_ptr + offs, mask=mask)
    slot = offs % 4  # many programs and lanes hit the same 4 slots
    if KIND == "add":
        old = tl.atomic_add(ptr + slot, v, mask=mask)
    elif KIND == "max":
        old = tl.atomic_max(ptr + slot, v, mask=mask)
    elif KIND == "min":
        old = tl.atomic_min(ptr + slot, v, mask=mask)
    elif KIND == "and":
        old = tl.atomic_and(ptr + slot, v, mask=mask)
    elif KIND == "or":
        old = tl.atomic_or(ptr + slot, v, mask=mask)
    elif KIND == "xor":
        old = tl.atomic_xor(ptr + slot, v, mask=mask)
    else:
        old = tl.atomic_xchg(ptr + slot, v, mask=mask)
    tl.store(old_ptr + offs, old, mask=mask)


@enceladus.jit
def counter_kernel(counter_ptr, out_ptr):
    # a scalar atomic: one ticket per program
    ticket = tl.atomic_add(counter_ptr, 1)
    tl.store(out_ptr + tl.program_id(0), ticket)


@enceladus.jit
def cas_lock_kernel(lock_ptr, total_ptr, BLOCK: tl.constexpr):
    # a spin lock built from atomic_cas/atomic_xchg protecting a non-atomic read-modify-write
    offs = tl.arange(0, BLOCK)
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    t = tl.load(total_ptr + offs)
    tl.store(total_ptr + offs, t + 1)
    tl.debug_barrier()
    tl.atomic_xchg(lock_ptr, 0)


@enceladus.jit
def small_tile_atomic_kernel(ptr, old_ptr):
    # a 16-element tile on 128 threads: replicated; each element's atomic must run once
    offs = tl.arange(0, 16)
    old = tl.atomic_add(ptr + offs, 1)
    tl.store(old_ptr + offs, old)


@enceladus.jit
def gather_kernel(src_ptr, idx_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    src = tl.load(src_ptr + rm[:, None] * N + tl.arange(0, N)[None, :])
    idx = tl.load(idx_ptr + rm[:, None] * K + tl.arange(0, K)[None, :])
    tl.store(out_ptr + rm[:, None] * K + tl.arange(0, K)[None, :], tl.gather(src, idx, 1))


@enceladus.jit
def histogram_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, BINS: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.store(out_ptr + tl.arange(0, BINS), tl.histogram(x, BINS, mask=offs < n))


@enceladus.jit
def sort_kernel(x_ptr, out_ptr, top_ptr, bottom_ptr, M: tl.constexpr, N: tl.constexpr, DIM: tl.constexpr,
                DESC: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], tl.sort(x, DIM, DESC))
    tl.store(top_ptr + rm[:, None] * K + tl.arange(0, K)[None, :], tl.topk(x, K))
    tl.store(bottom_ptr + rm[:, None] * K + tl.arange(0, K)[None, :], tl.topk(x, K, descending=False))


@enceladus.jit
def accumulate_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, KIND: tl.constexpr):
    # one atomic per element onto consecutive addresses, its old value unused: done lane-contiguous
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    if KIND == "add":
        tl.atomic_add(out_ptr + offs, x * 2, mask=mask, sem="relaxed")
    elif KIND == "add_acq_rel":
        tl.atomic_add(out_ptr + offs, x, mask=mask)
    elif KIND == "max":
        tl.atomic_max(out_ptr + offs, x, mask=mask, sem="relaxed")
    elif KIND == "or":
        tl.atomic_or(out_ptr + offs, x, mask=mask, sem="relaxed")
    else:
        tl.atomic_xchg(out_ptr + offs, x, mask=mask, sem="relaxed")


@enceladus.jit
def accumulate_2d_kernel(x_ptr, out_ptr, M, N: tl.constexpr, BM: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    offs = rm[:, None] * N + tl.arange(0, N)[None, :]
    mask = rm[:, None] < M
    tl.atomic_add(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0), mask=mask, sem="relaxed")


@enceladus.jit
def accumulate_kept_kernel(x_ptr, out_ptr, aux_ptr, BLOCK: tl.constexpr, KIND: tl.constexpr):
    # atomics whose layout stays the default blocked one
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if KIND == "histogram":  # addresses from data: no contiguity to gain
        tl.atomic_add(out_ptr + (x & 15), 1, sem="relaxed")
    elif KIND == "stored_too":  # x is also stored 16 bytes at a time: another layout would cost a conversion
        tl.store(aux_ptr + offs, x)
        tl.atomic_add(out_ptr + offs, x, sem="relaxed")
    else:  # the old values are used
        tl.store(aux_ptr + offs, tl.atomic_add(out_ptr + offs, x, sem="relaxed"))
