"""Frontend, expressions: the half of ``Lowering`` (``frontend.py``) that evaluates expressions.

Constexprs evaluate to Python values and everything else to IR values built by the typing rules in
``semantic.py``: names and attributes (with the global reads checked again at launch), operators, subscripts,
and calls of ``tl`` builtins, ``@jit`` functions (inlined by the statement half) and Python builtins on
constexprs. Every refusal is a ``CompilationError`` pointing at the offending expression.
"""

from __future__ import annotations

import ast
import operator
from functools import partial
from types import ModuleType
from typing import Any

from ..errors import CompilationError
from ..language.builtins import inline_asm_elementwise as tl_inline_asm
from ..language.builtins import range as tl_range
from ..language.builtins import static_range
from ..language.core import (
    aggregate_replace,
    builtin_name,
    constexpr,
    constexpr_type,
    is_aggregate,
    is_aggregate_class,
    tuple_type,
)
from ..language.core import condition as tl_condition
from ..language.core import tuple as tl_tuple
from ..language.dtypes import dtype, pointer_type, str_to_ty
from . import ir, semantic, semantic_reduce
from .aggregates import Aggregate
from .ir import Value
from .kernel import GlobalRead
from .refusals import LIBDEVICE_REFUSED, REFUSED
from .semantic import Builder, SemanticError

_MISSING = object()
_loc = partial(tuple.__new__, ir.Loc)  # ir.Loc((filename, lineno, col)) without the named tuple's __new__ frame

_LIBRARY: dict[str, Any] | None = None


def _library() -> dict[str, Any]:
    global _LIBRARY
    if _LIBRARY is None:
        from .library import LIBRARY  # imported on first use: it defines @jit functions

        _LIBRARY = LIBRARY
    return _LIBRARY


# tl builtins the frontend lowers itself (compile-time checks and printing; combine functions it inlines)
_FRONTEND_BUILTINS = frozenset({"static_assert", "static_print", "reduce", "associative_scan", "map_elementwise"})


def is_jit_function(obj: Any) -> bool:
    return getattr(obj, "__enceladus_jit__", False)


_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
           ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>",
           ast.Pow: "**", ast.MatMult: "@"}
_PY_BINOPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
              "//": operator.floordiv, "%": operator.mod, "&": operator.and_, "|": operator.or_,
              "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift, "**": operator.pow}
_CMPOPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_PY_CMPOPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
              "==": operator.eq, "!=": operator.ne}
_UNARYOPS = {ast.USub: "-", ast.UAdd: "+", ast.Invert: "~", ast.Not: "not"}

# Python builtins a kernel may call on constexprs (as in Triton).
_PY_BUILTINS = {"min": min, "max": max, "int": int, "float": float, "len": len, "isinstance": isinstance,
                "getattr": getattr, "range": tl_range, "abs": abs, "bool": bool, "hasattr": hasattr}
_UNSUPPORTED_EXPR_FIX = {
    ast.List: "lists are not supported in kernels; use a tuple of constexprs or a tile (tl.arange/tl.full)",
    ast.Dict: "dicts are not supported in kernels; pass values as separate arguments",
    ast.Set: "sets are not supported in kernels",
    ast.ListComp: "comprehensions are not supported in kernels; use tl.arange and tile arithmetic",
    ast.SetComp: "comprehensions are not supported in kernels",
    ast.DictComp: "comprehensions are not supported in kernels",
    ast.GeneratorExp: "generator expressions are not supported in kernels",
    ast.Lambda: "lambdas are not supported in kernels; define a module-level @enceladus.jit function",
    ast.JoinedStr: "f-strings are not supported in kernels",
    ast.Await: "await is not supported in kernels",
    ast.Yield: "yield is not supported in kernels",
    ast.NamedExpr: "the walrus operator is not supported in kernels; use a separate assignment",
    ast.Starred: "starred expressions are not supported in kernels",
}

class _AggregateMethod:
    """A bound method of a tensor descriptor (``desc.load``)."""

    def __init__(self, method: Any):
        self.method = method


class _BoundJit:
    """A ``@jit`` method of an ``@aggregate`` instance (``acc.update(x)``): inlined with the instance first."""

    def __init__(self, fn: Any, instance: Any):
        self.fn = fn
        self.instance = instance


class _TensorMethod:
    """A bound method of a tile value (``x.to``)."""

    def __init__(self, name: str, value: ir.Value):
        self.name = name
        self.value = value


