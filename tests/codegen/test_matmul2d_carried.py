"""dot_backend="matmul2d": an accumulator carried across a K loop (`acc = tl.dot(a, b, acc)`, `acc += tl.dot(a, b)`)
stays in one Metal 4 cooperative tensor from before the loop to after it (passes/layouts.py carry_accumulators,
codegen_msl/matmul.py): no threadgroup round trip of the accumulator per K step, so 2 barriers per step instead
of 4 and A + B of threadgroup memory instead of A + B + the accumulator (an fp32 64x64x64 tile fits in 32 KB).
Every kernel runs on every path against NumPy (the matmul2d MSL on the cpu backend's tensor ops), once more
in debug mode (the threadgroup-memory race detector), and its MSL is checked for the carried form."""

import re

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from paths import on_path, run_on_all_paths

from . import coop_kernels as ck

RNG = np.random.default_rng(24)


def k_loop(msl: str) -> tuple[str, str, str]:
    """(before, body, after) of the kernel's K loop (the one top-level `for` over an induction variable)."""
    lines = msl[msl.find("kernel void"):].splitlines()
    start = next(i for i, ln in enumerate(lines) if re.match(r"^    for \(int i\d+ = ", ln))
    depth = 0
    for end in range(start, len(lines)):
        depth += lines[end].count("{") - lines[end].count("}")
        if depth == 0:
            break
    return "\n".join(lines[:start]), "\n".join(lines[start:end + 1]), "\n".join(lines[end + 1:])


def launch_args(dtype, M, N, K, out_dtype=np.float32):
    a = RNG.standard_normal((M, K)).astype(dtype)
    b = RNG.standard_normal((K, N)).astype(dtype)
    bias = RNG.standard_normal((M, N)).astype(np.float32)
    return a, b, np.zeros((M, N), out_dtype), bias


def reference(form, scale):
    def ref(a, b, c, bias, M, N, K, s):
        init = bias if form == "bias" else (1.5 if form == "full" else 0.0)
        return {2: ((init + a.astype(np.float32) @ b.astype(np.float32)) * scale).astype(c.dtype)}
    return ref


def compiled(dtype, M, N, K, BM, BN, BK, form, out_dtype=np.float32):
    a, b, c, bias = launch_args(dtype, M, N, K, out_dtype)
    return ck.kloop_kernel.warmup(a, b, c, bias, M, N, K, 0.5, BM=BM, BN=BN, BK=BK, FORM=form,
                                  dot_backend="matmul2d", num_warps=4)


@pytest.mark.parametrize("form", ["zeros", "add"])
def test_msl_keeps_one_cooperative_tensor_across_the_k_loop(form):
    kernel = compiled(np.float16, 128, 128, 128, 32, 32, 32, form)
    msl = kernel.asm["msl"]
    before, body, after = k_loop(msl)
    # one cooperative tensor, created and zeroed before the loop, run once per step, read out after it
    assert msl.count("get_destination_cooperative_tensor") == 1 and "get_destination_cooperative_tensor" in before
    assert re.search(r"enc_acc\d+\[i\] = float\(v\d+\);", before)  # a splat initial value: in registers
    assert body.count(".run(") == 1 and "get_multidimensional_index" not in body  # no per-step round trip
    assert "get_multidimensional_index" in after and "get_destination_cooperative_tensor" not in body
    assert "mode::multiply_accumulate" in before
    # barriers per K step: one before A and B are staged (the previous run may still read them), one after
    assert body.count("threadgroup_barrier(") == 2
    assert after.count("threadgroup_barrier(") == 2  # before the accumulator overwrites A, and before it is read
    assert kernel.abi.threadgroup_memory == 4096  # A and B (2 KB each); the accumulator reuses them
    assert any("kept in a cooperative tensor across its loop" in n for n in kernel.metadata["notes"])


def test_old_lowering_stays_where_the_carried_value_has_other_uses():
    """`acc = tl.dot(a, b, acc) * 1.0`: the loop carries the product, not the dot's result: per-step form."""
    msl = compiled(np.float32, 64, 64, 64, 32, 32, 32, "scaled").asm["msl"]
    _, body, _ = k_loop(msl)
    assert "get_destination_cooperative_tensor" in body and "get_multidimensional_index" in body
    assert body.count("threadgroup_barrier(") == 4


def test_fp32_64x64x64_tile_fits_in_32kb():
    kernel = compiled(np.float32, 192, 192, 192, 64, 64, 64, "zeros")
    assert kernel.abi.threadgroup_memory == 32768  # A 16 KB + B 16 KB; the accumulator's 16 KB reuse A's bytes
    assert "matmul2d_descriptor(64, 64, 64" in kernel.asm["msl"]


