"""ir.verify names the first broken invariant of a function, op by op in order."""

import pytest

from enceladus.compiler import ir
from enceladus.language import dtypes as D

F32 = ir.Type(D.float32)
TILE = ir.Type(D.float32, (4,))
PTR_TILE = ir.Type(D.pointer_type(D.float32), (4,))


def _fn():
    fn = ir.Function("k")
    return fn, fn.add_arg("x", TILE), fn.add_arg("s", F32)


def test_a_well_formed_function_with_a_region_passes():
    fn, x, s = _fn()
    y = fn.append("add", [x, x], TILE)
    op = fn.append_op("for", [s, s, s, y], [TILE])
    body = ir.Block([fn.new_value(ir.Type(D.int32)), fn.new_value(TILE)])
    fn.push_block(body)
    z = fn.append("mul", [body.args[1], y], TILE)
    fn.pop_block()
    body.ops.append(ir.Op("yield", [z]))
    op.regions = [body]
    ir.verify(fn)


@pytest.mark.parametrize("break_it, message", [
    (lambda fn, x, s: fn.append("no_such_op", [x], TILE), "unknown op 'no_such_op'"),
    (lambda fn, x, s: fn.append("add", [x, ir.Value(99, TILE)], TILE), "operand %99 is used before it is defined"),
    (lambda fn, x, s: fn.append("add", [x, s], TILE), "operand %s has shape ()"),
    (lambda fn, x, s: fn.append("store", [fn.append("splat", [s], PTR_TILE), s], None),
     "pointer and value shapes differ"),
])
def test_each_broken_invariant_is_named(break_it, message):
    fn, x, s = _fn()
    fn.append("add", [x, x], TILE)
    break_it(fn, x, s)
    with pytest.raises(ir.VerificationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ir.verify(fn)


def test_a_region_without_yield_and_the_first_error_in_order():
    fn, x, s = _fn()
    op = fn.append_op("if", [s], [])
    op.regions = [ir.Block(), ir.Block()]
    fn.append("no_such_op", [x], TILE)  # after the region: the region's error comes first
    with pytest.raises(ir.VerificationError, match="a region does not end with yield"):
        ir.verify(fn)
