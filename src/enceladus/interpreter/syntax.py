"""Python constructs whose meaning in a kernel differs from plain Python, rewritten before the interpreter runs it.

Triton gives four constructs kernel semantics: ``assert cond, msg`` is ``tl.device_assert`` (checked only in
debug mode), ``and``/``or``/``not`` on runtime values are logical operations on booleans (elementwise on tiles,
every runtime operand evaluated), and a Python literal has a ``.dtype`` (the type it takes as a tile). Python
cannot overload ``and``/``or``/``not``/``assert`` or give ``int`` a ``dtype``, so the kernel's syntax tree is
rewritten to call the helpers below; everything else runs as written. A function whose source is unavailable
runs unchanged.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
from typing import Any

from .context import DeviceAssertionError, current, where_text
from .tensor import Tile, literal_dtype, unwrap

_BOOLOP, _NOT, _ASSERT, _DTYPE = "__enc_boolop__", "__enc_not__", "__enc_assert__", "__enc_dtype__"
_CARRY = "__enc_carry__"


def _name(id_: str) -> ast.Name:
    return ast.Name(id=id_, ctx=ast.Load())


def _located(new: ast.AST, old: ast.AST) -> ast.AST:
    """``new`` (and its new parts) at ``old``'s place in the source: errors point at the kernel's line."""
    for n in ast.walk(new):
        if getattr(n, "lineno", None) is None and "lineno" in n._attributes:
            ast.copy_location(n, old)
    return new


class _Rewrite(ast.NodeTransformer):
    def __init__(self) -> None:
        self.changed = False

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        self.changed = True
        no_args = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                                defaults=[])
        thunks = [ast.Lambda(args=no_args, body=v) for v in node.values]  # operands stay lazy, as in Python
        return _located(ast.Call(_name(_BOOLOP), [ast.Constant(isinstance(node.op, ast.And)), *thunks], []), node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        if not isinstance(node.op, ast.Not):
            return node
        self.changed = True
        return _located(ast.Call(_name(_NOT), [node.operand], []), node)

    def visit_Assert(self, node: ast.Assert) -> ast.AST:
        self.generic_visit(node)
        self.changed = True
        args = [node.test] + ([node.msg] if node.msg is not None else [])
        return _located(ast.Expr(_located(ast.Call(_name(_ASSERT), args, []), node)), node)

    def visit_While(self, node: ast.While) -> Any:
        """A Python int carried through a ``while`` loop is a runtime int32 scalar in compiled Triton (the loop
        carries tensors), so ``x_int8 * i`` is int32 there: convert such names to int32 (int64) scalar tiles
        before the loop, as the compiler does, instead of letting a Python int's "does not take part" rule apply."""
        self.generic_visit(node)
        names: list[str] = []
        for sub in node.body:
            for n in ast.walk(sub):
                targets = (n.targets if isinstance(n, ast.Assign) else [n.target]
                           if isinstance(n, (ast.AugAssign, ast.AnnAssign)) else [])
                for t in targets:
                    if isinstance(t, ast.Name) and t.id not in names:
                        names.append(t.id)
        if not names:
            return node
        self.changed = True
        pre = [_located(ast.If(test=ast.Compare(ast.Constant(n), [ast.In()], [ast.Call(_name("locals"), [], [])]),
                               body=[ast.Assign(targets=[ast.Name(id=n, ctx=ast.Store())],
                                                value=ast.Call(_name(_CARRY), [_name(n)], []))], orelse=[]), node)
               for n in names]
        return [*pre, node]

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if node.attr != "dtype" or not isinstance(node.ctx, ast.Load):
            return node
        self.changed = True
        return _located(ast.Call(_name(_DTYPE), [node.value], []), node)


_REWRITTEN: dict[types.CodeType, types.CodeType | None] = {}  # a function's code -> its rewrite (once per code)


def rewrite(fn: types.FunctionType) -> types.CodeType | None:
    """The code of ``fn`` with the constructs above rewritten, or None (nothing to rewrite, or no source).

    Line numbers stay the kernel's own; the closure's free variables keep their names (the rewritten function is
    compiled inside a wrapper that takes them as parameters)."""
    if fn.__code__ not in _REWRITTEN:
        _REWRITTEN[fn.__code__] = _rewrite(fn)
    return _REWRITTEN[fn.__code__]


