"""Kernels using block pointers and tensor descriptors."""

import enceladus
import enceladus.language as tl


@enceladus.jit
def descriptor_copy_kernel(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    src = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    dst = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    tile = src.load([pid_m * BM, pid_n * BN])
    dst.store([pid_m * BM, pid_n * BN], tile * 2)


@enceladus.jit
def block_ptr_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a_bp = tl.make_block_ptr(a_ptr, shape=(M, K), strides=(K, 1), offsets=(pid_m * BM, 0), block_shape=(BM, BK),
                             order=(1, 0))
    b_bp = tl.make_block_ptr(b_ptr, shape=(K, N), strides=(N, 1), offsets=(0, pid_n * BN), block_shape=(BK, BN),
                             order=(1, 0))
    acc = tl.zeros((BM, BN), tl.float32)
    for _ in range(0, K, BK):
        a = tl.load(a_bp, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_bp, boundary_check=(0, 1), padding_option="zero")
        acc += tl.dot(a, b)
        a_bp = tl.advance(a_bp, (0, BK))
        b_bp = tl.advance(b_bp, (BK, 0))
    c_bp = tl.make_block_ptr(c_ptr, shape=(M, N), strides=(N, 1), offsets=(pid_m * BM, pid_n * BN),
                             block_shape=(BM, BN), order=(1, 0))
    tl.store(c_bp, acc, boundary_check=(0, 1))


@enceladus.jit
def host_descriptor_kernel(src_desc, dst_desc, pair, BM: tl.constexpr, BN: tl.constexpr):
    # a host TensorDescriptor argument and a tuple argument (a pointer and a scale)
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    out_ptr, scale = pair
    tile = src_desc.load([pid_m * BM, pid_n * BN])
    dst_desc.store([pid_m * BM, pid_n * BN], tile * scale)
    tl.store(out_ptr + pid_m * tl.num_programs(1) + pid_n, tl.sum(tl.sum(tile, 1), 0))


@enceladus.jit
def descriptor_functions_kernel(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    # the top-level forms of desc.load / desc.store
    src = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    dst = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    i = tl.program_id(0) * BM
    j = tl.program_id(1) * BN
    tl.store_tensor_descriptor(dst, [i, j], tl.load_tensor_descriptor(src, [i, j]) + 1)


@enceladus.jit
def descriptor_gather_scatter_kernel(x_ptr, rows_ptr, out_ptr, dst_rows_ptr, M, N, col0, R: tl.constexpr,
                                     BN: tl.constexpr):
    # rows[k] of x, columns col0 .. col0 + BN, written to rows dst_rows[k] of out (same columns)
    src = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[1, BN])
    dst = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[N, 1], block_shape=[1, BN])
    rows = tl.load(rows_ptr + tl.arange(0, R))
    dst_rows = tl.load(dst_rows_ptr + tl.arange(0, R))
    block = src.gather(rows, col0)
    dst.scatter(block * 10, dst_rows, col0)


@enceladus.jit
def _scaled_copy(src: tl.tensor_descriptor, dst: tl.tensor_descriptor, i, j):
    tl.static_assert(isinstance(src, tl.tensor_descriptor))
    tl.static_assert(isinstance(src.type, tl.tensor_descriptor_type))
    tl.static_assert(src.type.block_shape == [16, 32])
    tl.static_assert(src.type.element_ty == tl.float32)
    tl.static_assert(src.dtype == tl.float32 and src.block_shape == [16, 32])  # desc.dtype, as Triton's
    dst.store([i, j], (src.load([i, j]) * 3).to(dst.dtype))


@enceladus.jit
def descriptor_type_kernel(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    src = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    dst = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    _scaled_copy(src, dst, tl.program_id(0) * BM, tl.program_id(1) * BN)