def _pointer_type_of(element_ty: Any, address_space: Any = 1, const: Any = False) -> pointer_type:
    """``tl.pointer_type(element_ty, const=False)`` in a kernel: global memory (Triton's address space 1) only."""
    if not isinstance(element_ty, dtype):
        raise SemanticError(f"tl.pointer_type expects a dtype such as tl.float16, got {element_ty!r}",
                            "pass a tl.* dtype")
    if address_space != 1:
        raise SemanticError(f"tl.pointer_type(address_space={address_space!r}): only global memory (1) exists in "
                            "Enceladus kernels", "drop address_space")
    return pointer_type(element_ty, const=bool(const))


def _tuple_type(t: tuple) -> tuple_type:
    """``t.type`` of a tuple in a kernel: its entries' types (a constexpr entry's is a ``tl.constexpr_type``)."""
    return tuple_type([_tuple_type(v) if isinstance(v, tuple) else _block_type(v) if isinstance(v, Value) else constexpr_type(v)
                       for v in t], getattr(t, "_fields", None))


def _block_type(v: ir.Value) -> Any:
    """``x.type``: the element type of a scalar (a ``pointer_type`` for pointers), a block type for a tile."""
    from ..language.dtypes import block_type

    return block_type(v.type.element, v.type.shape) if v.type.is_tile else v.type.element


class _Shape(tuple):
    """A tile's ``.shape``: a tuple that also equals the list of the same sizes, as Triton's ``tl.tuple`` shape
    does (``tl.static_assert(x.shape == [M, N])`` and ``x.shape == (M, N)`` both hold)."""

    def __eq__(self, other: object) -> bool:
        return tuple(self) == tuple(other) if isinstance(other, (list, tuple)) else NotImplemented

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = tuple.__hash__


# attributes of runtime values (tiles and scalars), as Triton's tensor has them
_VALUE_PROPERTIES = {
    "dtype": lambda v: v.type.element,
    "shape": lambda v: _Shape(v.type.shape),
    "numel": lambda v: v.type.numel,
    "type": _block_type,
}


