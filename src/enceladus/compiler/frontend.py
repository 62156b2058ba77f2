"""Frontend: the kernel's Python source (``ast``) -> tile IR.

Walks the syntax tree with constexprs as Python values and everything else as IR values, applies
the typing rules in ``semantic.py``, unrolls ``tl.static_range`` and inlines nested ``@jit``
functions. Every refusal is a ``CompilationError`` pointing at the offending expression.
"""

from __future__ import annotations

import ast
import inspect
import operator
from dataclasses import dataclass
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
from .aggregates import Aggregate, TensorDescriptor
from .ir import Value
from .kernel import GlobalRead
from .refusals import LIBDEVICE_REFUSED, REFUSED
from .semantic import Builder, SemanticError
from .source import KernelSource

MAX_UNROLL = 4096
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

# statement class -> its fields that hold statements (handlers and match cases hold statements too), in the
# order of its _fields: what a walk over every field keeps (expressions never contain statements)
_STATEMENT_FIELDS = {cls: fields for cls in vars(ast).values()
                     if isinstance(cls, type) and issubclass(cls, (ast.stmt, ast.excepthandler, ast.match_case))
                     and (fields := tuple(f for f in cls._fields if f in ("body", "orelse", "finalbody", "handlers",
                                                                            "cases")))}


def _statements(stmt: ast.stmt):
    """``stmt`` and every statement nested in it, in the order ``ast.walk`` reaches them (breadth first). Only
    statements (and the handlers and match cases that hold statements) are visited: expressions never contain
    statements, and leaving them out of a breadth-first walk keeps the order of the rest."""
    todo = [stmt]
    i = 0
    while i < len(todo):
        node = todo[i]
        i += 1
        yield node
        for name in _STATEMENT_FIELDS.get(node.__class__, ()):
            todo.extend(getattr(node, name))


def _assigned_names(body: list[ast.stmt]) -> list[str]:
    """Names a block of statements (re)binds, in order of first appearance."""
    names: dict[str, None] = {}

    def target(t: ast.AST) -> None:
        if isinstance(t, ast.Name):
            names[t.id] = None
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                target(e)

    for stmt in body:
        for node in _statements(stmt):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    target(t)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)):
                target(node.target)
    return list(names)


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

_UNSUPPORTED_STMT_FIX = {
    ast.Try: "kernels cannot catch exceptions; check conditions with masks instead",
    ast.With: "'with' blocks are not supported in kernels",
    ast.Global: "kernels cannot modify globals; pass values as arguments",
    ast.Nonlocal: "kernels cannot modify enclosing variables; pass values as arguments",
    ast.Import: "import modules outside the kernel",
    ast.ImportFrom: "import modules outside the kernel",
    ast.Delete: "'del' is not supported in kernels",
    ast.FunctionDef: "define helper functions at module level with @enceladus.jit",
    ast.ClassDef: "define classes outside kernels",
    ast.Raise: "kernels cannot raise; use tl.static_assert for compile-time checks",
    ast.Break: "break is not supported in kernels; put the exit condition in a while loop's condition",
    ast.Continue: "continue is not supported in kernels; guard the rest of the body with an if",
}
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


class _Return(Exception):
    def __init__(self, value: Any, node: ast.AST):
        self.value = value
        self.node = node


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