def _run(dtype, M, N, K, BM, BN, BK, form, out_dtype=np.float32, tol=None):
    tol = tol or ((1e-4, 1e-4) if out_dtype == np.float32 else (2e-3, 2e-2))
    grid = (enceladus.cdiv(M, BM), enceladus.cdiv(N, BN))
    a, b, c, bias = launch_args(dtype, M, N, K, out_dtype)
    run_on_all_paths(ck.kloop_kernel, grid, lambda: (a, b, c.copy(), bias, M, N, K, 0.5),
                     reference(form, 0.5), constexprs={"BM": BM, "BN": BN, "BK": BK, "FORM": form},
                     rtol=tol[0], atol=tol[1] * np.sqrt(K), dot_backend="matmul2d", num_warps=4)


CASES = [  # (dtype, M, N, K, BM, BN, BK, initial value form); ragged M and N exercise the masked epilogue store
    (np.float32, 130, 136, 192, 64, 64, 64, "zeros"),  # the fp32 64x64x64 tile (48 KB before, refused)
    (np.float16, 100, 72, 96, 32, 32, 32, "zeros"),
    (np.float16, 100, 72, 128, 64, 32, 64, "add"),
    (np.float32, 70, 100, 96, 32, 64, 32, "bias"),  # a loaded initial value enters through threadgroup memory
    (np.float16, 64, 64, 64, 64, 64, 32, "full"),
    (np.float32, 64, 96, 64, 32, 32, 32, "scaled"),  # today's per-step lowering, still right
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{np.dtype(c[0]).name}-{c[4]}x{c[5]}x{c[6]}-{c[7]}")
def test_k_loop_matmul_on_every_path(case):
    _run(*case)


@pytest.mark.parametrize("out_dtype", [np.float16, np.float32])
def test_epilogue_scale_cast_and_masked_store(out_dtype):
    _run(np.float16, 97, 65, 160, 32, 64, 32, "add", out_dtype=out_dtype)


@pytest.mark.parametrize("case", [CASES[0], CASES[2], CASES[3]], ids=["fp32-64x64x64", "fp16-add", "fp32-bias"])
def test_race_free_in_debug_mode(case):
    """The cpu backend's debug build reports threadgroup-memory races (a read of bytes another thread wrote, or a
    write of bytes another thread read, with no barrier between) and raises on one."""
    dtype, M, N, K, BM, BN, BK, form = case
    a, b, c, bias = launch_args(dtype, M, N, K)
    on_path(ck.kloop_kernel, "cpu")[(enceladus.cdiv(M, BM), enceladus.cdiv(N, BN))](
        a, b, c, bias, M, N, K, 0.5, BM=BM, BN=BN, BK=BK, FORM=form, dot_backend="matmul2d", num_warps=4, debug=True)
    np.testing.assert_allclose(c, reference(form, 0.5)(a, b, c, bias, M, N, K, 0.5)[2], rtol=1e-4,
                               atol=1e-4 * np.sqrt(K))


def test_two_loops_each_carry_their_own_cooperative_tensor():
    BM, BN, BK, K = 32, 32, 32, 96
    a = RNG.standard_normal((BM, K)).astype(np.float32)
    b = RNG.standard_normal((K, BN)).astype(np.float32)
    res = run_on_all_paths(ck.two_loops_kernel, (1,), lambda: (a, b, np.zeros((BM, BN), np.float32), K),
                           lambda a, b, c, K: {2: 3.0 * (a @ b)}, constexprs={"BM": BM, "BN": BN, "BK": BK},
                           rtol=1e-4, atol=1e-4, dot_backend="matmul2d")
    assert res
    msl = ck.two_loops_kernel.warmup(a, b, np.zeros((BM, BN), np.float32), K, BM=BM, BN=BN, BK=BK,
                                     dot_backend="matmul2d").asm["msl"]
    assert msl.count("get_destination_cooperative_tensor") == 2 and msl.count(".run(") == 2
    notes = [n for n in ck.two_loops_kernel.warmup(a, b, np.zeros((BM, BN), np.float32), K, BM=BM, BN=BN, BK=BK,
                                                    dot_backend="matmul2d").metadata["notes"]
             if "kept in a cooperative tensor across its loop" in n]
    assert len(notes) == 2


def test_the_barriers_around_run_are_needed_and_checked(monkeypatch, tmp_path):
    """With the barrier planner's candidates dropped (the barrier before A and B are staged again, and the one before
    the accumulator's move-out overwrites them), debug mode reports the race between a thread still reading A or B
    inside matmul2d::run and another thread writing them: the cpu backend's tensor ops report the threadgroup
    elements they read to the race detector."""
    from enceladus.backends.cpu import KernelLaunchError
    from enceladus.compiler.codegen_msl.barriers import BarrierPlanner

    monkeypatch.setenv("ENCELADUS_CACHE_DIR", str(tmp_path))

    def make():  # a new kernel object each time: the dropped barriers must not come from a cache
        @enceladus.jit
        def k_loop(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
            rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
            acc = tl.zeros((BM, BN), tl.float32)
            for k0 in range(0, K, BK):
                a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :])
                b = tl.load(b_ptr + (k0 + rk)[:, None] * BN + rn[None, :])
                acc = tl.dot(a, b, acc)
            tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)
        return on_path(k_loop, "cpu")

    a, b, c, _ = launch_args(np.float32, 32, 32, 96)
    meta = {"BM": 32, "BN": 32, "BK": 32, "dot_backend": "matmul2d", "num_warps": 4}
    make()[(1,)](a, b, c, 96, **meta, debug=True)  # as planned: race-free
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    monkeypatch.setattr(BarrierPlanner, "resolve", lambda self: set())
    monkeypatch.setenv("ENCELADUS_CACHE_DIR", str(tmp_path / "dropped"))
    with pytest.raises(KernelLaunchError, match=r"race on 'matmul2d::run \((left|right) operand\)'"):
        make()[(1,)](a, b, np.zeros_like(c), 96, **meta, debug=True)