class ExpressionLowering:
    """Evaluates the expressions of a kernel body into the builder ``self.b``: the half of ``frontend.Lowering``
    that holds no statements. ``Lowering`` sets the state up (``__init__``) and gives what expressions need of
    statements: ``inline`` (calls of ``@jit`` functions), ``runtime_if`` (a ternary with calls in it) and
    ``generic_visit`` (the refusal of an unsupported node)."""

    # --- errors ------------------------------------------------------------------------------------
    def error(self, node: ast.AST, message: str, fix: str | None = None) -> CompilationError:
        lineno, col, line = self.src.locate(node)
        return CompilationError(message, filename=self.src.filename, lineno=lineno, col=col, source_line=line,
                                fix=fix, kernel=self.kernel_name)

    def _set_loc(self, node: ast.AST) -> None:
        # as KernelSource.locate computes them, from the offsets read once in __init__
        self.b.loc = _loc((self._filename, self._line0 + node.lineno, node.col_offset + self._indent))

    # --- expressions --------------------------------------------------------------------------------
    def eval(self, node: ast.expr) -> Any:
        try:
            method = _EVAL[node.__class__]  # eval_<node class name>, found once per class (see below the class)
        except KeyError:
            return self.generic_visit(node)
        return method(self, node)

    def eval_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def eval_Name(self, node: ast.Name) -> Any:
        name = node.id
        if name in self.scope:
            return self.scope[name]
        if name in self.modules:
            value = self.read_globals[name] = self.modules[name]  # (an inlined callee's may have replaced it)
            return value
        if name in self.globals:
            value = self.globals[name]
            if isinstance(value, constexpr):
                value = value.value
            elif _is_enceladus_module(value):  # tl, enceladus (read for every tl.*): not mutable, never recorded
                self.read_globals[name] = self.modules[name] = value
                return value
            if isinstance(value, (list, dict, set, bytearray)) or (hasattr(value, "__array__") and
                                                                 not isinstance(value, (dtype,))):
                raise self.error(node, f"global '{name}' is a mutable {type(value).__name__}, which kernels cannot use",
                                 "pass it as a kernel argument, or make it a tl.constexpr constant")
            self.read_globals[name] = value
            self._record_read(node, (name,), self.globals[name])
            return value
        if name in _PY_BUILTINS:
            return _PY_BUILTINS[name]
        if name == "print":
            raise self.error(node, "print() is not supported in compiled kernels yet",
                             "use tl.static_print for compile-time values, or ENCELADUS_INTERPRET=1 to print tiles")
        raise self.error(node, f"name '{name}' is not defined",
                         "define it before use (a name assigned in only one branch of a runtime 'if' is not defined "
                         "after it: assign it before the 'if' or in both branches)")

    def eval_Attribute(self, node: ast.Attribute) -> Any:
        value_node = node.value
        if value_node.__class__ is ast.Name and value_node.id in self.modules and value_node.id not in self.scope:
            # tl.X (a global bound to an Enceladus module, as eval_Name reads it): what the general path below
            # gives for a module's attribute, or the general path itself for its errors
            module = self.read_globals[value_node.id] = self.modules[value_node.id]
            value = getattr(module, node.attr, _MISSING)
            if value is not _MISSING:
                return value.value if isinstance(value, constexpr) else value
        base = self.eval(value_node)
        attr = node.attr
        if isinstance(base, Value):
            if attr in _VALUE_PROPERTIES:
                return _VALUE_PROPERTIES[attr](base)
            if attr == "T":
                return self.apply(node, semantic.RULES["trans"], base)
            if attr == "to" or attr in semantic.RULES:
                return _TensorMethod(attr, base)
            raise self.error(node, f"tiles have no attribute '{attr}'",
                             "supported: x.dtype, x.shape, x.numel, x.type, x.T, x.to(dtype), x.item() and tl.* "
                             "builtins as methods (x.sum(0))")
        if base.__class__ is not ModuleType:  # (tl in tl.load: a module is none of these)
            if isinstance(base, tuple) and attr == "type":  # a tuple's tl.tuple_type
                return _tuple_type(base)
            if isinstance(base, pointer_type) and attr == "element_ty":
                return base.element_ty
            if attr == "dtype" and semantic.is_python_scalar(base):
                return semantic.D.literal_dtype(base)  # the type a literal takes when it stands alone
            if isinstance(base, Aggregate):
                method = getattr(base, attr, None)
                if attr in ("load", "store", "gather", "scatter") and method is not None:
                    return _AggregateMethod(method)
                if attr in ("block_shape", "shape", "strides", "dtype") or (attr == "type" and hasattr(base, "type")):
                    return getattr(base, attr) if attr != "dtype" else base.base.type.element.element_ty
                raise self.error(node, f"{type(base).__name__} has no attribute '{attr}'",
                                 "descriptors support .load(offsets), .store(offsets, value), .gather(x_offsets, "
                                 "y_offset) and .scatter(value, x_offsets, y_offset)")
        try:
            value = getattr(base, attr)
        except AttributeError:
            what = getattr(base, "__name__", type(base).__name__)
            if what == "enceladus.language.extra.libdevice" and attr in LIBDEVICE_REFUSED:
                raise self.error(node, f"libdevice.{attr} cannot run on Apple GPUs: {LIBDEVICE_REFUSED[attr].reason}",
                                 LIBDEVICE_REFUSED[attr].fix) from None
            if what.startswith("enceladus.language") and attr in REFUSED:
                raise self.error(node, f"tl.{attr} cannot run on Apple GPUs: {REFUSED[attr].reason}",
                                 REFUSED[attr].fix) from None
            raise self.error(node, f"'{what}' has no attribute '{attr}'",
                             "see the language reference for the supported tl.* builtins") from None
        if is_jit_function(value) and is_aggregate(base):  # (in this order: is_aggregate of a module raises inside)
            return _BoundJit(value, base)
        # tl.X (a name bound to an Enceladus module): never recorded (_record_read), so not looked for
        if value_node.__class__ is not ast.Name or (self.modules.get(value_node.id) is not base
                                                    and not _is_enceladus_module(base)):
            path = self._global_path(node)
            if path is not None:  # cfg.BLOCK, mod.helper, Config.ATTR: checked again at launch
                self._record_read(node, path, value)
        return value.value if isinstance(value, constexpr) else value

    @staticmethod
    def value_has_attribute(v: ir.Value, attr: str) -> bool:
        """``hasattr(x, name)`` on a runtime value: whether ``x.name`` is defined (as eval_Attribute does)."""
        return attr in _VALUE_PROPERTIES or attr in ("T", "to") or attr in semantic.RULES

    def _global_path(self, node: ast.expr) -> tuple[str, ...] | None:
        """``("cfg", "BLOCK")`` for ``cfg.BLOCK`` when ``cfg`` is a global of this function, else None."""
        if isinstance(node, ast.Name):
            return (node.id,) if node.id not in self.scope and node.id in self.globals else None
        if isinstance(node, ast.Attribute):
            parent = self._global_path(node.value)
            return None if parent is None else (*parent, node.attr)
        return None

    def _record_read(self, node: ast.AST, path: tuple[str, ...], value: Any, owner: Any = None) -> None:
        """Remember a value read outside the arguments (``owner``'s global or defaults; default: this function's
        global), located at ``node`` of this function's source."""
        if owner is None:
            root = self.globals.get(path[0])
            if _is_enceladus_module(root) or (len(path) == 1 and _is_enceladus_builtin(value)):
                return  # tl.* and enceladus.* themselves are part of the compiler's own digest
        owner = self.src.fn if owner is None else owner
        key = (id(owner), path)
        if key not in self.global_reads:
            lineno, _, line = self.src.locate(node)
            self.global_reads[key] = GlobalRead(owner, path, value, f"{self.src.filename}:{lineno}", line.strip())

    def eval_Tuple(self, node: ast.Tuple) -> tuple:
        return tuple(self.eval(e) for e in node.elts)

    def eval_List(self, node: ast.List) -> list:
        # Triton accepts list literals for shapes and offsets: lists of constexprs or scalars (lists, as in Python:
        # tl.static_assert(desc.block_shape == [M, N]) compares two lists)
        values = [self.eval(e) for e in node.elts]
        if any(isinstance(v, Value) and v.type.is_tile for v in values):
            raise self.error(node, "lists are not supported in kernels", _UNSUPPORTED_EXPR_FIX[ast.List])
        return values

    def eval_BinOp(self, node: ast.BinOp) -> Any:
        # `a + b + c + ...` nests to the left: fold the left spine in a loop (a chain of hundreds of terms
        # would otherwise exceed Python's recursion limit)
        if node.left.__class__ is not ast.BinOp:  # nothing to fold (most operations)
            lhs = self.eval(node.left)
            return self.binop(node, _BINOPS[node.op.__class__], lhs, self.eval(node.right))
        spine = [node]
        while isinstance(spine[-1].left, ast.BinOp):
            spine.append(spine[-1].left)
        value = self.eval(spine[-1].left)
        for n in reversed(spine):
            value = self.binop(n, _BINOPS[type(n.op)], value, self.eval(n.right))
        return value

    def binop(self, node: ast.AST, op: str, lhs: Any, rhs: Any) -> Any:
        if not isinstance(lhs, Value) and not isinstance(rhs, Value):
            try:
                return _PY_BINOPS[op](lhs, rhs) if op in _PY_BINOPS else self._bad_op(node, op)
            except (TypeError, ZeroDivisionError, ValueError) as e:
                raise self.error(node, f"cannot evaluate constexpr expression: {e}",
                                 "check the constexpr values (e.g. a division by zero)") from None
        if op == "**":
            raise self.error(node, "'**' is not defined on tiles",
                             "multiply explicitly (x * x) or use tl.exp2(y * tl.log2(x))")
        if op == "@":
            raise self.error(node, "'@' is not defined on tiles", "use tl.dot(a, b)")
        return self.apply(node, semantic.binary, op, lhs, rhs)

    def _bad_op(self, node: ast.AST, op: str) -> Any:
        raise self.error(node, f"operator {op} is not supported",
                         "use one of + - * / // % ** << >> & | ^ and the comparisons, or the tl.* builtin for the operation")

    def eval_UnaryOp(self, node: ast.UnaryOp) -> Any:
        op = _UNARYOPS[type(node.op)]
        x = self.eval(node.operand)
        if not isinstance(x, Value):
            return {"-": operator.neg, "+": operator.pos, "~": operator.invert, "not": operator.not_}[op](x)
        return self.apply(node, semantic.unary, op, x)

    def eval_Compare(self, node: ast.Compare) -> Any:
        if len(node.ops) != 1:
            raise self.error(node, "chained comparisons are not supported in kernels",
                             "split them: (a < b) & (b < c)")
        lhs, rhs = self.eval(node.left), self.eval(node.comparators[0])
        op = node.ops[0]
        if isinstance(op, (ast.Is, ast.IsNot)):
            if isinstance(lhs, Value) or isinstance(rhs, Value):
                return isinstance(op, ast.IsNot)  # a value is never None
            return (lhs is rhs) if isinstance(op, ast.Is) else (lhs is not rhs)
        if isinstance(op, (ast.In, ast.NotIn)):
            if isinstance(lhs, Value) or isinstance(rhs, Value):
                raise self.error(node, "'in' is not defined on tiles",
                                 "compare elements explicitly (e.g. tl.where(x == a, ...)) or test constexpr values outside the kernel")
            return (lhs in rhs) if isinstance(op, ast.In) else (lhs not in rhs)
        sym = _CMPOPS[type(op)]
        if not isinstance(lhs, Value) and not isinstance(rhs, Value):
            return _PY_CMPOPS[sym](lhs, rhs)
        return self.apply(node, semantic.compare, sym, lhs, rhs)

    def eval_BoolOp(self, node: ast.BoolOp) -> Any:
        """``and``/``or`` as Triton: Python values short-circuit; runtime booleans combine with ``&``/``|``
        (every runtime operand is evaluated)."""
        is_and = isinstance(node.op, ast.And)
        word, sym = ("and", "&") if is_and else ("or", "|")
        runtime: list[ir.Value] = []
        v: Any = None
        for e in node.values:
            v = self.eval(e)
            if isinstance(v, Value):
                if not v.type.element.is_bool():
                    raise self.error(e, f"'{word}' needs boolean operands, got {v.type}",
                                     f"compare it first, e.g. (x != 0) {word} ...; or use {sym} for bitwise {word}")
                runtime.append(v)
            elif (is_and and not v) or (not is_and and v):
                return v  # a constexpr decides the whole expression
        if not runtime:
            return v  # every operand was a constexpr that did not decide: the last one, as in Python
        out = runtime[0]
        for rhs in runtime[1:]:
            out = self.apply(node, semantic.binary, sym, out, rhs)
        return out

    def condition(self, test: ast.expr) -> Any:
        """The value of an ``if``'s or a ternary's condition; a single-element tile steers like its element (as in
        Triton)."""
        cond = self.eval(test)
        if isinstance(cond, Value) and cond.type.is_tile and cond.type.numel == 1:
            cond = self.apply(test, semantic.RULES["item"], cond)
        return cond

    def eval_IfExp(self, node: ast.IfExp) -> Any:
        cond = self.condition(node.test)
        if isinstance(cond, Value):
            folded = self.fold(cond)
            if folded is None:
                if cond.type.is_tile:
                    raise self.error(node.test, "the condition of a conditional expression must be a scalar",
                                     "use tl.where(cond, x, y) for tiles")
                if any(isinstance(n, ast.Call) for part in (node.body, node.orelse) for n in ast.walk(part)):
                    return self.branching_ifexp(node, cond)
                a, b = self.eval(node.body), self.eval(node.orelse)  # plain arithmetic: both sides, then a select
                return self.apply(node, semantic.RULES["where"], cond, a, b)
            cond = folded
        return self.eval(node.body if cond else node.orelse)

    def branching_ifexp(self, node: ast.IfExp, cond: Value) -> Any:
        """``x if c else y`` with calls in it (loads, stores, atomics, functions): only the branch taken runs, as
        in Python and Triton, so it becomes a runtime ``if`` whose branches assign one hidden name."""
        name = f"enc.ifexp{id(node)}"  # not a Python identifier: cannot clash with the kernel's names
        branches = [[ast.copy_location(ast.Assign(targets=[ast.copy_location(ast.Name(name, ast.Store()), part)],
                                                  value=part), part)] for part in (node.body, node.orelse)]
        self.runtime_if(node, cond, branches[0], branches[1])
        return self.scope.pop(name, None)  # absent when both branches are None (calls that return nothing)

    def eval_Subscript(self, node: ast.Subscript) -> Any:
        base = self.eval(node.value)
        idx_nodes = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if not isinstance(base, Value):
            idx = self.eval(node.slice)
            try:
                return base[idx]
            except Exception as e:  # noqa: BLE001 - report any indexing failure at its location
                raise self.error(node, f"cannot index {self.describe(base)}: {e}",
                                 "index tiles with constexpr slices and None only (x[:, None]); gather elements with tl.load through pointers") from None
        x = base
        dim = 0
        for sub in idx_nodes:
            if self._is_full_slice(sub):
                dim += 1
                continue
            idx = None if isinstance(sub, ast.Constant) and sub.value is None else \
                (self.eval(sub) if not isinstance(sub, ast.Slice) else sub)
            if isinstance(idx, slice) and idx == slice(None, None, None):  # tl.slice(None, None, None) is ':'
                dim += 1
                continue
            if idx is not None:
                raise self.error(sub, "unsupported tensor index: tiles can only be indexed with None and ':' (e.g. x[:, None])",
                                 "slicing and element access are not supported; use masks or tl.where")
            shape = x.type.shape
            x = self.apply(node, Builder.emit, "expand_dims", [x], self.b.type(x.type.element, shape[:dim] + (1,) + shape[dim:]),
                           axis=dim)
            dim += 1
        if dim > len(x.type.shape):
            raise self.error(node, f"too many indices for a tile of rank {len(base.type.shape)}",
                             "use one index (or None / :) per dimension of the tile")
        return x

    def _is_full_slice(self, sub: ast.expr) -> bool:
        """``:`` with every part absent or None (``x[None, None:]`` is ``x[None, :]``, as in Triton)."""
        if not isinstance(sub, ast.Slice):
            return False
        for part in (sub.lower, sub.upper, sub.step):
            if part is not None and self.eval(part) is not None:
                raise self.error(sub, "unsupported tensor index: tiles can only be indexed with None and ':' (e.g. x[:, None])",
                                 "slicing and element access are not supported; use masks or tl.where")
        return True

    def eval_Call(self, node: ast.Call) -> Any:
        fn = self.eval(node.func)
        args = []
        takes_lists = fn is tl_tuple or fn is tl_inline_asm
        for a in node.args:
            if takes_lists and isinstance(a, ast.List):  # lists of tiles only here
                args.append(self.eval_Tuple(a))
            elif isinstance(a, ast.Starred):
                v = self.eval(a.value)
                if not isinstance(v, tuple):
                             raise self.error(a, "only tuples can be unpacked with * in kernels",
                                              "unpack a tuple (or pass the elements one by one)")
                args.extend(v)
            else:
                args.append(self.eval(a))
        kwargs = {}
        for k in node.keywords:
            if k.arg is None:
                raise self.error(k, "**kwargs are not supported in kernels", "pass the keyword arguments one by one")
            kwargs[k.arg] = (self.eval_Tuple(k.value) if fn is tl_inline_asm and isinstance(k.value, ast.List)
                             else self.eval(k.value))
        return self.call(node, fn, args, kwargs)

    def call(self, node: ast.AST, fn: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        name = builtin_name(fn)
        if name is not None and name not in _FRONTEND_BUILTINS:  # a typing rule: nearly every call of a kernel
            rule_fn = semantic.RULES.get(name)
            if rule_fn is not None:
                return self.apply(node, rule_fn, *args, **kwargs)
            library = _library()  # (no name is both a rule and in the library: test_library_and_rules_apart)
            if name in library:  # builtins written in the tile language (random numbers, swizzle2d)
                return self.inline(node, library[name], args, kwargs)
            raise self.error(node, f"tl.{name} is not supported by the compiler yet",
                             "run the kernel with ENCELADUS_INTERPRET=1, or rewrite it without this builtin")
        if isinstance(fn, _AggregateMethod):
            return self.apply(node, fn.method, *args, **kwargs)
        if isinstance(fn, _BoundJit):
            return self.inline(node, fn.fn, [fn.instance, *args], kwargs)
        if isinstance(fn, _TensorMethod):
            if fn.name in ("reduce", "associative_scan"):
                return self.reduce_with(node, fn.name, fn.value, *args, **kwargs)
            rule_name = "cast" if fn.name == "to" else fn.name
            return self.apply(node, semantic.RULES[rule_name], fn.value, *args, **kwargs)
        if name is not None:  # the builtins the frontend itself handles (_FRONTEND_BUILTINS)
            if name == "static_assert":
                return self.static_assert(node, *args, **kwargs)
            if name == "static_print":
                print(*[self.describe(a) if isinstance(a, Value) else a for a in args])
                return None
            if name in ("reduce", "associative_scan"):
                return self.reduce_with(node, name, *args, **kwargs)
            return self.map_elementwise(node, *args, **kwargs)
        if isinstance(fn, dtype):  # tl.float32(x) is a cast
            if len(args) != 1 or kwargs:
                raise self.error(node, f"{fn!r}(...) takes exactly one argument",
                                 "pass a single argument")
            return self.apply(node, semantic.RULES["cast"], args[0], fn)
        if is_jit_function(fn):
            return self.inline(node, fn, args, kwargs)
        if fn is constexpr:  # tl.constexpr(32): the value itself
            if len(args) != 1 or kwargs or isinstance(args[0], Value):
                raise self.error(node, "tl.constexpr(...) takes one compile-time value",
                                 "pass a Python value or a constexpr (e.g. tl.constexpr(32)); runtime values cannot "
                                 "become constexprs")
            return args[0]
        if fn is tl_condition:  # while tl.condition(c, disable_licm=...): the condition (the hint has no effect)
            return self.apply(node, lambda _: tl_condition(*args, **kwargs))
        if is_aggregate_class(fn) or fn is aggregate_replace:  # @aggregate classes: Python objects holding values
            try:
                return fn(*args, **kwargs)
            except (TypeError, AttributeError) as e:
                raise self.error(node, str(e), "pass each field of the aggregate once, by position or by name") from None
        if fn is tl_tuple:  # tl.tuple([a, b]) is the tuple (a, b)
            if len(args) != 1 or not isinstance(args[0], (tuple, list)):
                raise self.error(node, "tl.tuple(...) takes one list or tuple of values", "e.g. tl.tuple([a, b])")
            return tuple(args[0])
        if isinstance(fn, type) and issubclass(fn, tuple) and hasattr(fn, "_fields"):
            try:  # a NamedTuple built in the kernel (Triton's aggregate of values): a tuple with field names
                return fn(*args, **kwargs)
            except TypeError as e:
                raise self.error(node, f"{fn.__name__}(...): {e}", f"pass the fields of {fn.__name__}") from None
        if fn is hasattr and len(args) == 2 and not kwargs and isinstance(args[0], Value) and isinstance(args[1], str):
            return self.value_has_attribute(args[0], args[1])
        if fn is isinstance and len(args) == 2 and not kwargs and isinstance(args[0], Value):
            classes = args[1] if isinstance(args[1], tuple) else (args[1],)
            return any(isinstance(c, type) and isinstance(args[0], c) for c in classes)  # tl.tensor registers Value
        if fn is str_to_ty:
            return self.apply(node, lambda _: str_to_ty(*args, **kwargs))
        if fn is pointer_type:  # tl.pointer_type(tl.float16): a type for x.to(...) (pointer casts)
            return self.apply(node, lambda _: _pointer_type_of(*args, **kwargs))
        if fn in (static_range, tl_range):
            return fn(*args, **kwargs)
        if fn in (min, max) and args and not kwargs and any(isinstance(a, Value) for a in args):
            # Python's min/max on runtime values are elementwise minimum/maximum, as in Triton
            rule_fn = semantic.RULES["minimum" if fn is min else "maximum"]
            vals = list(args[0]) if len(args) == 1 and isinstance(args[0], tuple) else list(args)
            out = vals[0]
            for v in vals[1:]:
                out = self.apply(node, rule_fn, out, v)
            return out
        if any(isinstance(a, Value) for a in list(args) + list(kwargs.values())):
            fname = getattr(fn, "__name__", repr(fn))
            raise self.error(node, f"cannot call '{fname}' on tiles inside a kernel",
                             "only tl.* builtins and @enceladus.jit functions can take tiles")
        if fn in _PY_BUILTINS.values() or getattr(fn, "__enceladus_host_const__", False):
            try:
                return fn(*args, **kwargs)
            except Exception as e:  # noqa: BLE001 - report at the call site
                raise self.error(node, f"{getattr(fn, '__name__', fn)}(...) failed: {e}",
                                 "check the arguments of this call against its documentation (docs/language.md)") from None
        fname = getattr(fn, "__name__", repr(fn))
        raise self.error(node, f"'{fname}' cannot be called inside a kernel",
                         "kernels can call tl.* builtins, @enceladus.jit functions and min/max/int/float on constexprs")

    def reduce_with(self, node: ast.AST, name: str, input: Any, axis: Any, combine_fn: Any, *rest: Any,
                    **kwargs: Any) -> Any:
        """tl.reduce / tl.associative_scan: the @jit combine function is inlined on scalars."""
        if not is_jit_function(combine_fn):
            raise self.error(node, f"the combine_fn of tl.{name} must be an @enceladus.jit function",
                             "define it at module level with @enceladus.jit")

        def combine(b: Builder, lhs: list, rhs: list) -> Any:
            out = self.inline(node, combine_fn, list(lhs) + list(rhs), {})
            return out if isinstance(out, tuple) else [out]

        if name == "reduce":
            keep = rest[0] if rest else kwargs.pop("keep_dims", False)
            return self.apply(node, semantic_reduce.build_reduce, input, axis, combine, keep, "tl.reduce")
        reverse = rest[0] if rest else kwargs.pop("reverse", False)
        return self.apply(node, semantic_reduce.build_scan, input, axis, combine, reverse, "tl.associative_scan")

    def map_elementwise(self, node: ast.AST, scalar_fn: Any = None, *args: Any, pack: Any = 1) -> Any:
        """tl.map_elementwise: the @jit scalar function is inlined on scalars, in a region run per element."""
        if not is_jit_function(scalar_fn):
            raise self.error(node, "the first argument of tl.map_elementwise must be an @enceladus.jit function",
                             "define the per-element function at module level with @enceladus.jit")
        return self.apply(node, semantic_reduce.build_map_elementwise, args,
                          lambda b, xs: self.inline(node, scalar_fn, list(xs), {}), pack)

    def static_assert(self, node: ast.AST, cond: Any, msg: Any = "") -> None:
        if isinstance(cond, Value):
            raise self.error(node, "tl.static_assert needs a constexpr condition", "use a condition on constexprs")
        if not cond:
            raise self.error(node, f"static_assert failed: {msg}" if msg else "static_assert failed",
                             "change the constexpr arguments so the asserted condition holds, or fix the condition")
    # --- helpers --------------------------------------------------------------------------------------
    def apply(self, node: ast.AST, rule: Any, /, *args: Any, **kwargs: Any) -> Any:
        """``rule(builder, *args, **kwargs)`` (a typing rule) with ``node``'s location; its errors become
        CompilationErrors."""
        b = self.b
        b.loc = _loc((self._filename, self._line0 + node.lineno, node.col_offset + self._indent))  # _set_loc
        try:
            return rule(b, *args, **kwargs)
        except SemanticError as e:
            at = node
            if e.culprit is not None and isinstance(node, ast.Call):  # point at the argument at fault
                for arg in list(node.args) + [k.value for k in node.keywords]:
                    if isinstance(arg, (ast.Name, ast.Constant)) and self._peek(arg) is e.culprit:
                        at = arg
                        break
            raise self.error(at, e.message, e.fix) from None
        except TypeError as e:  # wrong arguments to a builtin
            raise self.error(node, str(e), "check the builtin's arguments in the language reference") from None
        except (ValueError, OverflowError) as e:  # e.g. a literal that fits no integer type
            raise self.error(node, str(e), "use values that fit the tile's type (integers up to 64 bits)") from None

    def _peek(self, node: ast.expr) -> Any:
        """The value of a name or constant, without side effects (for locating errors)."""
        if isinstance(node, ast.Constant):
            return node.value
        return self.scope.get(node.id, self.globals.get(node.id))

    def fold(self, v: ir.Value) -> Any:
        """The Python value of a scalar IR constant, or None."""
        op = v.op
        if op is not None and op.name == "const":
            return op.attrs["value"]
        return None

    @staticmethod
    def describe(x: Any) -> str:
        if isinstance(x, Value):
            return str(x.type)
        return repr(x)


# ast node class -> ExpressionLowering's method for it (what ast.NodeVisitor.visit would find by name on every call)
_EVAL = {getattr(ast, name[5:]): fn for name, fn in vars(ExpressionLowering).items()
         if name.startswith("eval_") and isinstance(getattr(ast, name[5:], None), type)}


def _is_enceladus_module(value: Any) -> bool:
    return type(value).__name__ == "module" and (getattr(value, "__name__", "") or "").split(".")[0] == "enceladus"


def _is_enceladus_builtin(value: Any) -> bool:
    """tl builtins imported by name (``from enceladus.language import arange``); user @jit helpers are not."""
    if getattr(value, "__enceladus_jit__", False):
        return False
    return callable(value) and (getattr(value, "__module__", "") or "").split(".")[0] == "enceladus"
