"""The tile IR: SSA values of scalar or tile type, ops in one block, a printer and a verifier.

Types are small frozen dataclasses; values and ops are plain objects. Passes never annotate them: their
decisions travel in their plan objects (``passes.layouts.LayoutPlan``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import chain, compress, count
from operator import attrgetter
from types import MappingProxyType
from typing import Any, NamedTuple

from ..language.core import tensor as tl_tensor
from ..language.dtypes import dtype, pointer_type
from .op_traits import OPS, family

ElementType = dtype | pointer_type


@dataclass(frozen=True, init=False)
class Type:
    """A scalar (``shape == ()``) or a tile ``tile<shape x element>`` of ``element``."""

    element: ElementType
    shape: tuple[int, ...] = ()
    # derived once (every pass asks them of every value): not part of equality, hashing or the repr
    is_tile: bool = field(init=False, repr=False, compare=False)
    is_ptr: bool = field(init=False, repr=False, compare=False)
    is_fp8: bool = field(init=False, repr=False, compare=False)  # the frontend refuses arithmetic on fp8

    def __init__(self, element: ElementType, shape: tuple[int, ...] = ()) -> None:
        # the frozen fields set as the dataclass's own __init__ sets them (object.__setattr__), never through
        # self.__dict__: reading __dict__ makes the instance keep a dict of its own, and every later attribute
        # read of it (is_tile, shape... on every op of every pass) then takes the interpreter's slow path
        _set = object.__setattr__
        _set(self, "element", element)
        _set(self, "shape", shape)
        _set(self, "is_tile", bool(shape))
        _set(self, "is_ptr", element.is_ptr())
        _set(self, "is_fp8", element.is_fp8())

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def with_element(self, element: ElementType) -> Type:
        return Type(element, self.shape)

    def with_shape(self, shape: tuple[int, ...]) -> Type:
        return Type(self.element, tuple(shape))

    def __str__(self) -> str:
        if not self.shape:
            return str(self.element)
        return f"tile<{'x'.join(map(str, self.shape))}x{self.element}>"


class Loc(NamedTuple):
    """Where an op came from in the user's source (a named tuple: one is made for every typed op)."""

    filename: str
    lineno: int
    col: int


class Value:
    """An SSA value: a kernel argument or the result of an op."""

    __slots__ = ("id", "name", "op", "type")

    def __init__(self, id: int, type: Type, op: Op | None = None, name: str | None = None):
        self.id = id
        self.type = type
        self.op = op
        self.name = name  # argument name, for arguments

    def __repr__(self) -> str:
        return f"%{self.name or self.id}"


tl_tensor.register(Value)  # isinstance(x, tl.tensor) holds for every runtime value in a kernel, as in Triton
_NO_ATTRS = MappingProxyType({})  # the attributes of an op without any
_new = object.__new__


class Op:
    """One operation. ``name`` selects its rules everywhere (verifier, passes, codegen tables).

    Control-flow ops (``for``, ``if``, ``while``) and ``reduce``/``scan`` (their combine function) own
    ``regions``: blocks whose last op is ``yield``.
    """

    __slots__ = ("attrs", "loc", "name", "operands", "regions", "results")

    def __init__(self, name: str, operands: list[Value], attrs: dict[str, Any] | None = None,
                 loc: Loc | None = None):
        self.name = name
        self.operands = list(operands)
        # results and regions are assigned whole, never changed in place: most ops share one empty tuple of each
        # (and one read-only empty mapping of attributes), which also spares the garbage collector three objects
        self.results: list[Value] | tuple[()] = ()
        self.attrs: dict[str, Any] | MappingProxyType = dict(attrs) if attrs else _NO_ATTRS
        self.loc = loc
        self.regions: list[Block] | tuple[()] = ()

    @property
    def result(self) -> Value | None:
        return self.results[0] if self.results else None


class Block:
    """A list of ops with block arguments (loop induction variable and loop-carried values)."""

    def __init__(self, args: list[Value] | None = None):
        self.args: list[Value] = list(args or [])
        self.ops: list[Op] = []

    @property
    def terminator(self) -> Op | None:
        return self.ops[-1] if self.ops and self.ops[-1].name == "yield" else None


