"""The barrier before a data movement's writes is kept exactly when a region it writes may still be in use:
touched since the last barrier in program order, or in the previous iteration of a loop around it."""

from enceladus.compiler.codegen_msl.barriers import BarrierPlanner

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
