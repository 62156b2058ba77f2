"""Layout decisions live in the LayoutPlan, never on the IR: planning twice with other options is independent."""

import enceladus
import enceladus.language as tl
from enceladus.compiler import ir
from enceladus.compiler.frontend import lower_kernel
from enceladus.compiler.passes.layouts import assign_layouts
from enceladus.language.dtypes import float32, pointer_type


@enceladus.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    offs = r[:, None] * BLOCK + r[None, :]
    c = tl.dot(tl.load(a_ptr + offs), tl.load(b_ptr + offs))
    tl.store(c_ptr + offs, tl.sum(c, axis=1)[:, None] + c)


def _lowered() -> ir.Function:
    ptr = ir.Type(pointer_type(float32))
    fn, _, _ = lower_kernel(dot_kernel.source, "dot_kernel", [("a_ptr", ptr), ("b_ptr", ptr), ("c_ptr", ptr),
                                                             ("BLOCK", 32)])
    return fn


def _snapshot(fn: ir.Function) -> list[tuple[str, dict]]:
    return [(op.name, dict(op.attrs)) for op in ir.walk(fn.ops)]


def test_planning_twice_with_another_dot_backend_gives_independent_answers():
    fn = _lowered()
    before = _snapshot(fn)
    m2d = assign_layouts(fn, 4, "matmul2d")
    sg = assign_layouts(fn, 4, "simdgroup")
    again = assign_layouts(fn, 4, "matmul2d")
    (dot_id,) = m2d.dots
    assert m2d.dots[dot_id].matmul2d and m2d.dots[dot_id].mma is None
    assert not sg.dots[dot_id].matmul2d and sg.dots[dot_id].mma is not None  # was: the first answer reused
    assert again.dots == m2d.dots and again.homes == m2d.homes
    assert sg.homes[dot_id] != m2d.homes[dot_id]
    # planning records nothing on the IR
    assert _snapshot(fn) == before
    assert not any(k.startswith("_") for op in ir.walk(fn.ops) for k in op.attrs)


def test_planning_with_other_num_warps_is_independent():
    fn = _lowered()
    p4 = assign_layouts(fn, 4, "simdgroup")
    p1 = assign_layouts(fn, 1, "simdgroup")
    (dot_id,) = p4.dots
    assert p4.dots[dot_id].mma.warps != p1.dots[dot_id].mma.warps
    reduce_ids = list(p4.operand_layouts)
    assert reduce_ids and all(p4.operand_layouts[i] != p1.operand_layouts[i] for i in reduce_ids)


def test_ir_with_layouts_prints_the_plan():
    fn = _lowered()
    plan = assign_layouts(fn, 4, "simdgroup")
    text = fn.format(layouts=plan.layout_of)
    assert "#" in text and "mma" in text.lower()
    assert fn.format() == fn.format(layouts=None) and "#" not in fn.format()