class Lowering(ast.NodeVisitor):
    """Evaluates one kernel body (and inlined callees) into a ``Builder``."""

    def __init__(self, builder: Builder, source: KernelSource, scope: dict[str, Any], kernel_name: str,
                 call_stack: tuple[Any, ...] = ()):
        self.b = builder
        self.src = source
        self.scope = scope
        self.globals = source.fn.__globals__
        self.kernel_name = kernel_name
        self.call_stack = call_stack + (source.fn,)
        self.read_globals: dict[str, Any] = {}
        # what the compilation read outside the arguments, checked again on every launch (GlobalRead)
        self.global_reads: dict[tuple[int, tuple[str, ...]], GlobalRead] = {}
        # globals bound to Enceladus modules (tl, read for every tl.* call): as eval_Name found them the first time
        self.modules: dict[str, Any] = {}
        # where the statement being lowered is: its block, its index there and what follows the block (see rest)
        self._position: tuple[list[ast.stmt], int, list[ast.stmt] | None] = ([], 0, None)
        # where the source sits in its file (KernelSource.locate's offsets), for the location of every op
        _, _, start, self._indent, self._filename = source._parsed
        self._line0 = start - 1

    # --- errors ------------------------------------------------------------------------------------
    def error(self, node: ast.AST, message: str, fix: str | None = None) -> CompilationError:
        lineno, col, line = self.src.locate(node)
        return CompilationError(message, filename=self.src.filename, lineno=lineno, col=col, source_line=line,
                                fix=fix, kernel=self.kernel_name)

    def _set_loc(self, node: ast.AST) -> None:
        # as KernelSource.locate computes them, from the offsets read once in __init__
        self.b.loc = _loc((self._filename, self._line0 + node.lineno, node.col_offset + self._indent))

    # --- statements --------------------------------------------------------------------------------
    def run_body(self, stmts: list[ast.stmt], after: list[ast.stmt] | None = None) -> None:
        """Lower ``stmts``. ``after`` is what follows them up to the end of the function (None inside a loop):
        a runtime ``if`` that contains a ``return`` lowers it into its branches (see ``returning_if``)."""
        for i, stmt in enumerate(stmts):
            if isinstance(stmt, ast.Return) and i + 1 < len(stmts):
                raise self.error(stmts[i + 1], "code after 'return' is unreachable", "remove it")
            self._position = (stmts, i, after)  # what follows it is made only when asked for (rest)
            try:
                method = _VISIT.get(stmt.__class__)  # visit_<statement class name> (see below the class)
                if method is None:
                    self.generic_visit(stmt)
                else:
                    method(self, stmt)
            except RecursionError:
                raise self.error(stmt, "this statement nests too deeply to compile (Python's recursion limit)",
                                 "split the expression into several statements with intermediate variables") from None

    def rest(self) -> list[ast.stmt] | None:
        """What follows the statement being lowered up to the end of the function (None inside a loop)."""
        stmts, i, after = self._position
        if after is None:
            return None
        tail = list(stmts[i + 1:])
        ends = bool(tail) and isinstance(tail[-1], ast.Return)  # the block returns: nothing after it runs
        return tail if ends else tail + list(after)

    def generic_visit(self, node: ast.AST) -> Any:
        fix = _UNSUPPORTED_STMT_FIX.get(type(node)) or _UNSUPPORTED_EXPR_FIX.get(type(node))
        raise self.error(node, f"{type(node).__name__} is not supported in kernels",
                         fix or "rewrite it with the tl.* builtins")

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstring
        self.eval(node.value)

    def visit_Assert(self, node: ast.Assert) -> None:
        """``assert cond, msg`` is ``tl.device_assert(cond, msg)`` checked only in debug mode, as in Triton."""
        cond = self.eval(node.test)
        msg = "" if node.msg is None else self.eval(node.msg)
        if isinstance(msg, Value) or not isinstance(msg, (str, int, float)):
            raise self.error(node.msg, "the message of an assert must be a constant string",
                             'write it as a string literal, e.g. assert x >= 0, "x must be non-negative"')
        self.apply(node, semantic.RULES["device_assert"], cond, str(msg))  # debug mode only

    def visit_Pass(self, node: ast.Pass) -> None:
        return None

    def visit_Assign(self, node: ast.Assign) -> None:
        value = self.eval(node.value)
        for target in node.targets:
            self.assign(target, value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is None:
            return
        value = self.eval(node.value)
        ann = self.eval(node.annotation)
        if isinstance(ann, dtype) and (isinstance(value, Value) or semantic.is_python_scalar(value)):
            value = self.apply(node, Builder.to_value, value, ann)
        self.assign(node.target, value)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "only plain names can be updated with an augmented assignment",
                             "assign to a plain name (x = x + 1), or write through a pointer with tl.store")
        current = self.eval(node.target)
        value = self.eval(node.value)
        self.assign(node.target, self.binop(node, _BINOPS[type(node.op)], current, value))

    def assign(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            self.scope[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            if not isinstance(value, tuple) or len(value) != len(target.elts):
                raise self.error(target, f"cannot unpack {self.describe(value)} into {len(target.elts)} names",
                                 "unpack a tuple with as many values as names, or assign to one name")
            for t, v in zip(target.elts, value):
                self.assign(t, v)
        else:
            raise self.error(target, "only names and tuples of names can be assigned in kernels",
                             "tiles are immutable: build a new tile (e.g. with tl.where) instead of assigning into one")

    def visit_Return(self, node: ast.Return) -> None:
        raise _Return(None if node.value is None else self.eval(node.value), node)

    def visit_If(self, node: ast.If) -> None:
        rest = self.rest()
        cond = self.condition(node.test)
        if isinstance(cond, Value):
            if cond.type.is_tile:
                raise self.error(node.test, "the condition of an 'if' must be a scalar, not a tile",
                                 "use tl.where(cond, x, y) to select between tiles elementwise")
            folded = self.fold(cond)
            if folded is None:
                if any(isinstance(n, ast.Return) for b in (node.body, node.orelse) for s in b for n in _statements(s)):
                    self.returning_if(node, cond, rest)
                else:
                    self.runtime_if(node, cond, node.body, node.orelse)
                return
            cond = folded
        self.run_body(node.body if cond else node.orelse, rest)

    def returning_if(self, node: ast.If, cond: ir.Value, rest: list[ast.stmt] | None) -> None:
        """A runtime ``if`` with a ``return`` somewhere in its branches (as Triton accepts, outside loops): each
        branch is lowered followed by the rest of the function, so the function ends inside the ``if``; the
        values returned on the two paths become its result."""
        if rest is None:
            raise self.error(node, "'return' inside a loop is not supported", "return after the loop")
        if not cond.type.element.is_bool():
            cond = self.apply(node.test, semantic.compare, "!=", cond, 0)
        before = dict(self.scope)
        fell_off = object()  # a path that reaches the end of the function without a return
        outcomes = []
        for body in (node.body, node.orelse):
            block = ir.Block()
            self.b.fn.push_block(block)
            self.scope = dict(before)
            value: Any = fell_off
            try:
                self.run_body(body, rest)
                self.run_body(rest, [])
            except _Return as r:
                value = r.value
            finally:
                self.b.fn.pop_block()
            outcomes.append((block, value))
        self.scope = before
        (then_block, a), (else_block, b) = outcomes
        if (a is fell_off or a is None) and (b is fell_off or b is None):
            yields: tuple[list, list] = ([], [])
            result = None
        elif a is fell_off or b is fell_off or a is None or b is None:
            raise self.error(node, "this function returns a value on one path and nothing on another",
                             "return a value on every path (after the 'if' too)")
        elif isinstance(a, tuple) or isinstance(b, tuple):
            raise self.error(node, "returning a tuple from inside a runtime 'if' is not supported",
                             "assign the tuple's values in both branches and return it after the 'if'")
        else:
            if not isinstance(a, Value) and not isinstance(b, Value) and a == b and type(a) is type(b):
                raise _Return(a, node)  # the same constexpr on both paths
            a, b = self.unify(node, "the returned value", a, b, then_block, else_block)
            yields = ([a], [b])
            result = True
        for block, ys in zip((then_block, else_block), yields):
            block.ops.append(ir.Op("yield", ys, loc=self.b.loc))
        self._set_loc(node)
        op = self.b.fn.append_op("if", [cond], [v.type for v in yields[0]], loc=self.b.loc)
        op.regions = [then_block, else_block]
        raise _Return(op.results[0] if result else None, node)

    def runtime_if(self, node: ast.If, cond: ir.Value, then_body: list[ast.stmt], else_body: list[ast.stmt]) -> None:
        """An ``if`` on a runtime scalar: both branches become regions; names they assign become results."""
        if not cond.type.element.is_bool():
            cond = self.apply(node.test, semantic.compare, "!=", cond, 0)
        before = dict(self.scope)
        branches = []
        for body in (then_body, else_body):
            block = ir.Block()
            self.b.fn.push_block(block)
            self.scope = dict(before)
            try:
                self.run_body(body)
            finally:
                self.b.fn.pop_block()
            branches.append((block, self.scope))
        self.scope = before
        (then_block, then_scope), (else_block, else_scope) = branches
        names = [n for n in dict.fromkeys(list(then_scope) + list(else_scope))
                 if n in then_scope and n in else_scope
                 and (then_scope[n] is not before.get(n) or else_scope[n] is not before.get(n))]
        results, yields_then, yields_else = [], [], []
        for n in names:
            a, b = then_scope[n], else_scope[n]
            if is_aggregate(a) and type(a) is type(b):  # @aggregate values: their fields, rebuilt after the if
                pairs, rebuild = self.branch_parts(node, n, a, b, then_block, else_block)
                results.append((n, len(pairs), rebuild))
                yields_then.extend(x for x, _ in pairs)
                yields_else.extend(y for _, y in pairs)
                continue
            if not isinstance(a, Value) and not isinstance(b, Value):
                if a == b and type(a) is type(b):
                    self.scope[n] = a
                    continue
                if not (semantic.is_python_scalar(a) and semantic.is_python_scalar(b)):
                    raise self.error(node, f"'{n}' is assigned different constexpr values in the branches of a "
                                     "runtime 'if'", "make the values runtime scalars or tiles")
            a, b = self.unify(node, n, a, b, then_block, else_block)
            results.append((n, 1, None))
            yields_then.append(a)
            yields_else.append(b)
        for block, ys in ((then_block, yields_then), (else_block, yields_else)):
            block.ops.append(ir.Op("yield", ys, loc=self.b.loc))
        self._set_loc(node)
        op = self.b.fn.append_op("if", [cond], [v.type for v in yields_then], loc=self.b.loc)
        op.regions = [then_block, else_block]
        i = 0
        for n, count, rebuild in results:
            chunk = list(op.results[i:i + count])
            self.scope[n] = rebuild(chunk) if rebuild else chunk[0]
            i += count

    def branch_parts(self, node: ast.AST, name: str, a: Any, b: Any, block_a: ir.Block,
                     block_b: ir.Block) -> tuple[list[tuple[ir.Value, ir.Value]], Any]:
        """The IR values two branches yield for a structured value (an @aggregate), made alike part by part."""
        flat = []
        for v, block in ((a, block_a), (b, block_b)):
            self.b.fn.push_block(block)
            try:
                flat.append(self.flatten_value(node, name, v))
            finally:
                self.b.fn.pop_block()
        (parts_a, rebuild), (parts_b, _) = flat
        if len(parts_a) != len(parts_b):
            raise self.error(node, f"'{name}' has a different structure in the branches of a runtime 'if'",
                             "give it the same fields (tuples of the same length) in both branches")
        return [self.unify(node, name, x, y, block_a, block_b) for x, y in zip(parts_a, parts_b)], rebuild

    def unify(self, node: ast.AST, name: str, a: Any, b: Any, block_a: ir.Block, block_b: ir.Block):
        """Make the values a name has at the end of two branches the same type (scalars follow tiles' dtypes)."""
        def materialize(x: Any, like: Any, block: ir.Block) -> ir.Value:
            if isinstance(x, Value):
                return x
            # a Python scalar becomes a value of its own type (as in Triton), then must match the other branch
            ty = semantic.element_type(x)
            self.b.fn.push_block(block)
            try:
                v = self.apply(node, Builder.to_value, x, ty)
                if isinstance(like, Value) and like.type.is_tile:
                    v = self.b.splat(v, like.type.shape)
            finally:
                self.b.fn.pop_block()
            return v

        if not isinstance(a, Value) and not isinstance(b, Value):
            a, b = materialize(a, b, block_a), materialize(b, a, block_b)
        a = materialize(a, b, block_a)
        b = materialize(b, a, block_b)
        if a.type != b.type:
            raise self.error(node, f"'{name}' is {a.type} in one branch and {b.type} in the other",
                             "give it the same type and shape in both branches (e.g. cast with .to(...))")
        return a, b

    def visit_For(self, node: ast.For) -> None:
        it = self.eval(node.iter)
        if not isinstance(it, (static_range, tl_range)):
            raise self.error(node.iter, "kernels can only loop over range(...), tl.range(...) or tl.static_range(...)",
                             "loop with `for i in range(lo, hi, step)` (or tl.range / tl.static_range)")
        if node.orelse:
            raise self.error(node, "for/else is not supported in kernels",
                             "move the else block after the loop, guarded by a flag set in the loop")
        if isinstance(it, static_range):
            if any(isinstance(a, Value) for a in it.args):
                raise self.error(node.iter, "tl.static_range needs constexpr bounds",
                                 "use range(...) for loops with runtime bounds")
            values = list(iter(it))
            if len(values) > MAX_UNROLL:
                raise self.error(node.iter, f"this loop has {len(values)} iterations, more than {MAX_UNROLL} to "
                                 "unroll", "use range(...) instead of tl.static_range(...)")
            for v in values:
                self.assign(node.target, v)
                self.run_body(node.body)
            return
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "the loop variable must be a single name",
                             "loop over `for i in range(...)` and index or unpack inside the body")
        a1, a2, a3 = it.args
        lb, ub, step = (0, a1, 1) if a2 is None else (a1, a2, 1 if a3 is None else a3)
        for x in (lb, ub, step):
            if not isinstance(x, Value) and (isinstance(x, bool) or not isinstance(x, int)):
                raise self.error(node.iter, f"loop bounds must be integers, got {x!r}",
                                 "pass integers (or integer scalars) to range(); cast a float with int(...) outside the kernel")
            if isinstance(x, Value) and (x.type.is_tile or not x.type.element.is_int()):
                raise self.error(node.iter, f"loop bounds must be integer scalars, got {x.type}",
                                 "use integer scalar bounds; reduce a tile to a scalar first (e.g. tl.max(t, 0)) or cast with .to(tl.int32)")
        if not isinstance(step, Value) and step == 0:
            raise self.error(node.iter, "the step of range() must not be zero", "use a positive or negative step")
        iv_ty = ir.Type(semantic.D.int64) if any(
            (isinstance(x, Value) and x.type.element.primitive_bitwidth == 64) or
            (not isinstance(x, Value) and not -(2**31) <= x < 2**31) for x in (lb, ub, step)) else ir.Type(semantic.D.int32)
        self._set_loc(node)
        bounds = [self.apply(node.iter, Builder.to_value, x, iv_ty.element) for x in (lb, ub, step)]
        self.runtime_loop(node, "for", node.body, bounds, iv_name=node.target.id, iv_type=iv_ty,
                          step_const=None if isinstance(step, Value) else step)

    def visit_While(self, node: ast.While) -> None:
        if node.orelse:
            raise self.error(node, "while/else is not supported in kernels",
                             "move the else block after the loop, guarded by a flag set in the loop")
        self.runtime_loop(node, "while", node.body, [], cond_node=node.test)

    def runtime_loop(self, node: ast.AST, kind: str, body: list[ast.stmt], bounds: list[ir.Value],
                     iv_name: str | None = None, iv_type: ir.Type | None = None, step_const: int | None = None,
                     cond_node: ast.expr | None = None) -> None:
        """A ``for`` over a runtime range or a ``while``: names the body reassigns are carried across iterations."""
        assigned = _assigned_names(body)
        names = [n for n in assigned if n in self.scope and n != iv_name]
        # aggregates (block pointers, tuples) are carried by their parts: one loop value per part
        carried, inits, structure = [], [], {}
        for n in names:
            parts, rebuild = self.flatten_value(node, n, self.scope[n])
            structure[n] = (len(inits), len(parts), rebuild)
            for i in range(len(parts)):
                carried.append(f"{n}[{i}]" if rebuild else n)
            inits.extend(parts)
        before = dict(self.scope)
        outer_loc = self.b.loc
        regions = []
        cond_block = None
        if kind == "while":
            cond_block = ir.Block([self.b.fn.new_value(v.type) for v in inits])
            self.scope = dict(before)
            self.bind_parts(structure, cond_block.args)
            self.b.fn.push_block(cond_block)
            try:
                cond = self.eval(cond_node)
                if isinstance(cond, tl_condition):
                    cond = cond.condition
                if not isinstance(cond, Value):
                    if cond:
                        raise self.error(cond_node, "this while loop never ends (its condition is constant true)",
                                         "loop with a runtime condition; break is not supported in kernels")
                    self.b.fn.pop_block()
                    self.scope = before
                    return
                if cond.type.is_tile:
                    raise self.error(cond_node, "the condition of a while loop must be a scalar, not a tile",
                                     "reduce the tile first, e.g. tl.max(x, 0) > 0")
                if not cond.type.element.is_bool():
                    cond = self.apply(cond_node, semantic.compare, "!=", cond, 0)
                cond_block.ops.append(ir.Op("yield", [cond], loc=self.b.loc))
            finally:
                if self.b.fn.block is cond_block:
                    self.b.fn.pop_block()
            regions.append(cond_block)
        block_args = ([self.b.fn.new_value(iv_type)] if kind == "for" else []) + \
            [self.b.fn.new_value(v.type) for v in inits]
        block = ir.Block(block_args)
        self.scope = dict(before)
        if kind == "for":
            self.scope[iv_name] = block_args[0]
        self.bind_parts(structure, block_args[1:] if kind == "for" else block_args)
        self.b.fn.push_block(block)
        try:
            self.run_body(body)
        except _Return as r:
            raise self.error(r.node, "'return' inside a loop is not supported", "return after the loop") from None
        finally:
            self.b.fn.pop_block()
        finals = []
        for n in names:
            start, count, _ = structure[n]
            self.b.fn.push_block(block)
            try:
                parts, _ = self.flatten_value(node, n, self.scope.get(n), like=inits[start:start + count])
            finally:
                self.b.fn.pop_block()
            if len(parts) != count:
                raise self.error(node, f"'{n}' changes structure inside the loop",
                                 "keep tuples and block pointers the same shape in every iteration")
            finals.extend(parts)
        yields = []
        for n, init, v in zip(carried, inits, finals):
            if v.type != init.type:
                if v.type.shape == init.type.shape or not init.type.is_tile and v.type.is_tile:
                    raise self.error(node, f"loop-carried '{n}' starts as {init.type} but becomes {v.type} in the loop",
                                     f"initialize it with the loop's type, e.g. {n} = tl.zeros({list(v.type.shape)}, "
                                     f"{v.type.element!r})" if v.type.is_tile else
                                     f"initialize it with the loop's type, e.g. .to({v.type.element!r})")
                raise self.error(node, f"loop-carried '{n}' starts as {init.type} but becomes {v.type} in the loop",
                                 "keep its type and shape the same in every iteration")
            yields.append(v)
        block.ops.append(ir.Op("yield", yields, loc=self.b.loc))
        regions.append(block)
        self.scope = before
        self.b.loc = outer_loc
        self._set_loc(node)
        attrs = {"step_sign": (1 if step_const > 0 else -1)} if step_const is not None else {}
        op = self.b.fn.append_op(kind, bounds + inits, [v.type for v in inits], attrs, loc=self.b.loc)
        op.regions = regions
        self.bind_parts(structure, op.results)

    def flatten_value(self, node: ast.AST, name: str, v: Any, like: list | None = None) -> tuple[list, Any]:
        """The IR values a loop carries for ``v`` and how to rebuild it (None: ``v`` is a single value).

        ``like`` gives the types the parts must take (Python scalars become constants of those types)."""
        def part(x: Any, i: int) -> ir.Value:
            if isinstance(x, Value):
                return x
            if semantic.is_python_scalar(x):
                ty = like[i].type.element if like is not None and i < len(like) else semantic.D.literal_dtype(x)
                v = self.apply(node, Builder.to_value, x, ty)
                if like is not None and i < len(like) and like[i].type.is_tile:
                    v = self.b.splat(v, like[i].type.shape)
                return v
            raise self.error(node, f"'{name}' ({self.describe(x)}) cannot change inside a loop or branch",
                             "only scalars, tiles, tuples of them and block pointers can be updated there")

        if isinstance(v, Aggregate):
            raw = v.flatten()
            return [part(x, i) for i, x in enumerate(raw)], v.unflatten
        if is_aggregate(v):  # carried by its fields, rebuilt with aggregate_replace
            names = type(v).__aggregate_fields__
            parts, rebuild_fields = self.flatten_value(node, name, tuple(getattr(v, n) for n in names), like)
            return parts, lambda values: aggregate_replace(v, **dict(zip(names, rebuild_fields(values))))
        if isinstance(v, tuple):
            parts, rebuilds, sizes = [], [], []
            for item in v:
                sub, rebuild = self.flatten_value(node, name, item, like[len(parts):] if like else None)
                parts.extend(sub)
                rebuilds.append(rebuild)
                sizes.append(len(sub))

            def rebuild_tuple(values: list) -> tuple:
                out, i = [], 0
                for rb, size in zip(rebuilds, sizes):
                    chunk = list(values[i:i + size])
                    out.append(rb(chunk) if rb else chunk[0])
                    i += size
                return tuple(out)

            return parts, rebuild_tuple
        return [part(v, 0)], None

    def bind_parts(self, structure: dict, values: list) -> None:
        for n, (start, count, rebuild) in structure.items():
            chunk = list(values[start:start + count])
            self.scope[n] = rebuild(chunk) if rebuild else chunk[0]

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
        base = self.eval(node.value)
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
        value_node = node.value
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

    def inline(self, node: ast.AST, fn: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if fn.fn in self.call_stack:
            raise self.error(node, f"recursive call to '{fn.__name__}'", "kernels cannot recurse; write a loop")
        sig = inspect.signature(fn.fn)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise self.error(node, f"bad arguments for '{fn.__name__}': {e}",
                             f"pass every argument that '{fn.__name__}' takes") from None
        bound.apply_defaults()
        scope = {}
        for name, value in bound.arguments.items():
            scope[name] = value.value if isinstance(value, constexpr) else value
        callee = Lowering(self.b, fn.source, scope, self.kernel_name, self.call_stack)
        for attr in ("__defaults__", "__kwdefaults__"):  # defaults are compiled in: changing them makes it stale
            if getattr(fn.fn, attr, None):
                self._record_read(node, (attr,), getattr(fn.fn, attr), owner=fn.fn)
        try:
            callee.run_body(callee.src.tree.body, [])
        except _Return as r:
            self._merge(callee)
            return r.value
        self._merge(callee)
        return None

    def _merge(self, callee: Lowering) -> None:
        self.read_globals.update(callee.read_globals)
        for k, v in callee.global_reads.items():
            self.global_reads.setdefault(k, v)

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


# ast node class -> Lowering's method for it (what ast.NodeVisitor.visit finds by name on every call)
_EVAL = {getattr(ast, name[5:]): fn for name, fn in vars(Lowering).items()
         if name.startswith("eval_") and isinstance(getattr(ast, name[5:], None), type)}
_VISIT = {getattr(ast, name[6:]): fn for name, fn in vars(Lowering).items()
          if name.startswith("visit_") and isinstance(getattr(ast, name[6:], None), type)}


def lower_kernel(source: KernelSource, name: str,
                 params: list[tuple[str, Any]], debug: bool = False) -> tuple[ir.Function, dict[str, Any], tuple[GlobalRead, ...]]:
    """Build the tile IR of a kernel.

    ``params`` lists, in order, each parameter's name and either an ``ir.Type`` (a runtime argument)
    or a Python value (a constexpr or a specialized constant).
    Returns the function and the globals the kernel read (for the cache key).
    """
    fn = ir.Function(name)
    builder = Builder(fn, debug)
    scope: dict[str, Any] = {}
    for pname, spec in params:
        if isinstance(spec, StructParam):
            scope[pname] = spec.build(fn, builder)
        elif isinstance(spec, ir.Type):
            scope[pname] = fn.add_arg(pname, spec)
        elif isinstance(spec, _Const):
            scope[pname] = builder.const(spec.value, spec.dtype)
        else:
            scope[pname] = spec
    lowering = Lowering(builder, source, scope, name)
    try:
        lowering.run_body(source.tree.body, [])
    except _Return as r:
        if r.value is not None:
            raise lowering.error(r.node, "a kernel cannot return a value",
                                 "store results through a pointer argument with tl.store") from None
    ir.verify(fn)
    return fn, lowering.read_globals, tuple(lowering.global_reads.values())


def _is_enceladus_module(value: Any) -> bool:
    return type(value).__name__ == "module" and (getattr(value, "__name__", "") or "").split(".")[0] == "enceladus"


def _is_enceladus_builtin(value: Any) -> bool:
    """tl builtins imported by name (``from enceladus.language import arange``); user @jit helpers are not."""
    if getattr(value, "__enceladus_jit__", False):
        return False
    return callable(value) and (getattr(value, "__module__", "") or "").split(".")[0] == "enceladus"


@dataclass
class StructParam:
    """A tuple or tensor-descriptor argument: its leaves become kernel arguments, the kernel sees the whole."""

    name: str
    structure: Any
    leaves: dict[str, Any]  # leaf name -> ir.Type, _Const or None

    def build(self, fn: ir.Function, builder: Builder) -> Any:
        from ..language.structs import rebuild

        def leaf(name: str) -> Any:
            spec = self.leaves[name]
            if isinstance(spec, ir.Type):
                return fn.add_arg(name, spec)
            if isinstance(spec, _Const):
                return builder.const(spec.value, spec.dtype)
            return spec

        def descriptor(base: Any, shape: tuple, strides: tuple, block: tuple) -> Any:
            if not isinstance(base, Value) or not base.type.is_ptr:
                raise CompilationError(f"argument '{self.name}': a TensorDescriptor needs an array as its base",
                                       fix="build it as TensorDescriptor(array, shape, strides, block_shape) with a NumPy array or enceladus.Tensor")
            return TensorDescriptor(base, shape, strides, block)

        return rebuild(self.name, self.structure, leaf, descriptor)


@dataclass(frozen=True)
class _Const:
    """A runtime argument specialized to a constant (ints equal to 1): still a typed value, not a literal."""

    value: Any
    dtype: dtype


def specialized_constant(value: Any, ty: dtype) -> _Const:
    return _Const(value, ty)

