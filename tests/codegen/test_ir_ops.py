"""Ops own their operands and attributes: no op shares mutable state with another op or with its caller."""

import pytest

from enceladus.compiler import ir
from enceladus.compiler.semantic import Builder
from enceladus.language.dtypes import float32, int32


def test_ops_without_attributes_share_no_mutable_state():
    fn = ir.Function("k")
    b = Builder(fn)
    x = b.emit("arange", [], ir.Type(int32, (8,)), start=0, end=8)
    y = b.emit("neg", [x], x.type)
    z = b.emit("neg", [y], y.type)
    for v in (y, z):
        assert dict(v.op.attrs) == {} and v.op.regions == () and v.op.results == [v]
        with pytest.raises(TypeError):  # read-only: writing one op's attributes cannot reach another's
            v.op.attrs["axis"] = 0
    assert x.op.attrs == {"start": 0, "end": 8}


def test_an_op_copies_what_its_caller_passes():
    fn = ir.Function("k")
    a = fn.add_arg("a", ir.Type(float32))
    operands, attrs = [a], {"value": 1}
    op = ir.Op("cast", operands, attrs)
    operands.append(a)
    attrs["value"] = 2
    assert op.operands == [a] and op.attrs == {"value": 1}
    assert ir.Op("cast", [a]).attrs == {} and ir.Op("cast", [a], {}).regions == ()
