"""The tile IR: SSA values of scalar or tile type, ops in one block, a printer and a verifier.

Types are small frozen dataclasses; values and ops are plain objects that passes annotate
(``Value.layout``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..language.dtypes import dtype, pointer_type

ElementType = dtype | pointer_type


@dataclass(frozen=True)
class Type:
    """A scalar (``shape == ()``) or a tile ``tile<shape x element>`` of ``element``."""

    element: ElementType
    shape: tuple[int, ...] = ()

    @property
    def is_tile(self) -> bool:
        return bool(self.shape)

    @property
    def is_ptr(self) -> bool:
        return self.element.is_ptr()

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


@dataclass(frozen=True)
class Loc:
    """Where an op came from in the user's source."""

    filename: str
    lineno: int
    col: int


class Value:
    """An SSA value: a kernel argument or the result of an op."""

    __slots__ = ("id", "layout", "name", "op", "type")

    def __init__(self, id: int, type: Type, op: Op | None = None, name: str | None = None):
        self.id = id
        self.type = type
        self.op = op
        self.name = name  # argument name, for arguments
        self.layout: Any = None  # set by passes.layouts

    def __repr__(self) -> str:
        return f"%{self.name or self.id}"


@dataclass
class Op:
    """One operation. ``name`` selects its rules everywhere (verifier, passes, codegen tables)."""

    name: str
    operands: list[Value]
    result: Value | None
    attrs: dict[str, Any] = field(default_factory=dict)
    loc: Loc | None = None


# Ops by family, for passes and the verifier. Each name here has one MSL rule in codegen_msl.
ELEMENTWISE_BINARY = {"add", "sub", "mul", "fdiv", "idiv", "mod", "and", "or", "xor", "shl", "shr",
                      "max", "min", "umulhi", "fmod"}
COMPARE = {"lt", "le", "gt", "ge", "eq", "ne"}
ELEMENTWISE_UNARY = {"neg", "not", "abs", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos",
                     "floor", "ceil", "erf", "sigmoid"}
ELEMENTWISE_OTHER = {"select", "fma", "cast", "bitcast", "addptr"}
MEMORY = {"load", "store"}
SOURCES = {"arg", "const", "program_id", "num_programs", "arange", "splat", "full"}
SHAPE = {"broadcast", "expand_dims"}
HINTS = {"multiple_of", "max_contiguous"}
ALL_OPS = ELEMENTWISE_BINARY | COMPARE | ELEMENTWISE_UNARY | ELEMENTWISE_OTHER | MEMORY | SOURCES | SHAPE | HINTS


class Function:
    """A kernel in tile IR: arguments and a straight-line list of ops."""

    def __init__(self, name: str):
        self.name = name
        self.args: list[Value] = []
        self.ops: list[Op] = []
        self._next_id = 0

    def new_value(self, type: Type, op: Op | None = None, name: str | None = None) -> Value:
        v = Value(self._next_id, type, op, name)
        self._next_id += 1
        return v

    def add_arg(self, name: str, type: Type) -> Value:
        v = self.new_value(type, None, name)
        self.args.append(v)
        return v

    def append(self, name: str, operands: list[Value], result_type: Type | None,
               attrs: dict[str, Any] | None = None, loc: Loc | None = None) -> Value | None:
        op = Op(name, list(operands), None, dict(attrs or {}), loc)
        if result_type is not None:
            op.result = self.new_value(result_type, op)
        self.ops.append(op)
        return op.result

    # --- printing ----------------------------------------------------------------------------
    def format(self, show_layouts: bool = False) -> str:
        args = ", ".join(f"%{a.name}: {a.type}" for a in self.args)
        lines = [f"func @{self.name}({args}) {{"]
        for op in self.ops:
            lines.append("  " + format_op(op, show_layouts))
        lines.append("}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()


def _fmt_attr(v: Any) -> str:
    if isinstance(v, float):
        return repr(v)
    return str(v)


def format_op(op: Op, show_layouts: bool = False) -> str:
    attrs = ""
    if op.attrs:
        attrs = " {" + ", ".join(f"{k}={_fmt_attr(v)}" for k, v in sorted(op.attrs.items())) + "}"
    operands = ", ".join(repr(o) for o in op.operands)
    text = f"{op.name} {operands}".rstrip() + attrs
    if op.result is not None:
        text = f"{op.result!r} = {text} : {op.result.type}"
        if show_layouts and op.result.layout is not None:
            text += f"  #{op.result.layout}"
    return text


class VerificationError(Exception):
    """The IR broke one of its invariants (a compiler bug, never a user error)."""


def verify(fn: Function) -> None:
    """Check SSA dominance, known op names and shape agreement of elementwise ops."""
    defined = {id(a) for a in fn.args}
    for op in fn.ops:
        if op.name not in ALL_OPS:
            raise VerificationError(f"unknown op '{op.name}'")
        for o in op.operands:
            if id(o) not in defined:
                raise VerificationError(f"{format_op(op)}: operand {o!r} is used before it is defined")
        if op.result is not None:
            defined.add(id(op.result))
            shape = op.result.type.shape
            if op.name in ELEMENTWISE_BINARY | COMPARE | ELEMENTWISE_UNARY | ELEMENTWISE_OTHER:
                for o in op.operands:
                    if o.type.shape != shape:
                        raise VerificationError(f"{format_op(op)}: operand {o!r} has shape {o.type.shape}")
        if op.name == "store":
            ptr, val = op.operands[0], op.operands[1]
            if ptr.type.shape != val.type.shape:
                raise VerificationError(f"{format_op(op)}: pointer and value shapes differ")