def _rewrite(fn: types.FunctionType) -> types.CodeType | None:
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None
    try:
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except SyntaxError:
        return None
    if not tree.body or not isinstance(tree.body[0], ast.FunctionDef) or tree.body[0].name != fn.__name__:
        return None
    fdef = tree.body[0]
    fdef.decorator_list = []
    t = _Rewrite()
    t.visit(fdef)
    if not t.changed:
        return None
    free = list(fn.__code__.co_freevars)
    args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in free], vararg=None, kwonlyargs=[],
                         kw_defaults=[], kwarg=None, defaults=[])
    wrapper = ast.FunctionDef(name="__enc_wrapper__", args=args, body=[fdef, ast.Return(_name(fdef.name))],
                              decorator_list=[], returns=None, type_comment=None)
    module = ast.Module(body=[wrapper], type_ignores=[])
    ast.fix_missing_locations(module)
    ast.increment_lineno(module, first - 1)
    code = compile(module, fn.__code__.co_filename, "exec")
    outer = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    inner = next(c for c in outer.co_consts if isinstance(c, types.CodeType) and c.co_name == fn.__name__)
    if set(inner.co_freevars) - set(free):
        return None  # the rewrite would need a variable the original did not capture: run it unchanged
    return inner


def closure_for(code: types.CodeType, fn: types.FunctionType, convert: Any) -> tuple | None:
    """The cells of ``fn``'s closure in the order ``code`` names its free variables (converted by ``convert``)."""
    if not code.co_freevars:
        return None
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    return tuple(convert(cells[n]) for n in code.co_freevars)


# --- the helpers the rewritten code calls ----------------------------------------------------------------------

def boolop(is_and: bool, *thunks: Any) -> Any:
    """``a and b`` / ``a or b``: Python values short-circuit; boolean tiles combine with ``&`` / ``|``."""
    word, sym = ("and", "&") if is_and else ("or", "|")
    tiles: list[Tile] = []
    v: Any = None
    for thunk in thunks:
        v = thunk()
        if isinstance(v, Tile):
            if not v.dtype.is_bool():
                raise TypeError(f"'{word}' needs boolean operands, got a {v.dtype} value; compare it first, e.g. "
                                f"(x != 0) {word} ...; or use {sym} for bitwise {word}")
            tiles.append(v)
        elif (is_and and not v) or (not is_and and v):
            return v
    if not tiles:
        return v
    out = tiles[0]
    for t in tiles[1:]:
        out = (out & t) if is_and else (out | t)
    return out


def not_(v: Any) -> Any:
    """``not x``: logical not of a boolean tile or a scalar (``x == 0``), Python's ``not`` otherwise."""
    if not isinstance(v, Tile):
        return not v
    if v.dtype.is_ptr():
        raise TypeError("'not' is not defined on pointers; compare the offsets instead")
    if v.shape and not v.dtype.is_bool():
        raise TypeError(f"'not' needs a boolean tile, got {v.dtype}; use x == 0 (or ~x for the bitwise complement)")
    return v == 0


def assert_(cond: Any, msg: Any = "") -> None:
    """``assert cond, msg``: ``tl.device_assert(cond, msg)`` in debug mode, nothing otherwise (as in Triton)."""
    launch = current()
    if not launch.debug:
        return
    if isinstance(cond, Tile):  # device_assert checks debug mode itself
        from .ops import OPS

        OPS["device_assert"](cond, msg)
    elif not unwrap(cond):
        raise DeviceAssertionError(f"device_assert failed in kernel '{launch.kernel}', program "
                                   f"{launch.program(0)}: {unwrap(msg)}{where_text()}")


def dtype_of(v: Any) -> Any:
    """``x.dtype``; for a Python literal, the type it takes as a tile (``(3).dtype`` is int32), as in Triton."""
    v = unwrap(v)
    if isinstance(v, (bool, int, float)):
        return literal_dtype(v)
    return v.dtype


def carry(v: Any) -> Any:
    """A value entering a ``while`` loop it is assigned in: a Python int becomes its literal-typed scalar tile."""
    if type(v) is int:
        from .tensor import to_tile

        return to_tile(v)
    return v


HELPERS = {_BOOLOP: boolop, _NOT: not_, _ASSERT: assert_, _DTYPE: dtype_of, _CARRY: carry}
