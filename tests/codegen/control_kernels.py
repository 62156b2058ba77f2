"""Kernels whose control flow depends on values loaded from memory the kernel also writes."""

import enceladus
import enceladus.language as tl


@enceladus.jit
def first_visit_kernel(flag_ptr, out_ptr, BLOCK: tl.constexpr):
    # the branch condition is a scalar loaded from memory that a thread then writes inside the branch
    cols = tl.arange(0, BLOCK)
    seen = tl.load(flag_ptr)
    if seen == 0:
        tl.atomic_xchg(flag_ptr, 1)
        v = tl.full((BLOCK,), 7, tl.int32)
    else:
        v = tl.load(out_ptr + cols) + 1
    tl.store(out_ptr + cols, v)


@enceladus.jit
def locked_group_sum_kernel(x_ptr, partial_ptr, lock_ptr, N, GROUPS: tl.constexpr, BLOCK: tl.constexpr):
    # the partial-sum pattern of a layer-norm backward: programs take a per-group spin lock, the first one in a
    # group stores, the later ones accumulate (a lock word and a count word per group)
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
    group = row % GROUPS
    lock = lock_ptr + group
    count_ptr = lock + GROUPS
    dst = partial_ptr + group * N + cols
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    count = tl.load(count_ptr)
    if count == 0:
        tl.atomic_xchg(count_ptr, 1)
    else:
        x += tl.load(dst, mask=mask)
    tl.store(dst, x, mask=mask)
    tl.debug_barrier()
    tl.atomic_xchg(lock, 0)
