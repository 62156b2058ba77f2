"""Frontend: the kernel's Python source (``ast``) -> tile IR.

Walks the syntax tree with constexprs as Python values and everything else as IR values, applies
the typing rules in ``semantic.py``, unrolls ``tl.static_range`` and inlines nested ``@jit``
functions. Every refusal is a ``CompilationError`` pointing at the offending expression.
"""

from __future__ import annotations

import ast
import inspect
import operator
import textwrap
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ..errors import CompilationError
from ..language.builtins import range as tl_range
from ..language.builtins import static_range
from ..language.core import builtin_name, constexpr
from ..language.dtypes import dtype, pointer_type
from . import ir, semantic
from .semantic import Builder, SemanticError, is_value

MAX_UNROLL = 4096


@dataclass
class KernelSource:
    """A Python function's parsed source, with the offsets that map AST positions back to the file."""

    fn: Any

    @cached_property
    def _parsed(self) -> tuple[ast.FunctionDef, list[str], int, int, str]:
        try:
            lines, start = inspect.getsourcelines(self.fn)
        except (OSError, TypeError) as e:
            raise CompilationError(
                f"cannot read the source of {self.fn.__qualname__}: {e}",
                fix="define kernels in a .py file (not in an interactive prompt or exec)",
            ) from None
        text = "".join(lines)
        dedented = textwrap.dedent(text)
        indent = len(lines[0]) - len(lines[0].lstrip()) if dedented != text else 0
        tree = ast.parse(dedented)
        fdef = next(n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
        filename = inspect.getsourcefile(self.fn) or "<unknown>"
        return fdef, lines, start, indent, filename

    @property
    def tree(self) -> ast.FunctionDef:
        return self._parsed[0]

    @property
    def filename(self) -> str:
        return self._parsed[4]

    @cached_property
    def text(self) -> str:
        return "".join(self._parsed[1])

    def locate(self, node: ast.AST) -> tuple[int, int, str]:
        """(line in file, 0-based column in file, the source line) of ``node``."""
        _, lines, start, indent, _ = self._parsed
        lineno = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0) + indent
        idx = lineno - 1
        return start + idx, col, lines[idx] if 0 <= idx < len(lines) else ""


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
                "getattr": getattr, "range": tl_range, "abs": abs, "bool": bool}

