"""The barrier before a data movement's writes is kept exactly when a region it writes may still be in use:
touched since the last barrier in program order, or in the previous iteration of a loop around it."""

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from enceladus.backends.cpu import KernelLaunchError
from enceladus.compiler.codegen_msl.barriers import BarrierPlanner
from paths import cpu_available

A, B, C = ("a", 0, 64), ("b", 0, 64), ("pool", 32, 96)  # C overlaps the pool's [0, 64) below


def movement(p: BarrierPlanner, *regions) -> int:
    cid = p.candidate()
    for r in regions:
        p.region(r)
    p.barrier()  # written, then read back after the barrier
    return cid


def test_straight_line_reuse_waits_disjoint_does_not():
    p = BarrierPlanner()
    first = movement(p, A)
    other = movement(p, B)
    again = movement(p, B)
    assert p.resolve() == {again}
    assert first not in p.resolve() and other not in p.resolve()


def test_pool_slices_overlap_by_bytes():
    p = BarrierPlanner()
    movement(p, ("pool", 0, 64))
    late = movement(p, C)
    p2 = BarrierPlanner()
    movement(p2, ("pool", 0, 32))
    apart = movement(p2, C)
    assert p.resolve() == {late} and apart not in p2.resolve()


def test_one_movement_in_a_loop_waits_for_the_previous_iteration():
    p = BarrierPlanner()
    p.open("loop")
    only = movement(p, A)
    p.close()
    assert p.resolve() == {only}


def test_two_movements_in_a_loop_wait_for_nothing():
    """Attention's K and V: each iteration's barriers separate every reuse."""
    p = BarrierPlanner()
    movement(p, C)
    p.open("loop")
    k = movement(p, A)
    v = movement(p, B)
    p.close()
    assert not p.resolve() & {k, v}


def test_the_loop_tail_reaches_the_head_through_a_branch():
    p = BarrierPlanner()
    p.open("loop")
    head = movement(p, A)
    p.open("if")
    p.open("branch")
    movement(p, B)
    p.close()
    p.close()
    p.open("if")
    p.open("branch")
    p.close()
    p.open("branch")  # the else branch touches A after the loop's last barrier
    p.candidate()
    p.region(A)
    p.close()
    p.close()
    p.close()
    assert head in p.resolve()


def test_a_movement_after_a_loop_waits_for_its_last_iteration():
    p = BarrierPlanner()
    p.open("loop")
    movement(p, A)
    p.close()
    after = movement(p, A)
    assert after in p.resolve()


def test_nested_loops():
    p = BarrierPlanner()
    p.open("loop")
    outer = movement(p, A)
    p.open("loop")
    inner = movement(p, B)
    p.close()
    p.close()
    # B: read at the end of the inner loop's previous iteration; A: the inner loop may run no iteration, and
    # then nothing separates the outer iterations' uses of A
    assert p.resolve() == {outer, inner}


def test_the_kept_barriers_are_needed_and_checked(monkeypatch, tmp_path):
    """A K loop staging A and B once per iteration needs the barrier before its writes (the previous iteration
    still reads them): with every candidate dropped, the cpu backend's debug mode reports the write-after-read
    race; as planned, the same kernel runs race-free and right."""
    if not cpu_available():
        pytest.skip("no C++ compiler for the cpu backend")
    monkeypatch.setenv("ENCELADUS_CACHE_DIR", str(tmp_path))

    def make():
        @enceladus.jit
        def k_loop(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
            rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
            acc = tl.zeros((BM, BN), tl.float32)
            for k0 in range(0, K, BK):
                a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :])
                b = tl.load(b_ptr + (k0 + rk)[:, None] * BN + rn[None, :])
                acc = tl.dot(a, b, acc)
            tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)
        return k_loop

    rng = np.random.default_rng(3)
    a = rng.integers(-3, 4, (32, 64)).astype(np.float32)
    b = rng.integers(-3, 4, (64, 32)).astype(np.float32)
    c = np.zeros((32, 32), np.float32)
    make()[(1,)](a, b, c, 64, BM=32, BN=32, BK=16, num_warps=4, debug=True)
    np.testing.assert_array_equal(c, a @ b)
    monkeypatch.setattr(BarrierPlanner, "resolve", lambda self: set())
    monkeypatch.setenv("ENCELADUS_CACHE_DIR", str(tmp_path / "dropped"))
    with pytest.raises(KernelLaunchError, match="write-after-read race"):
        make()[(1,)](a, b, np.zeros_like(c), 64, BM=32, BN=32, BK=16, num_warps=4, debug=True)