def test_nested_k_loops_and_debug_mode():
    """The inner loop keeps the cooperative tensor; it starts from the outer loop's register tile (through
    threadgroup memory) and leaves it once per outer iteration."""
    BM, BN, BK, K, KC = 32, 32, 32, 192, 64
    a = RNG.standard_normal((BM, K)).astype(np.float16)
    b = RNG.standard_normal((K, BN)).astype(np.float16)
    ref = {2: a.astype(np.float32) @ b.astype(np.float32)}
    run_on_all_paths(ck.nested_kernel, (1,), lambda: (a, b, np.zeros((BM, BN), np.float32), K, KC),
                     lambda *args: ref, constexprs={"BM": BM, "BN": BN, "BK": BK}, rtol=1e-3, atol=1e-3,
                     dot_backend="matmul2d")
    c = np.zeros((BM, BN), np.float32)
    kernel = on_path(ck.nested_kernel, "cpu")[(1,)](a, b, c, K, KC, BM=BM, BN=BN, BK=BK, dot_backend="matmul2d",
                                                   debug=True)
    np.testing.assert_allclose(c, ref[2], rtol=1e-3, atol=1e-3)
    assert any("kept in a cooperative tensor across its loop" in n for n in kernel.metadata["notes"])


@pytest.mark.parametrize("form", ["zeros", "bias"])
def test_a_loop_of_no_iterations_gives_the_initial_value(form):
    M, N, K = 40, 48, 0
    a, b, c, bias = launch_args(np.float32, M, N, 32)
    a, b = a[:, :0].copy(), b[:0].copy()
    run_on_all_paths(ck.kloop_kernel, (2, 2), lambda: (a, b, np.zeros((M, N), np.float32), bias, M, N, K, 0.5),
                     reference(form, 0.5), constexprs={"BM": 32, "BN": 32, "BK": 32, "FORM": form},
                     dot_backend="matmul2d", num_warps=4)


def test_two_accumulators_in_one_loop():
    BM, BN, BK, K = 32, 32, 32, 96
    a, b, d = (RNG.standard_normal(s).astype(np.float16) for s in ((BM, K), (K, BN), (K, BN)))
    f32 = [x.astype(np.float32) for x in (a, b, d)]
    ref = {3: f32[0] @ f32[1], 4: 2.0 * (f32[0] @ f32[2])}
    run_on_all_paths(ck.two_dots_kernel, (1,), lambda: (a, b, d, np.zeros((BM, BN), np.float32),
                                                        np.zeros((BM, BN), np.float32), K),
                     lambda *args: ref, constexprs={"BM": BM, "BN": BN, "BK": BK}, rtol=1e-3, atol=1e-3,
                     dot_backend="matmul2d")
    c, e = np.zeros((BM, BN), np.float32), np.zeros((BM, BN), np.float32)
    kernel = on_path(ck.two_dots_kernel, "cpu")[(1,)](a, b, d, c, e, K, BM=BM, BN=BN, BK=BK, dot_backend="matmul2d",
                                                     debug=True)
    np.testing.assert_allclose(e, ref[4], rtol=1e-3, atol=1e-3)
    _, body, _ = k_loop(kernel.asm["msl"])
    assert body.count(".run(") == 2 and "get_destination_cooperative_tensor" not in body
