"""Axis analysis: per tile dimension, what is known about runs of values.

For each value and dimension: ``contiguity`` (length of runs of consecutive integers),
``divisibility`` (a power of two dividing the first value of each run; bytes for pointers) and
``constancy`` (length of runs of equal values). Vectorization of loads and stores is decided from
these facts, which come from ``tl.arange``, constants, specialization of arguments (divisible by
16, 16-byte aligned) and ``tl.multiple_of`` / ``tl.max_contiguous`` hints.
"""

from __future__ import annotations

from functools import partial
from math import gcd
from typing import NamedTuple

from .. import ir
from ..op_traits import ops_where

MAX_DIV = 1 << 30
_WITH_RULE = ops_where(axis_rule=True)  # ops whose result facts _rule derives (op_traits)


class AxisInfo(NamedTuple):
    """An immutable record (a named tuple: made for every value, and cheaper to make than a frozen dataclass)."""

    contiguity: tuple[int, ...]
    divisibility: tuple[int, ...]
    constancy: tuple[int, ...]

    def __str__(self) -> str:
        return f"contig={list(self.contiguity)} div={list(self.divisibility)} const={list(self.constancy)}"


# AxisInfo((contiguity, divisibility, constancy)) without a Python frame (the named tuple's __new__ is one)
_info = partial(tuple.__new__, AxisInfo)


def _pow2_div(c: int) -> int:
    if c == 0:
        return MAX_DIV
    c = abs(int(c))
    return min(c & -c, MAX_DIV)


def _rank(v: ir.Value) -> int:
    return max(1, len(v.type.shape))


def _dims(v: ir.Value) -> tuple[int, ...]:
    return v.type.shape or (1,)


def _uniform(v: ir.Value, div: int) -> AxisInfo:
    shape = _dims(v)
    return _info(((1,) * len(shape), (div,) * len(shape), shape))


def analyze(fn: ir.Function, arg_facts: dict[str, int]) -> dict[int, AxisInfo]:
    """AxisInfo for every value, keyed by ``Value.id``. ``arg_facts`` maps argument name -> divisibility."""
    info: dict[int, AxisInfo] = {}
    for a in fn.args:
        info[a.id] = _uniform(a, arg_facts.get(a.name, 1))
    _analyze_block(fn.body, info)
    return info


def _unknown(v: ir.Value) -> AxisInfo:
    n = len(_dims(v))
    return _info(((1,) * n, (1,) * n, (1,) * n))


def _meet(a: AxisInfo, b: AxisInfo) -> AxisInfo:
    """What holds for both: the facts of a value that is ``a`` on some path and ``b`` on another."""
    if a == b:
        return a
    return _info((tuple(map(min, a.contiguity, b.contiguity)), tuple(map(gcd, a.divisibility, b.divisibility)),
                  tuple(map(min, a.constancy, b.constancy))))


def _analyze_block(block: ir.Block, info: dict[int, AxisInfo], changed: set[int] | None = None) -> None:
    """``changed``: the block was analysed before, and only the values in ``changed`` (ids) have other facts
    now: an op without regions none of whose operands changed keeps its result's facts (``_rule`` is a pure
    function of the op and its operands' facts); the ids of results whose facts change are added."""
    rules = _RULES
    for op in block.ops:
        if changed is not None:
            if not op.regions:
                if op.results and any(o.id in changed for o in op.operands):
                    before = [info[r.id] for r in op.results]
                    _plain_op(op, info)
                    changed.update(r.id for r, b in zip(op.results, before) if info[r.id] != b)
                continue
            changed.update(r.id for r in op.results)  # control flow: analysed again in full below
        elif not op.regions:  # _plain_op, inline: every op of every kernel comes through here
            results = op.results
            if len(results) == 1:
                rule = rules.get(op.name)
                if rule is not None:
                    r = results[0]
                    shape = r.type.shape or (1,)
                    info[r.id] = rule(op, [info[o.id] for o in op.operands], r, shape, len(shape))
                    continue
            for r in results:
                info[r.id] = _unknown(r)
            continue
        if op.name in ("for", "while"):
            _analyze_loop(op, info)
            continue
        for region in op.regions:
            for a in region.args:
                info[a.id] = _unknown(a)
            _analyze_block(region, info)
        if not op.results:
            continue
        if op.name == "if":
            for i, r in enumerate(op.results):
                ys = [region.terminator.operands[i] for region in op.regions]
                info[r.id] = _meet(info[ys[0].id], info[ys[1].id])
            continue
        if op.regions:
            for r in op.results:
                info[r.id] = _unknown(r)
            continue
        _plain_op(op, info)


def _plain_op(op: ir.Op, info: dict[int, AxisInfo]) -> None:
    """The facts of the results of an op without regions."""
    if len(op.results) > 1 or op.name not in _WITH_RULE:
        for r in op.results:
            info[r.id] = _unknown(r)
        return
    r = op.results[0]
    info[r.id] = _rule(op, [info[o.id] for o in op.operands], r)


