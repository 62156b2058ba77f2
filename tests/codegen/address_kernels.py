"""Kernels with pointer casts: integer addresses made into pointers (Triton tutorial 08), pointer reinterpretation."""

import enceladus
import enceladus.language as tl


@enceladus.jit
def address_gather_kernel(addr_ptr, out_ptr, N: tl.constexpr):
    # Triton tutorial 08's pattern: a tensor of addresses (data_ptr()s), each made into a pointer
    pid = tl.program_id(0)
    p = tl.load(addr_ptr + pid).to(tl.pointer_type(tl.float32))
    tl.store(out_ptr + pid * N + tl.arange(0, N), tl.load(p + tl.arange(0, N)) * 2)


@enceladus.jit
def address_scatter_kernel(addr_ptr, src_ptr, N: tl.constexpr):
    # the addresses point into an argument of the launch: accesses through them are checked as that argument's
    pid = tl.program_id(0)
    p = tl.load(addr_ptr + pid).to(tl.pointer_type(tl.float16))
    tl.store(p + tl.arange(0, N), tl.load(p + tl.arange(0, N)) + pid.to(tl.float16))


@enceladus.jit
def address_tile_kernel(addr_ptr, out_ptr, N: tl.constexpr):
    # a tile of addresses, one per lane (null for masked-off lanes)
    offs = tl.arange(0, N)
    addr = tl.load(addr_ptr + offs)
    p = addr.to(tl.pointer_type(tl.int32))
    tl.store(out_ptr + offs, tl.load(p, mask=addr != 0, other=-1))


@enceladus.jit
def pointer_cast_kernel(x_ptr, bits_ptr, addr_ptr, nonnull_ptr, N: tl.constexpr):
    # pointer -> pointer (float32 memory read as int32), pointer -> int64 (addresses) and -> int1
    offs = tl.arange(0, N)
    tl.store(bits_ptr + offs, tl.load(x_ptr.to(tl.pointer_type(tl.int32)) + offs))
    tl.store(addr_ptr + offs, (x_ptr + offs).to(tl.int64) - x_ptr.to(tl.int64))
    tl.store(nonnull_ptr, x_ptr.to(tl.int1))


@enceladus.jit
def bad_address_kernel(addr_ptr, KIND: tl.constexpr):
    if KIND == "int32":
        p = tl.load(addr_ptr).to(tl.int32).to(tl.pointer_type(tl.float32))
    else:
        p = addr_ptr.to(tl.float32)
    tl.store(addr_ptr, p.to(tl.int64))


@enceladus.jit
def where_pointers_kernel(cond_ptr, a_ptr, b_ptr, out_ptr, N: tl.constexpr):
    # tl.where between pointers into two arguments: per lane, and once per program (Triton's test_where)
    offs = tl.arange(0, N)
    lane = tl.where(tl.load(cond_ptr + offs) != 0, a_ptr + offs, b_ptr + offs)
    tl.store(out_ptr + offs, tl.load(lane))
    first = tl.where(tl.load(cond_ptr), a_ptr, b_ptr)
    tl.store(out_ptr + N + offs, tl.load(first + offs))


@enceladus.jit
def where_addresses_kernel(cond_ptr, a_ptr, b_ptr, out_ptr, N: tl.constexpr):
    # int64 values made into pointers (any value, aligned or not), selected, and stored back as their addresses
    offs = tl.arange(0, N)
    a = tl.load(a_ptr + offs).to(tl.pi32_t)
    b = tl.load(b_ptr + offs).to(tl.pi32_t)
    tl.store(out_ptr + offs, tl.where(tl.load(cond_ptr + offs), a, b))


@enceladus.jit
def bad_where_pointers_kernel(x_ptr, y_ptr, out_ptr, KIND: tl.constexpr):
    if KIND == "types":
        p = tl.where(tl.program_id(0) == 0, x_ptr, y_ptr)
    else:
        p = x_ptr
    tl.store(out_ptr, p)


@enceladus.jit
def misaligned_load_kernel(addr_ptr, out_ptr):
    p = tl.load(addr_ptr).to(tl.pointer_type(tl.int32))
    tl.store(out_ptr, tl.load(p))
