"""Binary-operator typing pinned: the compiler (language/dtypes.py via compiler/semantic.py) and the interpreter
(interpreter/tensor.py) are each checked against one expected table, data/typing_table.csv.

The table was generated from Triton 3.9's interpreter (data/make_typing_table.py): for every pair of operands
(tiles of each dtype Apple GPUs have, and Python literals) and binary operator, the result dtype or ``error``.
Where Triton types the result as fp64, or compares in fp64 (a float literal outside fp32's range), Enceladus
refuses: Apple GPUs have no fp64.
"""

from __future__ import annotations

import csv
import operator
import os

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from enceladus.compiler import ir, semantic
from enceladus.errors import CompilationError
from enceladus.interpreter.tensor import Tile
from enceladus.language import dtypes as D
from enceladus.runtime.jit import JITFunction

_HERE = os.path.dirname(__file__)
with open(os.path.join(_HERE, "data", "typing_table.csv")) as _f:
    ROWS = [(r["lhs"], r["op"], r["rhs"], r["expected"]) for r in csv.DictReader(_f)]

LITERALS = {"lit_bool": True, "lit_int": 7, "lit_float": 1.5, "lit_float_huge": 1e300}
_PY_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, "//": operator.floordiv,
           "%": operator.mod, "&": operator.and_, "|": operator.or_, "^": operator.xor, "<<": operator.lshift,
           ">>": operator.rshift, "<": operator.lt}


def compiler_result(lhs: str, op: str, rhs: str) -> str:
    """The dtype the compiler's typing rules give ``lhs op rhs`` (tiles of shape (2,)), or how it refuses."""
    b = semantic.Builder(ir.Function("typing"))

    def operand(name: str):
        if name in LITERALS:
            return LITERALS[name]
        return b.fn.add_arg(name, ir.Type(D.dtype(name), (2,)))

    x, y = operand(lhs), operand(rhs)
    try:
        v = semantic.compare(b, op, x, y) if op == "<" else semantic.binary(b, op, x, y)
    except (semantic.SemanticError, CompilationError) as e:
        return "refused_fp64" if "Apple GPUs have no fp64" in str(e) else "error"
    return v.type.element.name


def interpreter_result(lhs: str, op: str, rhs: str) -> str:
    """The dtype the interpreter gives ``lhs op rhs`` on (2,) tiles, or how it refuses."""

    def operand(name: str):
        if name in LITERALS:
            return LITERALS[name]
        ty = D.dtype(name)
        return Tile(np.ones(2, dtype=ty.to_numpy()), ty)

    x, y = operand(lhs), operand(rhs)
    try:
        z = _PY_OPS[op](x, y)
    except (TypeError, ValueError) as e:
        return "refused_fp64" if "Apple GPUs have no fp64" in str(e) else "error"
    return z.dtype.name


def _mismatches(result) -> list[str]:
    # where Triton refuses for another reason (e.g. int // 1e300: no // on floats), the fp64 refusal may come first
    return [f"{lhs} {op} {rhs}: expected {exp}, got {got}" for lhs, op, rhs, exp in ROWS
            if (got := result(lhs, op, rhs)) != exp and not (exp == "error" and got == "refused_fp64")]


def test_table_covers_every_pair_and_operator():
    tiles = [n for n in {r[0] for r in ROWS} if n not in LITERALS]
    assert len(tiles) == 12 and len({r[1] for r in ROWS}) == len(_PY_OPS)
    assert len(ROWS) == (len(tiles) ** 2 + 2 * len(tiles) * len(LITERALS)) * len(_PY_OPS)


@pytest.mark.parametrize("result", [compiler_result, interpreter_result], ids=["compiler", "interpreter"])
def test_typing_matches_the_pinned_table(result):
    bad = _mismatches(result)
    assert not bad, f"{len(bad)} of {len(ROWS)} disagree with the pinned table:\n" + "\n".join(bad[:40])


@enceladus.jit
def scales_by_huge(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, (offs * 1e300).to(tl.float32))  # <- here


def test_fp64_literal_is_a_located_refusal_in_the_compiler():
    with pytest.raises(CompilationError) as info:
        enceladus.compile(scales_by_huge, signature="*fp32", constexprs={"BLOCK": 16})
    err = info.value
    assert "Apple GPUs have no fp64" in err.message and "float32's range" in err.fix
    assert err.lineno is not None and "offs * 1e300" in err.source_line


def test_fp64_literal_is_refused_by_the_interpreter():
    x = np.zeros(16, np.float32)
    with pytest.raises(Exception, match="Apple GPUs have no fp64"):
        JITFunction(scales_by_huge.fn, interpret=True)[(1,)](x, BLOCK=16)
