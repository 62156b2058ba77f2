"""Which int32 arithmetic feeds a pointer offset.

``row * stride`` in int32 wraps silently in compiled code (Triton's semantics), so a view spanning more than
2^31 elements of offset reads the wrong row. The checked cpu backend reports such a wrap instead: the
emitter lists, for the values found here, the MSL expression that computes them (``metadata["offset_checks"]``),
and the cpu backend computes exactly those expressions with an overflow check. The MSL itself is unchanged.

A value is *offset arithmetic* when it is the result of an int32 ``add``/``sub``/``mul``/``shl`` and flows into
the offset operand of an ``addptr`` through views (splat, broadcast, expand_dims, ...), integer widening casts,
further integer ``add``/``sub``/``mul``/``shl`` (the left operand of a shift only), and loop-carried or ``if``
values. Anything else (a load, a division, a comparison, a select) ends the search: its result is a new value.
"""

from __future__ import annotations

from .. import ir

_CONTROL = frozenset({"for", "if"})  # the ops _flows_into looks at
_ADDPTR = frozenset({"addptr"})
_ARITH = frozenset({"add", "sub", "mul", "shl"})
_THROUGH = frozenset({"splat", "broadcast", "expand_dims", "squeeze", "permute", "reshape",
                      "multiple_of", "max_contiguous"})


def _widening_int_cast(op: ir.Op) -> bool:
    src, dst = op.operands[0].type.element, op.result.type.element
    return (not src.is_ptr() and not dst.is_ptr() and src.is_int() and dst.is_int() and not src.is_bool()
            and dst.primitive_bitwidth >= src.primitive_bitwidth)


def _flows_into(ops: list[ir.Op]) -> dict[int, list[ir.Value]]:
    """For each loop-carried block argument and each result of a ``for``/``if``: the values that flow into it."""
    into: dict[int, list[ir.Value]] = {}
    for op in ir.select(ops, _CONTROL):
        if op.name == "for":
            region = op.regions[0]
            yields = region.terminator.operands if region.terminator is not None else []
            for k, (arg, init) in enumerate(zip(region.args[1:], op.operands[3:])):
                into.setdefault(arg.id, []).append(init)
                if k < len(yields):
                    into[arg.id].append(yields[k])
                    if k < len(op.results):
                        into.setdefault(op.results[k].id, []).append(yields[k])
        elif op.name == "if":
            for region in op.regions:
                if region.terminator is not None:
                    for r, y in zip(op.results, region.terminator.operands):
                        into.setdefault(r.id, []).append(y)
    return into


def offset_arithmetic(fn: ir.Function, ops: list[ir.Op] | None = None) -> frozenset[int]:
    """The ids of the int32 add/sub/mul/shl results that feed a pointer offset (see the module docstring).
    ``ops``: ``ir.walk(fn.body.ops)`` when the caller has it."""
    ops = ir.walk(fn.body.ops) if ops is None else ops
    into = _flows_into(ops)
    work = [op.operands[1] for op in ir.select(ops, _ADDPTR) if len(op.operands) > 1]
    seen: set[int] = set()
    found: set[int] = set()
    while work:
        v = work.pop()
        if v.id in seen:
            continue
        seen.add(v.id)
        work.extend(into.get(v.id, ()))
        op = v.op
        if op is None or not op.operands:
            continue
        if op.name in _ARITH and v.type.element.is_int() and not v.type.element.is_bool():
            if v.type.element.name == "int32":
                found.add(v.id)
            work.extend(op.operands[:1] if op.name == "shl" else op.operands)
        elif op.name in _THROUGH or (op.name == "cast" and _widening_int_cast(op)):
            work.append(op.operands[0])
    return frozenset(found)