def _analyze_loop(op: ir.Op, info: dict[int, AxisInfo]) -> None:
    """Loop-carried values keep the facts that hold for their initial value and after every iteration
    (a fixpoint: e.g. a pointer tile advanced by a multiple of 16 stays contiguous and aligned)."""
    is_for = op.name == "for"
    inits = op.operands[3:] if is_for else op.operands
    body = op.regions[-1]
    carried = body.args[1:] if is_for else body.args
    if is_for:
        lb, _, step = op.operands[:3]
        iv = body.args[0]
        # every value of the induction variable is lb + k * step
        info[iv.id] = _uniform(iv, gcd(info[lb.id].divisibility[0], info[step.id].divisibility[0]))
    state = [info[i.id] for i in inits]
    changed = None  # the first round analyses every op; the next ones only what the changed carried facts reach
    for _ in range(4):
        for region in op.regions:
            args = region.args[1:] if (is_for and region is body) else region.args
            for a, st in zip(args, state):
                info[a.id] = st
            _analyze_block(region, info, changed)
        new = [_meet(st, info[y.id]) for st, y in zip(state, body.terminator.operands)]
        if new == state:
            break
        changed = {a.id for region in op.regions
                   for a, st, nw in zip(region.args[1:] if (is_for and region is body) else region.args, state, new)
                   if st != nw}
        state = new
    else:  # no fixpoint in a few rounds: assume nothing
        state = [_unknown(a) for a in carried]
        for region in op.regions:
            args = region.args[1:] if (is_for and region is body) else region.args
            for a, st in zip(args, state):
                info[a.id] = st
            _analyze_block(region, info)
    for r, st in zip(op.results, state):
        info[r.id] = st


def _rule(op: ir.Op, ins: list[AxisInfo], r: ir.Value) -> AxisInfo:
    shape = r.type.shape or (1,)
    return _RULES[op.name](op, ins, r, shape, len(shape))


# one function per op with its own rule (the others: _elementwise); each takes (op, operand facts, result,
# the result's shape or (1,), that shape's rank)

def _const_rule(op: ir.Op, ins: list[AxisInfo], r: ir.Value, shape: tuple[int, ...], n: int) -> AxisInfo:
    v = op.attrs["value"]
    return _info(((1,) * n, (_pow2_div(v) if isinstance(v, int) and not isinstance(v, bool) else 1,) * n, shape))


def _program_id_rule(op: ir.Op, ins: list[AxisInfo], r: ir.Value, shape: tuple[int, ...], n: int) -> AxisInfo:
    return _info(((1,) * n, (1,) * n, shape))


def _arange_rule(op: ir.Op, ins: list[AxisInfo], r: ir.Value, shape: tuple[int, ...], n: int) -> AxisInfo:
    return _info(((shape[0],), (_pow2_div(op.attrs["start"]),), (1,)))


def _splat_rule(op: ir.Op, ins: list[AxisInfo], r: ir.Value, shape: tuple[int, ...], n: int) -> AxisInfo:
    return _info(((1,) * n, (ins[0].divisibility[0],) * n, shape))


def _expand_dims_rule(op: ir.Op, ins: list[AxisInfo], r: ir.Value, shape: tuple[int, ...], n: int) -> AxisInfo:
    axis = op.attrs["axis"]
    a = ins[0] if op.operands[0].type.shape else _info(((1,), (ins[0].divisibility[0],), (1,)))
    # along the new axis every element is its own run: only what divides every element counts
    d = min(1 if c > 1 else dv for c, dv in zip(a.contiguity, a.divisibility))
    return _info((a.contiguity[:axis] + (1,) + a.contiguity[axis:],
                  a.divisibility[:axis] + (d,) + a.divisibility[axis:],
                  a.constancy[:axis] + (1,) + a.constancy[axis:]))


def _broadcast_rule(op: ir.Op, ins: list[AxisInfo], r: ir.Value, shape: tuple[int, ...], n: int) -> AxisInfo:
    a, src = ins[0], _dims(op.operands[0])
    return _info((
        tuple(1 if s != t else c for s, t, c in zip(src, shape, a.contiguity)),
        a.divisibility,
        tuple(t if s != t else k for s, t, k in zip(src, shape, a.constancy)),
    ))


def _multiple_of_rule(op: ir.Op, ins: list[AxisInfo], r: ir.Value, shape: tuple[int, ...], n: int) -> AxisInfo:
    a = ins[0]
    return _info((a.contiguity, tuple(_pow2_div(v) for v in op.attrs["values"]), a.constancy))


def _max_contiguous_rule(op: ir.Op, ins: list[AxisInfo], r: ir.Value, shape: tuple[int, ...], n: int) -> AxisInfo:
    a = ins[0]
    return _info((tuple(min(v, s) for v, s in zip(op.attrs["values"], shape)), a.divisibility, a.constancy))


