"""Kernels for 16-bit atomics (float16, bfloat16; int16 compare-and-swap): a loop on the containing 32-bit word."""

import enceladus
import enceladus.language as tl


@enceladus.jit
def word_atomic_kernel(mem_ptr, val_ptr, old_ptr, n, NSLOT: tl.constexpr, KIND: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(val_ptr + offs, mask=mask)
    p = mem_ptr + offs % NSLOT  # every program and lane hits one of NSLOT elements; neighbours share words
    if KIND == "add":
        old = tl.atomic_add(p, v, mask=mask)
    elif KIND == "max":
        old = tl.atomic_max(p, v, mask=mask)
    elif KIND == "min":
        old = tl.atomic_min(p, v, mask=mask)
    elif KIND == "xchg":
        old = tl.atomic_xchg(p, v, mask=mask)
    else:  # cas: lanes past n offer 0 for 0, which changes nothing
        old = tl.atomic_cas(p, tl.zeros_like(v), v)
    tl.store(old_ptr + offs, old, mask=mask)


@enceladus.jit
def word_atomic_scalar_kernel(mem_ptr, out_ptr):
    # a scalar 16-bit atomic: thread 0 of each program adds 1 and every thread sees its ticket
    ticket = tl.atomic_add(mem_ptr, 1.0)
    tl.store(out_ptr + tl.program_id(0), ticket)


@enceladus.jit
def word_bitwise_kernel(p, KIND: tl.constexpr):
    if KIND == "and":
        tl.atomic_and(p + tl.arange(0, 4), 1)
    elif KIND == "or":
        tl.atomic_or(p + tl.arange(0, 4), 1)
    else:
        tl.atomic_xor(p + tl.arange(0, 4), 1)


@enceladus.jit
def atomic_copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # tl.atomic_load (acquire) and tl.atomic_store (release), masked
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.atomic_load(x_ptr + offs, mask=mask)
    tl.atomic_store(y_ptr + offs, v * 2, mask=mask, sem="release")
    w = tl.atomic_load(x_ptr + offs, mask=mask, sem="relaxed")
    tl.atomic_store(y_ptr + n + offs, w, mask=mask, sem="relaxed")


@enceladus.jit
def chained_sum_kernel(x_ptr, total_ptr, flags_ptr, out_ptr, BLOCK: tl.constexpr):
    # a chained scan: program i waits for program i-1's flag, adds its block's sum to the running total and
    # publishes the new total and its own flag (tl.atomic_poll, tl.atomic_load, tl.atomic_store)
    pid = tl.program_id(0)
    s = tl.sum(tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK)), 0)
    tl.atomic_poll(flags_ptr + pid, 1)
    total = tl.atomic_load(total_ptr) + s
    tl.store(out_ptr + pid, total)
    tl.atomic_store(total_ptr, total, sem="relaxed")
    tl.atomic_store(flags_ptr + pid + 1, 1)


@enceladus.jit
def chained_ticket64_kernel(flags_ptr, counter_ptr, out_ptr, MAGIC: tl.constexpr, SCOPE: tl.constexpr):
    # a chain on 64-bit flags (Metal has no 64-bit atomic load: the poll reads the two words): program i waits until
    # flags[i] holds MAGIC, whose two words both differ from 0, takes a ticket and sets flags[i + 1]
    pid = tl.program_id(0)
    tl.atomic_poll(flags_ptr + pid, MAGIC, scope=SCOPE)
    tl.store(out_ptr + pid, tl.atomic_add(counter_ptr, 1))
    tl.store(flags_ptr + pid + 1, MAGIC)


@enceladus.jit
def atomic_access_refusals(x_ptr, KIND: tl.constexpr):
    if KIND == "load64":
        tl.atomic_load(x_ptr)
    elif KIND == "timeout":
        tl.atomic_poll(x_ptr, 1, timeout_ns=1000)
    elif KIND == "poll_float":
        tl.atomic_poll(x_ptr, 1)
    else:
        tl.atomic_store(x_ptr, 1, sem="acquire")


@enceladus.jit
def u64_minmax_kernel(mx_ptr, mn_ptr, val_ptr, n, NSLOT: tl.constexpr, BLOCK: tl.constexpr):
    # Metal's only 64-bit atomics: max/min on unsigned 64-bit integers, old values not used
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(val_ptr + offs, mask=mask)
    tl.atomic_max(mx_ptr + offs % NSLOT, v, mask=mask)
    tl.atomic_min(mn_ptr + offs % NSLOT, v, mask=mask, sem="relaxed")
    tl.atomic_max(mx_ptr + NSLOT, tl.max(tl.where(mask, v, 0), 0))  # a scalar one


@enceladus.jit
def u64_old_value_kernel(p, out_ptr):
    old = tl.atomic_max(p + tl.arange(0, 4), tl.full([4], 1, tl.uint64))
    tl.store(out_ptr + tl.arange(0, 4), old)


@enceladus.jit
def byte_atomic_kernel(x_ptr, y_ptr, n, NPROG: tl.constexpr, BLOCK: tl.constexpr):
    # 8-bit atomic_load/atomic_store: neighbouring bytes of one word belong to different programs
    offs = tl.program_id(0) + NPROG * tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.atomic_load(x_ptr + offs, mask=mask)
    tl.atomic_store(y_ptr + offs, ~v if v.dtype == tl.int1 else v * 3, mask=mask)
    tl.atomic_store(y_ptr + n + offs, tl.atomic_load(x_ptr + offs, mask=mask, sem="relaxed"), mask=mask,
                    sem="relaxed")


@enceladus.jit
def signed64_max_kernel(p, val_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_max(p, tl.load(val_ptr + offs, mask=offs < n, other=0))


@enceladus.jit
def biased_signed64_max_kernel(p, val_ptr, n, NSLOT: tl.constexpr, BLOCK: tl.constexpr):
    # the fix the int64 refusal offers: signed values kept biased in a uint64 buffer order as unsigned ones
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(val_ptr + offs, mask=mask)
    biased = v.to(tl.uint64, bitcast=True) ^ 0x8000000000000000
    tl.atomic_max(p + offs % NSLOT, biased, mask=mask)
    tl.atomic_min(p + NSLOT + offs % NSLOT, biased, mask=mask)
