"""Dots that take A's fragments from registers and dots whose B runs down memory's columns, on every path against
NumPy, and the static facts that make flash attention fast: every global load 16 bytes wide, only B staged in
threadgroup memory, 2 barriers per iteration (it was 8: both operands staged, a barrier on each side, and two
row reductions across SIMD groups)."""

import numpy as np
import pytest

import enceladus.language as tl
from enceladus.compiler import ir
from enceladus.compiler.frontend import lower_kernel
from enceladus.compiler.passes.layouts import assign_layouts
from enceladus.language.dtypes import float16, int32, pointer_type
from paths import run_on_all_paths

from . import register_dot_kernels as rk

RNG = np.random.default_rng(24)


def _attention_reference(q, k, v, causal, scale):
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    s = q @ k.transpose(0, 2, 1) * scale
    if causal:
        n = q.shape[1]
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    s = np.exp(s - s.max(-1, keepdims=True))
    return (s / s.sum(-1, keepdims=True)) @ v


@pytest.mark.parametrize("dtype,heads,n_ctx,head_dim,block,causal", [
    (np.float16, 2, 100, 64, 32, False),  # a ragged last block: masked K and V rows
    (np.float16, 2, 100, 64, 32, True),
    (np.float32, 1, 96, 32, 32, True),
    (np.float16, 1, 128, 64, 64, False),  # the codegen report's 64x64 blocks
])
def test_attention_on_all_paths(dtype, heads, n_ctx, head_dim, block, causal):
    q, k, v = (RNG.standard_normal((heads, n_ctx, head_dim)).astype(dtype) for _ in range(3))
    scale = 1 / np.sqrt(head_dim)
    want = _attention_reference(q, k, v, causal, scale).astype(dtype)
    tol = 2e-2 if dtype == np.float16 else 1e-4
    run_on_all_paths(rk.attention_kernel, ((n_ctx + block - 1) // block, heads),
                     lambda: (q, k, v, np.zeros_like(q), scale, n_ctx * head_dim, head_dim, n_ctx),
                     lambda *a: {3: want}, constexprs={"HEAD_DIM": head_dim, "BLOCK_M": block, "BLOCK_N": block,
                                                       "CAUSAL": causal}, num_warps=4, rtol=tol, atol=tol)


def test_attention_static_facts():
    q, k, v = (RNG.standard_normal((4, 1024, 64)).astype(np.float16) for _ in range(3))
    ck = rk.attention_kernel.warmup(q, k, v, np.empty_like(q), 0.125, 1024 * 64, 64, 1024, HEAD_DIM=64,
                                    BLOCK_M=64, BLOCK_N=64, CAUSAL=False, num_warps=4)
    assert [(a.kind, a.vector) for a in ck.accesses] == [("load", 8)] * 3 + [("store", 8)], \
        [(a.line, a.vector, a.reason) for a in ck.accesses]
    notes = ck.metadata["notes"]
    assert sum("A's fragments from registers" in n for n in notes) == 2, notes
    msl = ck.asm["msl"]
    start = msl.index("for (int i")
    end, depth = start, 0
    for end in range(start, len(msl)):  # the loop's closing brace
        depth += {"{": 1, "}": -1}.get(msl[end], 0)
        if depth == 0 and msl[end] == "}":
            break
    loop = msl[start:end]
    assert loop.count("threadgroup_barrier(") == 2, loop  # after staging K, after staging V
    # and, once each, converting Q to its fragment layout before the loop and the output to 16-byte rows after
    # it, in Q's buffer (separate buffers would exceed 32 KB): one barrier for Q, two for the output
    assert ck.metadata["barriers"] == 5
    assert any("reuses" in n for n in notes), notes
    assert "simdgroup_load(fa" not in msl  # A (Q, then P) never goes through threadgroup memory in the loop
    # the row max and row sum carried across the loop: one value per fragment row a thread holds (2), not 32
    assert msl.count("float c") == 3 and msl.count("[2];  // one value per 16 registers") == 2
    assert ck.metadata["threadgroup_memory"] == 64 * 65 * 2 + 2 * 64 * 64 * 2  # Q's conversion (padded), K, V


@pytest.mark.parametrize("dtype,m,n,k", [(np.float32, 32, 32, 16), (np.float16, 64, 32, 32), ("bfloat16", 32, 32, 16)])
def test_loop_invariant_a(dtype, m, n, k):
    if dtype == "bfloat16":
        dtype = pytest.importorskip("ml_dtypes").bfloat16
    nb = 3
    a = RNG.integers(-4, 5, (m, k)).astype(dtype)
    b = RNG.integers(-4, 5, (nb, k, n)).astype(dtype)
    want = np.stack([a.astype(np.float64) @ b[j].astype(np.float64) for j in range(nb)]).astype(np.float32)
    ck = rk.invariant_a_kernel.warmup(a, b, np.zeros((nb, m, n), np.float32), nb, M=m, N=n, K=k, num_warps=4)
    assert any("A's fragments from registers" in note for note in ck.metadata["notes"]), ck.metadata["notes"]
    # the store in the loop stays in the fragment layout (a conversion there would cost barriers per iteration)
    assert [(a.kind, a.vector) for a in ck.accesses if a.kind == "store"] == [("store", 2)]
    run_on_all_paths(rk.invariant_a_kernel, (1,), lambda: (a, b, np.zeros((nb, m, n), np.float32), nb),
                     lambda *x: {2: want}, constexprs={"M": m, "N": n, "K": k}, num_warps=4, rtol=0, atol=0)


def test_chained_dots():
    nb, m, n, k, d = 2, 32, 32, 16, 32
    a = RNG.integers(-2, 3, (nb, m, k)).astype(np.float16)
    b = RNG.integers(-2, 3, (k, n)).astype(np.float16)
    c = RNG.integers(-2, 3, (nb, n, d)).astype(np.float16)
    want = sum((a[j].astype(np.float64) @ b) @ c[j] for j in range(nb)).astype(np.float32)
    ck = rk.chained_dot_kernel.warmup(a, b, c, np.zeros((m, d), np.float32), nb, M=m, N=n, K=k, D=d, num_warps=4)
    assert sum("A's fragments from registers" in note for note in ck.metadata["notes"]) == 1  # the second dot
    run_on_all_paths(rk.chained_dot_kernel, (1,), lambda: (a, b, c, np.zeros((m, d), np.float32), nb),
                     lambda *x: {3: want}, constexprs={"M": m, "N": n, "K": k, "D": d}, num_warps=4, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_transposed_b_loads_are_vectors(dtype):
    m = n = k = 32
    a = RNG.integers(-4, 5, (m, k)).astype(dtype)
    bt = RNG.integers(-4, 5, (n, k)).astype(dtype)
    want = (a.astype(np.float64) @ bt.T.astype(np.float64)).astype(dtype)
    ck = rk.transposed_b_kernel.warmup(a, bt, np.zeros((m, n), dtype), M=m, N=n, K=k, num_warps=4)
    # every access 16 bytes wide: the loads (B^T read down its columns) and the store after the conversion of the
    # result from the fragment layout (outside any loop)
    assert ck.accesses and all(acc.vector * np.dtype(dtype).itemsize == 16 for acc in ck.accesses), \
        [(acc.kind, acc.vector, acc.reason) for acc in ck.accesses]
    run_on_all_paths(rk.transposed_b_kernel, (1,), lambda: (a, bt, np.zeros((m, n), dtype)), lambda *x: {2: want},
                     constexprs={"M": m, "N": n, "K": k}, num_warps=4, rtol=0, atol=0)


def test_no_register_fragments_when_the_lane_mapping_differs():
    """A device whose thread_elements() mapping is not the assumed one (the fragment probe): A is staged."""
    ptr = ir.Type(pointer_type(float16))
    fn, _, _ = lower_kernel(rk.invariant_a_kernel.source, "invariant_a_kernel",
                            [("a_ptr", ptr), ("b_ptr", ptr), ("c_ptr", ptr), ("NB", ir.Type(int32)),
                             ("M", 32), ("N", 32), ("K", 32)])
    assert [d.a_registers for d in assign_layouts(fn, 4).dots.values()] == [True]
    assert [d.a_registers for d in assign_layouts(fn, 4, fragments_in_registers=False).dots.values()] == [False]
    assert tl.dot  # the builtin these kernels exercise


@pytest.mark.parametrize("m,n,k", [(32, 32, 16), (64, 32, 32)])
def test_carried_row_statistics_one_value_per_fragment_row(m, n, k):
    nb = 3
    a = RNG.integers(-4, 5, (m, k)).astype(np.float32)
    b = RNG.integers(-4, 5, (nb, k, n)).astype(np.float32)
    init = RNG.integers(-40, 40, m).astype(np.float32)
    want = np.maximum(init, np.max(np.stack([a @ b[j] for j in range(nb)]), axis=(0, 2)))
    ck = rk.dot_row_max_kernel.warmup(a, b, init.copy(), nb, M=m, N=n, K=k, num_warps=4)
    # 4x1 SIMD groups: a thread holds m / 32 fragment rows of n / 8 fragments, 2 registers each
    rows, per_row = m // 32, 2 * (n // 8)
    assert f"[{rows}];  // one value per {per_row} registers" in ck.asm["msl"]
    run_on_all_paths(rk.dot_row_max_kernel, (1,), lambda: (a, b, init.copy(), nb), lambda *x: {2: want},
                     constexprs={"M": m, "N": n, "K": k}, num_warps=4, rtol=0, atol=0)
