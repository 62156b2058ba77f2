"""One corpus of kernels for both paths: each must give the same values, or the same refusal."""

import enceladus
import enceladus.language as tl


@enceladus.jit
def exp_fp16(x_ptr, out_ptr):
    x = tl.load(x_ptr + tl.arange(0, 8)).to(tl.float16)
    tl.store(out_ptr + tl.arange(0, 8), tl.exp(x).to(tl.float32))


@enceladus.jit
def sqrt_member_bf16(x_ptr, out_ptr):
    x = tl.load(x_ptr + tl.arange(0, 8)).to(tl.bfloat16)
    tl.store(out_ptr + tl.arange(0, 8), x.sqrt().to(tl.float32))


@enceladus.jit
def sin_int(x_ptr, out_ptr):
    x = tl.load(x_ptr + tl.arange(0, 8)).to(tl.int32)
    tl.store(out_ptr + tl.arange(0, 8), tl.sin(x).to(tl.float32))


@enceladus.jit
def exp_fp32_of_fp16(x_ptr, out_ptr):
    x = tl.load(x_ptr + tl.arange(0, 8)).to(tl.float16)
    tl.store(out_ptr + tl.arange(0, 8), tl.exp(x.to(tl.float32)))


@enceladus.jit
def bad_expand_dims_axis(x_ptr, out_ptr):
    x = tl.load(x_ptr + tl.arange(0, 8))
    tl.store(out_ptr + tl.arange(0, 8), tl.sum(tl.expand_dims(x, 2), 1))


@enceladus.jit
def broadcast_ranks(x_ptr, out_ptr):
    x = tl.load(x_ptr + tl.arange(0, 8))
    a, b = tl.broadcast(x, tl.zeros([2, 8], tl.float32) + 1.0)
    tl.store(out_ptr + tl.arange(0, 8), tl.sum(a * b, 0))


@enceladus.jit
def descriptor_lists(x_ptr, out_ptr):
    desc = tl.make_tensor_descriptor(x_ptr, shape=[2, 4], strides=[4, 1], block_shape=[2, 4])
    tl.static_assert(desc.block_shape == [2, 4])
    v = desc.load([0, 0])
    tl.store(out_ptr + tl.arange(0, 2)[:, None] * 4 + tl.arange(0, 4)[None, :], v * 2)


@enceladus.jit
def atomic_fp16(x_ptr, out_ptr):
    tl.atomic_add(out_ptr + tl.arange(0, 8), tl.load(x_ptr + tl.arange(0, 8)).to(tl.float16))


@enceladus.jit
def atomic_int64(x_ptr, cnt_ptr):
    tl.atomic_add(cnt_ptr + tl.arange(0, 8), tl.load(x_ptr + tl.arange(0, 8)).to(tl.int64))


@enceladus.jit
def int1_and_shifts(x_ptr, out_ptr):
    x = tl.load(x_ptr + tl.arange(0, 8))
    b = x > 3.0
    i8 = (x * 10 - 40).to(tl.int8)
    u16 = tl.full([8], 2, tl.uint16)
    r = (b + b).to(tl.float32) + (i8 >> u16).to(tl.float32) + tl.umulhi(i8.to(tl.int32), 3).to(tl.float32)
    tl.store(out_ptr + tl.arange(0, 8), r)


@enceladus.jit
def interleave_scalars(x_ptr, out_ptr):
    a = tl.load(x_ptr)
    tl.store(out_ptr + tl.arange(0, 2), tl.interleave(a, a + 1))