def walk(ops: list[Op]) -> list[Op]:
    """Every op in ``ops`` and, depth first, in their regions (a new list: the IR may change afterwards)."""
    out: list[Op] = []
    _walk_into(ops, out)
    return out


def _walk_into(ops: list[Op], out: list[Op]) -> None:
    # the ops with regions found by C iterators; the runs of ops between them are copied whole (no Python step per op)
    start = 0
    for i in compress(count(), map(_REGIONS, ops)):
        out += ops[start:i + 1]
        for region in ops[i].regions:
            _walk_into(region.ops, out)
        start = i + 1
    out += ops[start:]


_REGIONS = attrgetter("regions")
_NAME = attrgetter("name")
_OPERANDS = attrgetter("operands")
_ID = attrgetter("id")


# Scans over every op of a function, made by C iterators (no Python step per op: they run on every compile)
def select(ops: list[Op], names: frozenset[str] | set[str]) -> list[Op]:
    """The ops of ``ops`` whose name is in ``names``, in order."""
    return list(compress(ops, map(names.__contains__, map(_NAME, ops))))


def names(ops: list[Op]) -> set[str]:
    """The names of the ops in ``ops`` (which kinds of op there are)."""
    return set(map(_NAME, ops))


def with_regions(ops: list[Op]) -> list[Op]:
    """The ops of ``ops`` that hold regions, in order."""
    return list(compress(ops, map(_REGIONS, ops)))


def use_counts(ops: list[Op]) -> Counter[int]:
    """Value id -> how many operands of the ops in ``ops`` it is (a Counter: 0 for a value never read)."""
    return Counter(map(_ID, chain.from_iterable(map(_OPERANDS, ops))))


def operand_ids(ops: list[Op]) -> frozenset[int]:
    """The ids of the values the ops in ``ops`` read."""
    return frozenset(map(_ID, chain.from_iterable(map(_OPERANDS, ops))))


# Ops by family, derived from the one table of op traits (op_traits.OPS): each op there names its MSL emit rule.
ELEMENTWISE_BINARY = family("elementwise_binary")
COMPARE = family("compare")
ELEMENTWISE_UNARY = family("elementwise_unary")
ELEMENTWISE_OTHER = family("elementwise_other")
ELEMENTWISE = ELEMENTWISE_BINARY | COMPARE | ELEMENTWISE_UNARY | ELEMENTWISE_OTHER
MEMORY = family("memory")
SOURCES = family("source")
SHAPE = family("shape")
HINTS = family("hint")
CONTROL = family("control")
REDUCTIONS = family("reduction")
MATMUL = family("matmul")
DEBUG = family("debug")
ALL_OPS = frozenset(OPS)