_UNSUPPORTED_STMT_FIX = {
    ast.Try: "kernels cannot catch exceptions; check conditions with masks instead",
    ast.With: "'with' blocks are not supported in kernels",
    ast.While: "while loops are not supported yet; use a for loop over tl.static_range",
    ast.Global: "kernels cannot modify globals; pass values as arguments",
    ast.Nonlocal: "kernels cannot modify enclosing variables; pass values as arguments",
    ast.Import: "import modules outside the kernel",
    ast.ImportFrom: "import modules outside the kernel",
    ast.Delete: "'del' is not supported in kernels",
    ast.FunctionDef: "define helper functions at module level with @enceladus.jit",
    ast.ClassDef: "define classes outside kernels",
    ast.Raise: "kernels cannot raise; use tl.static_assert for compile-time checks",
    ast.Assert: "use tl.static_assert(cond, msg) for compile-time checks",
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


class _TensorMethod:
    """A bound method of a tile value (``x.to``)."""

    def __init__(self, name: str, value: ir.Value):
        self.name = name
        self.value = value


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

    # --- errors ------------------------------------------------------------------------------------
    def error(self, node: ast.AST, message: str, fix: str | None = None) -> CompilationError:
        lineno, col, line = self.src.locate(node)
        return CompilationError(message, filename=self.src.filename, lineno=lineno, col=col, source_line=line,
                                fix=fix, kernel=self.kernel_name)

    def _set_loc(self, node: ast.AST) -> None:
        lineno, col, _ = self.src.locate(node)
        self.b.loc = ir.Loc(self.src.filename, lineno, col)

    # --- statements --------------------------------------------------------------------------------
    def run_body(self, stmts: list[ast.stmt]) -> None:
        for i, stmt in enumerate(stmts):
            if isinstance(stmt, ast.Return):
                rest = list(stmts[i + 1:])
                if rest:
                    raise self.error(rest[0], "code after 'return' is unreachable", "remove it")
            self.visit(stmt)

    def generic_visit(self, node: ast.AST) -> Any:
        fix = _UNSUPPORTED_STMT_FIX.get(type(node)) or _UNSUPPORTED_EXPR_FIX.get(type(node))
        raise self.error(node, f"{type(node).__name__} is not supported in kernels",
                         fix or "rewrite it with the tl.* builtins")

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstring
        self.eval(node.value)

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
        if isinstance(ann, dtype) and (is_value(value) or semantic.is_python_scalar(value)):
            value = self.apply(node, lambda: self.b.to_value(value, ann))
        self.assign(node.target, value)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "only plain names can be updated with an augmented assignment")
        current = self.eval(node.target)
        value = self.eval(node.value)
        self.assign(node.target, self.binop(node, _BINOPS[type(node.op)], current, value))

    def assign(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            self.scope[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            if not isinstance(value, tuple) or len(value) != len(target.elts):
                raise self.error(target, f"cannot unpack {self.describe(value)} into {len(target.elts)} names")
            for t, v in zip(target.elts, value):
                self.assign(t, v)
        else:
            raise self.error(target, "only names and tuples of names can be assigned in kernels",
                             "tiles are immutable: build a new tile (e.g. with tl.where) instead of assigning into one")

    def visit_Return(self, node: ast.Return) -> None:
        raise _Return(None if node.value is None else self.eval(node.value), node)

    def visit_If(self, node: ast.If) -> None:
        cond = self.eval(node.test)
        if is_value(cond):
            if cond.type.is_tile:
                raise self.error(node.test, "the condition of an 'if' must be a scalar, not a tile",
                                 "use tl.where(cond, x, y) to select between tiles elementwise")
            folded = self.fold(cond)
            if folded is None:
                raise self.error(node.test, "'if' on a runtime value is not supported yet",
                                 "make the condition a tl.constexpr, or use tl.where(cond, x, y)")
            cond = folded
        self.run_body(node.body if cond else node.orelse)

    def visit_For(self, node: ast.For) -> None:
        it = self.eval(node.iter)
        if not isinstance(it, (static_range, tl_range)):
            raise self.error(node.iter, "kernels can only loop over range(...), tl.range(...) or tl.static_range(...)")
        if node.orelse:
            raise self.error(node, "for/else is not supported in kernels")
        args = it.args
        if any(is_value(a) for a in args):
            raise self.error(node.iter, "loops with runtime bounds are not supported yet",
                             "make the bounds tl.constexpr parameters (the loop is then unrolled)")
        values = list(iter(it))
        if len(values) > MAX_UNROLL:
            raise self.error(node.iter, f"this loop has {len(values)} iterations, more than {MAX_UNROLL} to unroll",
                             "use larger blocks so the loop is shorter")
        for v in values:
            self.assign(node.target, v)
            self.run_body(node.body)

    # --- expressions --------------------------------------------------------------------------------
    def eval(self, node: ast.expr) -> Any:
        method = getattr(self, "eval_" + type(node).__name__, None)
        if method is None:
            return self.generic_visit(node)
        return method(node)

    def eval_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def eval_Name(self, node: ast.Name) -> Any:
        name = node.id
        if name in self.scope:
            return self.scope[name]
        if name in self.globals:
            value = self.globals[name]
            if isinstance(value, constexpr):
                value = value.value
            if isinstance(value, (list, dict, set, bytearray)) or (hasattr(value, "__array__") and
                                                                 not isinstance(value, (dtype,))):
                raise self.error(node, f"global '{name}' is a mutable {type(value).__name__}, which kernels cannot use",
                                 "pass it as a kernel argument, or make it a tl.constexpr constant")
            self.read_globals[name] = value
            return value
        if name in _PY_BUILTINS:
            return _PY_BUILTINS[name]
        if name == "print":
            raise self.error(node, "print() is not supported in compiled kernels yet",
                             "use tl.static_print for compile-time values, or ENCELADUS_INTERPRET=1 to print tiles")
        raise self.error(node, f"name '{name}' is not defined")

    def eval_Attribute(self, node: ast.Attribute) -> Any:
        base = self.eval(node.value)
        attr = node.attr
        if is_value(base):
            if attr == "dtype":
                return base.type.element
            if attr == "shape":
                return base.type.shape
            if attr in ("to",):
                return _TensorMethod(attr, base)
            raise self.error(node, f"tiles have no attribute '{attr}' here",
                             "supported: x.dtype, x.shape, x.to(dtype)")
        if isinstance(base, pointer_type) and attr == "element_ty":
            return base.element_ty
        try:
            value = getattr(base, attr)
        except AttributeError:
            what = getattr(base, "__name__", type(base).__name__)
            raise self.error(node, f"'{what}' has no attribute '{attr}'",
                             "see the language reference for the supported tl.* builtins") from None
        return value.value if isinstance(value, constexpr) else value

    def eval_Tuple(self, node: ast.Tuple) -> tuple:
        return tuple(self.eval(e) for e in node.elts)

    def eval_List(self, node: ast.List) -> tuple:
        # Triton accepts list literals for shapes: allow them when every element is a constexpr.
        values = tuple(self.eval(e) for e in node.elts)
        if any(is_value(v) for v in values):
            raise self.error(node, "lists are not supported in kernels", _UNSUPPORTED_EXPR_FIX[ast.List])
        return values

    def eval_BinOp(self, node: ast.BinOp) -> Any:
        op = _BINOPS[type(node.op)]
        return self.binop(node, op, self.eval(node.left), self.eval(node.right))

    def binop(self, node: ast.AST, op: str, lhs: Any, rhs: Any) -> Any:
        if not is_value(lhs) and not is_value(rhs):
            try:
                return _PY_BINOPS[op](lhs, rhs) if op in _PY_BINOPS else self._bad_op(node, op)
            except (TypeError, ZeroDivisionError, ValueError) as e:
                raise self.error(node, f"cannot evaluate constexpr expression: {e}") from None
        if op == "**":
            raise self.error(node, "'**' is not defined on tiles",
                             "multiply explicitly (x * x) or use tl.exp2(y * tl.log2(x))")
        if op == "@":
            raise self.error(node, "'@' is not defined on tiles", "use tl.dot(a, b)")
        return self.apply(node, lambda: semantic.binary(self.b, op, lhs, rhs))

    def _bad_op(self, node: ast.AST, op: str) -> Any:
        raise self.error(node, f"operator {op} is not supported")

    def eval_UnaryOp(self, node: ast.UnaryOp) -> Any:
        op = _UNARYOPS[type(node.op)]
        x = self.eval(node.operand)
        if not is_value(x):
            return {"-": operator.neg, "+": operator.pos, "~": operator.invert, "not": operator.not_}[op](x)
        return self.apply(node, lambda: semantic.unary(self.b, op, x))

    def eval_Compare(self, node: ast.Compare) -> Any:
        if len(node.ops) != 1:
            raise self.error(node, "chained comparisons are not supported in kernels",
                             "split them: (a < b) & (b < c)")
        lhs, rhs = self.eval(node.left), self.eval(node.comparators[0])
        op = node.ops[0]
        if isinstance(op, (ast.Is, ast.IsNot)):
            if is_value(lhs) or is_value(rhs):
                return isinstance(op, ast.IsNot)  # a value is never None
            return (lhs is rhs) if isinstance(op, ast.Is) else (lhs is not rhs)
        if isinstance(op, (ast.In, ast.NotIn)):
            if is_value(lhs) or is_value(rhs):
                raise self.error(node, "'in' is not defined on tiles")
            return (lhs in rhs) if isinstance(op, ast.In) else (lhs not in rhs)
        sym = _CMPOPS[type(op)]
        if not is_value(lhs) and not is_value(rhs):
            return _PY_CMPOPS[sym](lhs, rhs)
        return self.apply(node, lambda: semantic.compare(self.b, sym, lhs, rhs))

    def eval_BoolOp(self, node: ast.BoolOp) -> Any:
        is_and = isinstance(node.op, ast.And)
        result: Any = None
        for _i, e in enumerate(node.values):
            v = self.eval(e)
            if is_value(v):
                raise self.error(e, f"'{'and' if is_and else 'or'}' is not defined on runtime values",
                                 f"use {'&' if is_and else '|'} on boolean tiles, e.g. (a < n) {'&' if is_and else '|'} (b < m)")
            result = v
            if (is_and and not v) or (not is_and and v):
                return v
        return result

    def eval_IfExp(self, node: ast.IfExp) -> Any:
        cond = self.eval(node.test)
        if is_value(cond):
            folded = self.fold(cond)
            if folded is None:
                if cond.type.is_tile:
                    raise self.error(node.test, "the condition of a conditional expression must be a scalar",
                                     "use tl.where(cond, x, y) for tiles")
                a, b = self.eval(node.body), self.eval(node.orelse)
                return self.apply(node, lambda: semantic.RULES["where"](self.b, cond, a, b))
            cond = folded
        return self.eval(node.body if cond else node.orelse)

    def eval_Subscript(self, node: ast.Subscript) -> Any:
        base = self.eval(node.value)
        idx_nodes = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if not is_value(base):
            idx = self.eval(node.slice)
            try:
                return base[idx]
            except Exception as e:  # noqa: BLE001 - report any indexing failure at its location
                raise self.error(node, f"cannot index {self.describe(base)}: {e}") from None
        x = base
        dim = 0
        for sub in idx_nodes:
            if isinstance(sub, ast.Constant) and sub.value is None:
                x = self.apply(node, lambda x=x, dim=dim: self.b.emit(
                    "expand_dims", [x], x.type.with_shape(x.type.shape[:dim] + (1,) + x.type.shape[dim:]), axis=dim))
                dim += 1
            elif isinstance(sub, ast.Slice) and sub.lower is None and sub.upper is None and sub.step is None:
                dim += 1
            else:
                raise self.error(sub, "tiles can only be indexed with None and ':' (e.g. x[:, None])",
                                 "slicing and element access are not supported; use masks or tl.where")
        if dim != len(x.type.shape) and dim > len(x.type.shape):
            raise self.error(node, f"too many indices for a tile of rank {len(base.type.shape)}")
        return x

    def eval_Call(self, node: ast.Call) -> Any:
        fn = self.eval(node.func)
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                v = self.eval(a.value)
                if not isinstance(v, tuple):
                    raise self.error(a, "only tuples can be unpacked with * in kernels")
                args.extend(v)
            else:
                args.append(self.eval(a))
        kwargs = {}
        for k in node.keywords:
            if k.arg is None:
                raise self.error(k, "**kwargs are not supported in kernels")
            kwargs[k.arg] = self.eval(k.value)
        return self.call(node, fn, args, kwargs)

    def call(self, node: ast.AST, fn: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if isinstance(fn, _TensorMethod) and fn.name == "to":
            return self.apply(node, lambda: semantic.RULES["cast"](self.b, fn.value, *args, **kwargs))
        name = builtin_name(fn)
        if name is not None:
            if name == "static_assert":
                return self.static_assert(node, *args, **kwargs)
            if name == "static_print":
                print(*[self.describe(a) if is_value(a) else a for a in args])
                return None
            rule_fn = semantic.RULES.get(name)
            if rule_fn is None:
                raise self.error(node, f"tl.{name} is not supported by the compiler yet",
                                 "run the kernel with ENCELADUS_INTERPRET=1, or rewrite it without this builtin")
            return self.apply(node, lambda: rule_fn(self.b, *args, **kwargs))
        if isinstance(fn, dtype):  # tl.float32(x) is a cast
            if len(args) != 1 or kwargs:
                raise self.error(node, f"{fn!r}(...) takes exactly one argument")
            return self.apply(node, lambda: semantic.RULES["cast"](self.b, args[0], fn))
        if is_jit_function(fn):
            return self.inline(node, fn, args, kwargs)
        if fn in (static_range, tl_range):
            return fn(*args, **kwargs)
        if any(is_value(a) for a in list(args) + list(kwargs.values())):
            fname = getattr(fn, "__name__", repr(fn))
            raise self.error(node, f"cannot call '{fname}' on tiles inside a kernel",
                             "only tl.* builtins and @enceladus.jit functions can take tiles")
        if fn in _PY_BUILTINS.values() or getattr(fn, "__enceladus_host_const__", False):
            try:
                return fn(*args, **kwargs)
            except Exception as e:  # noqa: BLE001 - report at the call site
                raise self.error(node, f"{getattr(fn, '__name__', fn)}(...) failed: {e}") from None
        fname = getattr(fn, "__name__", repr(fn))
        raise self.error(node, f"'{fname}' cannot be called inside a kernel",
                         "kernels can call tl.* builtins, @enceladus.jit functions and min/max/int/float on constexprs")

    def static_assert(self, node: ast.AST, cond: Any, msg: Any = "") -> None:
        if is_value(cond):
            raise self.error(node, "tl.static_assert needs a constexpr condition", "use a condition on constexprs")
        if not cond:
            raise self.error(node, f"static_assert failed: {msg}" if msg else "static_assert failed")

    def inline(self, node: ast.AST, fn: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if fn.fn in self.call_stack:
            raise self.error(node, f"recursive call to '{fn.__name__}'", "kernels cannot recurse; write a loop")
        sig = inspect.signature(fn.fn)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise self.error(node, f"bad arguments for '{fn.__name__}': {e}") from None
        bound.apply_defaults()
        scope = {}
        for name, value in bound.arguments.items():
            scope[name] = value.value if isinstance(value, constexpr) else value
        callee = Lowering(self.b, fn.source, scope, self.kernel_name, self.call_stack)
        try:
            callee.run_body(callee.src.tree.body)
        except _Return as r:
            self.read_globals.update(callee.read_globals)
            return r.value
        self.read_globals.update(callee.read_globals)
        return None

    # --- helpers --------------------------------------------------------------------------------------
    def apply(self, node: ast.AST, thunk: Any) -> Any:
        """Run a typing rule with ``node``'s location; turn its errors into CompilationErrors."""
        self._set_loc(node)
        try:
            return thunk()
        except SemanticError as e:
            raise self.error(node, e.message, e.fix) from None
        except TypeError as e:  # wrong arguments to a builtin
            raise self.error(node, str(e), "check the builtin's arguments in the language reference") from None

    def fold(self, v: ir.Value) -> Any:
        """The Python value of a scalar IR constant, or None."""
        op = v.op
        if op is not None and op.name == "const":
            return op.attrs["value"]
        return None

    @staticmethod
    def describe(x: Any) -> str:
        if is_value(x):
            return str(x.type)
        return repr(x)


def lower_kernel(source: KernelSource, name: str, params: list[tuple[str, Any]]) -> tuple[ir.Function, dict[str, Any]]:
    """Build the tile IR of a kernel.

    ``params`` lists, in order, each parameter's name and either an ``ir.Type`` (a runtime argument)
    or a Python value (a constexpr or a specialized constant).
    Returns the function and the globals the kernel read (for the cache key).
    """
    fn = ir.Function(name)
    builder = Builder(fn)
    scope: dict[str, Any] = {}
    for pname, spec in params:
        if isinstance(spec, ir.Type):
            scope[pname] = fn.add_arg(pname, spec)
        elif isinstance(spec, _Const):
            scope[pname] = builder.const(spec.value, spec.dtype)
        else:
            scope[pname] = spec
    lowering = Lowering(builder, source, scope, name)
    try:
        lowering.run_body(source.tree.body)
    except _Return as r:
        if r.value is not None:
            raise lowering.error(r.node, "a kernel cannot return a value",
                                 "store results through a pointer argument with tl.store") from None
    ir.verify(fn)
    return fn, lowering.read_globals


@dataclass(frozen=True)
class _Const:
    """A runtime argument specialized to a constant (ints equal to 1): still a typed value, not a literal."""

    value: Any
    dtype: dtype


def specialized_constant(value: Any, ty: dtype) -> _Const:
    return _Const(value, ty)