def _add_rule(op: ir.Op, ins: list[AxisInfo], r: ir.Value, shape: tuple[int, ...], n: int) -> AxisInfo:
    """add, sub and addptr."""
    name = op.name
    a, b = ins
    scale = r.type.element.element_ty.itemsize if name == "addptr" else 1
    contig = []
    for i in range(n):
        c = gcd(a.contiguity[i], b.constancy[i])
        if name != "sub":
            c = max(c, gcd(b.contiguity[i], a.constancy[i]))
        contig.append(c)
    div = tuple(min(gcd(a.divisibility[i], b.divisibility[i] * scale), MAX_DIV) for i in range(n))
    return _info((tuple(contig), div, _common_constancy(ins, n)))


def _mul_rule(op: ir.Op, ins: list[AxisInfo], r: ir.Value, shape: tuple[int, ...], n: int) -> AxisInfo:
    a, b = ins
    for i, other in ((0, b), (1, a)):
        if _constant_value(op.operands[i]) == 1:  # x * 1 (e.g. a stride specialized to 1) keeps x's facts
            return other

    def run_div(x: AxisInfo, i: int) -> int:
        # the elements inside a run [2^k, 2^k + 1, ...] are not multiples of 2^k: after a product only the
        # divisibility of every element counts (as Triton's AxisInfo does)
        return 1 if x.contiguity[i] > 1 else x.divisibility[i]

    div = tuple(min(run_div(a, i) * run_div(b, i), MAX_DIV) for i in range(n))
    return _info(((1,) * n, div, _common_constancy(ins, n)))


def _compare_rule(op: ir.Op, ins: list[AxisInfo], r: ir.Value, shape: tuple[int, ...], n: int) -> AxisInfo:
    """lt and ge; gt and le mirror them (c > offs / c <= offs are offs < c / offs >= c)."""
    a, b = ins if op.name in ("lt", "ge") else (ins[1], ins[0])
    const = _common_constancy(ins, n)
    out = []
    for i in range(n):
        k = const[i]
        if b.constancy[i] > 1 and a.contiguity[i] > 1:
            k = max(k, min(gcd(a.contiguity[i], gcd(a.divisibility[i], b.divisibility[i])), b.constancy[i]))
        out.append(k)
    return _info(((1,) * n, (1,) * n, tuple(out)))


def _cast_rule(op: ir.Op, ins: list[AxisInfo], r: ir.Value, shape: tuple[int, ...], n: int) -> AxisInfo:
    a = ins[0]
    if op.operands[0].type.element.is_int() and r.type.element.is_int() and \
            r.type.element.primitive_bitwidth >= op.operands[0].type.element.primitive_bitwidth:
        return a
    return _info(((1,) * n, (1,) * n, _common_constancy(ins, n)))


def _select_rule(op: ir.Op, ins: list[AxisInfo], r: ir.Value, shape: tuple[int, ...], n: int) -> AxisInfo:
    return _info(((1,) * n, tuple(gcd(ins[1].divisibility[i], ins[2].divisibility[i]) for i in range(n)),
                  _common_constancy(ins, n)))


def _elementwise_rule(op: ir.Op, ins: list[AxisInfo], r: ir.Value, shape: tuple[int, ...], n: int) -> AxisInfo:
    return _info(((1,) * n, (1,) * n, _common_constancy(ins, n)))


_OWN_RULES = {"const": _const_rule, "program_id": _program_id_rule, "num_programs": _program_id_rule,
              "arange": _arange_rule, "splat": _splat_rule, "expand_dims": _expand_dims_rule,
              "broadcast": _broadcast_rule, "multiple_of": _multiple_of_rule, "max_contiguous": _max_contiguous_rule,
              "add": _add_rule, "sub": _add_rule, "addptr": _add_rule, "mul": _mul_rule, "lt": _compare_rule,
              "ge": _compare_rule, "gt": _compare_rule, "le": _compare_rule, "cast": _cast_rule, "select": _select_rule}
# op name -> its rule, for every op whose result facts are derived (op_traits' axis_rule)
_RULES = {name: _OWN_RULES.get(name, _elementwise_rule) for name in _WITH_RULE}


def _constant_value(v: ir.Value):
    """The value of a constant scalar, or of a splat/broadcast of one; None otherwise."""
    while v.op is not None and v.op.name in ("splat", "broadcast", "expand_dims"):
        v = v.op.operands[0]
    if v.op is not None and v.op.name == "const":
        return v.op.attrs["value"]
    return None


def _common_constancy(ins: list[AxisInfo], n: int) -> tuple[int, ...]:
    """Per dimension, the runs of equal values that every input has (the gcd of their constancies; 1 if none)."""
    if not ins:
        return (1,) * n
    return tuple([gcd(*[x.constancy[i] for x in ins]) or 1 for i in range(n)])