class Function:
    """A kernel in tile IR: arguments and a body block."""

    def __init__(self, name: str):
        self.name = name
        self.args: list[Value] = []
        self.body = Block()
        self._next_id = 0
        self._insertion: list[Block] = [self.body]

    @property
    def ops(self) -> list[Op]:
        return self.body.ops

    def new_value(self, type: Type, op: Op | None = None, name: str | None = None) -> Value:
        v = Value(self._next_id, type, op, name)
        self._next_id += 1
        return v

    def add_arg(self, name: str, type: Type) -> Value:
        v = self.new_value(type, None, name)
        self.args.append(v)
        return v

    # --- building ------------------------------------------------------------------------------
    @property
    def block(self) -> Block:
        """The block new ops go into."""
        return self._insertion[-1]

    def push_block(self, block: Block) -> None:
        self._insertion.append(block)

    def pop_block(self) -> Block:
        return self._insertion.pop()

    def append(self, name: str, operands: list[Value], result_type: Type | None,
               attrs: dict[str, Any] | None = None, loc: Loc | None = None) -> Value | None:
        """``append_op`` with one result type or none (inline: nearly every op of every kernel is made here).
        ``operands`` and ``attrs`` (the builder's list and keyword arguments, made for this call) become the op's
        own, without copies."""
        # the op and its result are made without their __init__ frames (a third of this call's cost): the same
        # fields as Op.__init__ and Value.__init__ set, kept in step with them
        op = _new(Op)
        op.name = name
        op.operands = operands
        op.results = ()
        op.attrs = attrs or _NO_ATTRS
        op.loc = loc
        op.regions = ()
        self._insertion[-1].ops.append(op)
        if result_type is None:
            return None
        v = _new(Value)
        v.id = self._next_id
        v.type = result_type
        v.op = op
        v.name = None
        self._next_id += 1
        op.results = [v]
        return v

    def append_op(self, name: str, operands: list[Value], result_types: list[Type],
                  attrs: dict[str, Any] | None = None, loc: Loc | None = None) -> Op:
        op = Op(name, operands, attrs, loc)
        if result_types:
            results = []
            for t in result_types:  # new_value, inline: every op of every kernel comes through here
                results.append(Value(self._next_id, t, op))
                self._next_id += 1
            op.results = results
        self._insertion[-1].ops.append(op)
        return op

    # --- printing ----------------------------------------------------------------------------
    def format(self, layouts: Callable[[Value], Any] | None = None) -> str:
        """The IR as text; with ``layouts`` (e.g. ``LayoutPlan.layout_of``) each result's layout is shown."""
        args = ", ".join(f"%{a.name}: {a.type}" for a in self.args)
        lines = [f"func @{self.name}({args}) {{"]
        _format_block(self.body, lines, "  ", layouts)
        lines.append("}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()


def _fmt_attr(v: Any) -> str:
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, tuple):
        return "[" + ", ".join(_fmt_attr(x) for x in v) + "]"
    return str(v)


def _format_block(block: Block, lines: list[str], indent: str, layouts: Callable[[Value], Any] | None) -> None:
    for op in block.ops:
        lines.append(indent + format_op(op, layouts))
        for i, region in enumerate(op.regions):
            args = ", ".join(f"{a!r}: {a.type}" for a in region.args)
            lines.append(f"{indent}  ^region{i}({args}):")
            _format_block(region, lines, indent + "    ", layouts)


def format_op(op: Op, layouts: Callable[[Value], Any] | None = None) -> str:
    attrs = ""
    shown = {k: v for k, v in op.attrs.items() if not k.startswith("_")}
    if shown:
        attrs = " {" + ", ".join(f"{k}={_fmt_attr(v)}" for k, v in sorted(shown.items())) + "}"
    operands = ", ".join(repr(o) for o in op.operands)
    text = f"{op.name} {operands}".rstrip() + attrs
    if op.results:
        names = ", ".join(repr(r) for r in op.results)
        types = ", ".join(str(r.type) for r in op.results)
        text = f"{names} = {text} : {types}"
        if layouts is not None:
            lays = [str(lay) for lay in map(layouts, op.results) if lay is not None]
            if lays:
                text += "  #" + " | ".join(lays)
    return text


class VerificationError(Exception):
    """The IR broke one of its invariants (a compiler bug, never a user error)."""


def verify(fn: Function) -> None:
    """Check SSA dominance, known op names, region terminators and shape agreement of elementwise ops."""
    _verify_block(fn.body, set(fn.args))


def _verify_block(block: Block, defined: set[Value]) -> None:
    # plain loops over each op's few operands: cheaper than a set or an iterator made per op (values hash by
    # identity)
    defined = set(defined)
    defined.update(block.args)
    for op in block.ops:
        name = op.name
        if name not in ALL_OPS:
            raise VerificationError(f"unknown op '{name}'")
        for o in op.operands:
            if o not in defined:
                raise VerificationError(f"{format_op(op)}: operand {o!r} is used before it is defined")
        for region in op.regions:
            if region.terminator is None:
                raise VerificationError(f"{format_op(op)}: a region does not end with yield")
            _verify_block(region, defined)
        if name in ELEMENTWISE:
            shape = op.results[0].type.shape
            for o in op.operands:
                if o.type.shape != shape:
                    raise VerificationError(f"{format_op(op)}: operand {o!r} has shape {o.type.shape}")
        elif name == "store":
            ptr, val = op.operands[0], op.operands[1]
            if ptr.type.shape != val.type.shape:
                raise VerificationError(f"{format_op(op)}: pointer and value shapes differ")
        defined.update(op.results)
