"""Frontend: the kernel's Python source (``ast``) -> tile IR.

Walks the syntax tree with constexprs as Python values and everything else as IR values, applies
the typing rules in ``semantic.py``, unrolls ``tl.static_range`` and inlines nested ``@jit``
functions. Every refusal is a ``CompilationError`` pointing at the offending expression. This module holds
the statements (blocks, assignments, ``if``, loops, inlining) and ``lower_kernel``; the expressions are
``frontend_expressions.py``'s ``ExpressionLowering``, which ``Lowering`` extends.
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass
from typing import Any

from ..errors import CompilationError
from ..language.builtins import range as tl_range
from ..language.builtins import static_range
from ..language.core import aggregate_replace, constexpr, is_aggregate
from ..language.core import condition as tl_condition
from ..language.dtypes import dtype
from . import ir, semantic
from .aggregates import Aggregate, TensorDescriptor
from .frontend_expressions import _BINOPS, _UNSUPPORTED_EXPR_FIX, ExpressionLowering
from .ir import Value
from .kernel import GlobalRead
from .semantic import Builder
from .source import KernelSource

MAX_UNROLL = 4096


# statement class -> its fields that hold statements (handlers and match cases hold statements too), in the
# order of its _fields: what a walk over every field keeps (expressions never contain statements)
_HOLDING_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")
_STATEMENT_FIELDS = {cls: tuple(f for f in cls._fields if f in _HOLDING_FIELDS) for cls in vars(ast).values()
                     if isinstance(cls, type) and issubclass(cls, (ast.stmt, ast.excepthandler, ast.match_case))}


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


class _Return(Exception):
    def __init__(self, value: Any, node: ast.AST):
        self.value = value
        self.node = node


class Lowering(ExpressionLowering, ast.NodeVisitor):
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


# ast node class -> Lowering's method for it (what ast.NodeVisitor.visit finds by name on every call)
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

