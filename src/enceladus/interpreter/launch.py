"""Running a kernel's own Python over the grid, with ``tl`` bound to the NumPy implementations.

Programs are independent, so by default a whole batch of them runs at once: program ids are arrays
along the tiles' leading axis. When the programs of a batch disagree on a Python-level decision
(an ``if`` on a scalar, loop bounds), the batch's writes are undone and it reruns split into groups
that agree. Kernels that print, stop in a debugger or use atomics run one program at a time.
"""

from __future__ import annotations

import builtins as py
import os
import types
from collections.abc import Callable
from types import CodeType
from typing import Any

import numpy as np

from .. import errors, language
from ..language import dtypes as D
from ..language import math as tl_math
from ..language import structs
from ..language.builtins import range as tl_range_cls
from ..language.builtins import static_range as tl_static_range_cls
from ..language.core import builtin_name, constexpr, is_aggregate_class
from . import descriptors, extra, fp8, libdevice, ops, random, shape_ops, syntax  # noqa: F401  (registration)
from .context import (
    InterpreterError,
    InterpreterTypeError,
    InterpreterValueError,
    Launch,
    activate,
    current,
    env_flag,
    rollback,
)
from .memory import Buffer
from .ops import OPS, PropagateNan, kernel_print
from .refusals import refuse, refuse_libdevice
from .tensor import PEAK, Divergence, PointerTile, Tile, block_type, to_tile, unwrap

BATCH_ELEMENTS = 1 << 22  # program batches hold tiles of at most about this many elements
SEQUENTIAL_NAMES = frozenset({"print", "breakpoint", "set_trace", "pdb", "device_print", "atomic_add",
                              "atomic_max", "atomic_min", "atomic_and", "atomic_or", "atomic_xor",
                              "atomic_xchg", "atomic_cas", "atomic_load", "atomic_store", "atomic_poll"})


# --- the tl namespace ----------------------------------------------------------------------------------------

class interp_constexpr:
    """``tl.constexpr(x)`` inside interpreted kernels is just ``x``."""

    def __new__(cls, value: Any) -> Any:  # type: ignore[misc]
        return unwrap(value)


def _bounds(args: tuple) -> tuple[Any, Any, Any]:
    a, b, s = (unwrap(x) for x in args)
    if b is None:
        a, b = 0, a
    return a, b, 1 if s is None else s


class static_range:
    """``tl.static_range``: a loop over constexpr bounds (unrolled by the compiler)."""

    def __init__(self, arg1: Any, arg2: Any = None, step: Any = None):
        self.args = (arg1, arg2, step)

    def __iter__(self) -> Any:
        a, b, s = _bounds(self.args)
        if any(isinstance(x, Tile) for x in (a, b, s)):
            raise TypeError("tl.static_range bounds must be constexprs; use range/tl.range for runtime bounds")
        return iter(py.range(a, b, s))


class range:  # noqa: A001 - replaces Python's range inside kernels, as Triton's tl.range does
    """``range``/``tl.range`` in kernels: runtime bounds may be per-program scalars."""

    def __init__(self, arg1: Any, arg2: Any = None, step: Any = None, num_stages: Any = None,
                 loop_unroll_factor: Any = None, disallow_acc_multi_buffer: Any = False, flatten: Any = False,
                 warp_specialize: Any = False, disable_licm: Any = False):
        self.args = (arg1, arg2, step)

    def __iter__(self) -> Any:
        a, b, s = _bounds(self.args)
        if not any(isinstance(x, Tile) for x in (a, b, s)):
            return iter(py.range(a, b, s))
        return self._tiles(a, b, s)

    @staticmethod
    def _tiles(a: Any, b: Any, s: Any) -> Any:
        ts = [to_tile(x) for x in (a, b, s)]
        for t in ts:
            if t.shape or not t.dtype.is_int():
                raise TypeError(f"range bounds must be integer scalars, got {t.dtype} of shape {t.shape}")
        ty = ts[0].dtype
        for t in ts[1:]:
            from .tensor import integer_promote

            ty = integer_promote(ty, t.dtype)
        start, end, step = (t.data.astype(np.int64) for t in ts)
        if (step == 0).any():
            raise ValueError("range() step must not be zero")
        trips = np.maximum(0, np.where(step > 0, (end - start + step - 1) // step, (start - end - step - 1) // -step))
        if trips.shape[0] > 1 and not (trips == trips[0]).all():
            raise Divergence(trips)
        for i in py.range(int(trips[0])):
            yield Tile((start + i * step).astype(ty.to_numpy()), ty)


_NAMESPACE: dict[str, types.ModuleType] = {}


def namespace() -> types.ModuleType:
    """The module that stands in for ``enceladus.language`` inside interpreted kernels."""
    if "tl" in _NAMESPACE:
        return _NAMESPACE["tl"]
    tl = types.ModuleType("enceladus.interpreter.tl", "tl.* bound to the interpreter's NumPy implementations")
    math = types.ModuleType("enceladus.interpreter.tl.math")
    for name in dir(language):
        value = getattr(language, name)
        if builtin_name(value) is not None:
            value = _bound(name)
        setattr(tl, name, value)
    for name in dir(tl_math):
        if builtin_name(getattr(tl_math, name)) is not None:
            setattr(math, name, _bound(name))
    for name in OPS:
        if not hasattr(tl, name):
            setattr(tl, name, _bound(name))
    for name in ("exp", "exp2", "log", "log2", "sqrt", "sqrt_rn", "rsqrt", "sin", "cos", "floor", "ceil", "erf",
                 "sigmoid", "abs", "fma", "maximum", "minimum", "fdiv", "div_rn", "umulhi", "cdiv"):
        setattr(math, name, _bound(name))
    tl.math = math
    for sub in (language.random, language.standard):  # modules of builtins: bound like tl itself
        mod = types.ModuleType("enceladus.interpreter.tl." + sub.__name__.rsplit(".", 1)[-1])
        for name in dir(sub):
            value = getattr(sub, name)
            if not name.startswith("_"):
                setattr(mod, name, _bound(builtin_name(value)) if builtin_name(value) else value)
        setattr(tl, sub.__name__.rsplit(".", 1)[-1], mod)
    tl.extra = _extra_namespace(language.extra)  # tl.extra.libdevice.tanh, as kernels spell it
    tl.__getattr__ = refuse  # Triton builtins Apple GPUs cannot run: a refusal that says why (refusals.py)
    tl.constexpr = interp_constexpr
    tl.block_type = block_type
    tl.PropagateNan = PropagateNan
    tl.static_range = static_range
    tl.range = range
    tl.core = _core_namespace(tl)
    _NAMESPACE["tl"] = tl
    return tl


def _core_namespace(tl: types.ModuleType) -> types.ModuleType:
    """``tl.core``: the interpreter's ``tl`` names that Triton's core module holds, and core's own names."""
    core = types.ModuleType("enceladus.interpreter.tl.core")
    for name in dir(language.core):
        value = getattr(language.core, name)
        if not name.startswith("__"):
            setattr(core, name, getattr(tl, name) if hasattr(tl, name) and name in vars(tl) else value)
    return core


def _extra_namespace(module: types.ModuleType) -> types.ModuleType:
    """``enceladus.language.extra`` (and ``.libdevice``) with builtins bound to the interpreter."""
    key = "extra:" + module.__name__
    if key not in _NAMESPACE:
        ns = types.ModuleType("enceladus.interpreter." + module.__name__.split(".", 2)[-1])
        for name in dir(module):
            value = getattr(module, name)
            if isinstance(value, types.ModuleType) and value.__name__.startswith("enceladus.language.extra"):
                value = _extra_namespace(value)
            elif builtin_name(value) is not None:
                value = _bound(builtin_name(value))
            setattr(ns, name, value)
        if module.__name__.endswith(".libdevice"):
            ns.__getattr__ = refuse_libdevice  # float64-only functions: a refusal that says why (refusals.py)
        _NAMESPACE[key] = ns
    return _NAMESPACE[key]


def _bound(name: str) -> Callable[..., Any]:
    """The interpreter's tl.<name> as kernels see it (refusing fp8 tiles where it would compute on them)."""
    return fp8.guard(name, OPS[name]) if name in OPS else _not_implemented(name)


def _not_implemented(name: str) -> Callable[..., Any]:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"tl.{name} is not implemented by the interpreter yet")

    return fail


# --- re-executing the kernel's functions -----------------------------------------------------------------------

def _is_jit(v: Any) -> bool:
    return getattr(v, "__enceladus_jit__", False) is True and hasattr(v, "fn")


class Rebinder:
    """Rebuilds a kernel and its ``@jit`` callees as plain functions whose globals see the interpreter."""

    def __init__(self) -> None:
        self.functions: dict[int, types.FunctionType] = {}
        self.globals: dict[int, dict[str, Any]] = {}
        self.codes: set[CodeType] = set()

    def convert(self, v: Any) -> Any:
        tl = namespace()
        if v is language:
            return tl
        if isinstance(v, types.ModuleType) and v.__name__.startswith("enceladus.language.extra"):
            return _extra_namespace(v)
        if v is tl_math:
            return tl.math
        if v is language.random:
            return tl.random
        if v is language.standard:
            return tl.standard
        if v is tl_range_cls:
            return range
        if v is tl_static_range_cls:
            return static_range
        if isinstance(v, constexpr):
            return v.value
        name = builtin_name(v)
        if name is not None:
            return _bound(name)
        if _is_jit(v):
            return self.function(v.fn)
        if is_aggregate_class(v):
            return self.aggregate(v)
        return v

    def aggregate(self, cls: type) -> type:
        """An ``@aggregate`` class whose ``@jit`` methods run interpreted (a subclass: isinstance still holds)."""
        key = id(cls)
        if key not in self.functions:
            methods = {k: self.function(m.fn) for k, m in vars(cls).items() if _is_jit(m)}
            self.functions[key] = type(cls.__name__, (cls,), methods) if methods else cls
        return self.functions[key]

    def function(self, fn: Any) -> types.FunctionType:
        """The interpreted version of the Python function ``fn``."""
        key = id(fn)
        if key in self.functions:
            return self.functions[key]
        gkey = id(fn.__globals__)
        g = self.globals.get(gkey)
        if g is None:
            g = dict(fn.__globals__)
            self.globals[gkey] = g
            for k, v in list(g.items()):
                if not k.startswith("__"):
                    g[k] = self.convert(v)
            g["range"] = range
            g["print"] = kernel_print
        def cell(c: Any) -> Any:
            return types.CellType(self.convert(c.cell_contents)) if _cell_full(c) else c

        code = syntax.rewrite(fn)  # assert, and/or/not, literal .dtype with kernel semantics (syntax.py)
        if code is None:
            code = fn.__code__
            closure = tuple(cell(c) for c in fn.__closure__) if fn.__closure__ else None
        else:
            closure = syntax.closure_for(code, fn, cell)
            g.update(syntax.HELPERS)
        new = types.FunctionType(code, g, fn.__name__, fn.__defaults__, closure)
        new.__kwdefaults__ = fn.__kwdefaults__
        self.functions[key] = new
        self._codes(code)
        return new

    def _codes(self, code: CodeType) -> None:
        self.codes.add(code)
        for c in code.co_consts:
            if isinstance(c, CodeType):
                self._codes(c)


def _rebind_in_tuples(rebinder: Rebinder, v: Any) -> Any:
    """A tuple argument with the ``@jit`` functions inside it (a NamedTuple's constexpr field) made callable."""
    if _is_jit(v):
        return rebinder.function(v.fn)
    if isinstance(v, tuple):
        items = [_rebind_in_tuples(rebinder, x) for x in v]
        return type(v)(*items) if hasattr(type(v), "_fields") else tuple(items)
    return v


def _cell_full(cell: Any) -> bool:
    try:
        _ = cell.cell_contents
    except ValueError:
        return False
    return True


def as_callable(fn: Any) -> Callable[..., Any]:
    """A combine function for reduce/scan: interpreted if it is a ``@jit`` function."""
    if _is_jit(fn):
        return current().rebinder.function(fn.fn)
    if not callable(fn):
        raise TypeError(f"combine_fn must be a @jit function, got {fn!r}")
    return fn


def needs_sequential(fn: Any, seen: set[int] | None = None) -> bool:
    """Whether the kernel (or a callee) prints, debugs or uses atomics: then programs run one by one."""
    seen = set() if seen is None else seen
    if id(fn) in seen:
        return False
    seen.add(id(fn))
    names: set[str] = set()
    stack = [fn.__code__]
    while stack:
        code = stack.pop()
        names.update(code.co_names)
        names.update(code.co_freevars)
        stack.extend(c for c in code.co_consts if isinstance(c, CodeType))
    if names & SEQUENTIAL_NAMES:
        return True
    for name in names:
        v = fn.__globals__.get(name)
        if _is_jit(v) and needs_sequential(v.fn, seen):
            return True
    for cell in fn.__closure__ or ():
        if _cell_full(cell) and _is_jit(cell.cell_contents) and needs_sequential(cell.cell_contents.fn, seen):
            return True
    return False


# --- arguments ----------------------------------------------------------------------------------------------------

def _arguments(jitfn: Any, values: dict[str, Any], as_numpy: Callable[[Any], np.ndarray]) -> dict[str, Any]:
    signature, _, _ = jitfn.specialize(values)  # the same validation (and errors) as a compiled launch
    args: dict[str, Any] = {}
    for p in jitfn.params:
        v = values[p.name]
        if p.is_constexpr:
            args[p.name] = v
            continue
        if structs.is_struct(v):  # a tuple or TensorDescriptor: convert its leaves, then rebuild it
            from .descriptors import TensorDescriptor

            flat, structure = structs.flatten(p.name, v)
            leaves = dict(flat)
            args[p.name] = structs.rebuild(p.name, structure,
                                           lambda n, leaves=leaves: _argument(n, leaves[n], signature[n], as_numpy),
                                           lambda base, shape, strides, block: TensorDescriptor(base, shape,
                                                                                                strides, block))
            continue
        args[p.name] = _argument(p.name, v, signature[p.name], as_numpy)
    return args


def _leaves(value: Any) -> list[Any]:
    """The values inside (nested) tuples and descriptors of the bound arguments."""
    if isinstance(value, dict):
        return [x for v in value.values() for x in _leaves(v)]
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _leaves(v)]
    base = getattr(value, "base", None)
    return [base] if base is not None else [value]


def _argument(name: str, v: Any, t: str, as_numpy: Callable[[Any], np.ndarray]) -> Any:
    """One runtime argument as the interpreter sees it: a pointer tile, a scalar tile or None."""
    if t.startswith("*"):
        const = t.startswith("*k")  # a tl.const parameter: stores through it are refused
        return Buffer(name, v, as_numpy(v), D.BY_NAME[t[2:] if const else t[1:]]).pointer(const)
    if t == "none":
        return None
    ty = D.BY_NAME[t]
    try:
        data = np.array([v], dtype=ty.to_numpy())
    except OverflowError:
        raise ValueError(f"argument '{name}' = {v!r} does not fit its type {ty}") from None
    return Tile(data, ty)


def _check_options(jitfn: Any, options: dict[str, Any]) -> None:
    nw = options.get("num_warps", 4)
    if isinstance(nw, bool) or not isinstance(nw, int) or nw <= 0 or nw & (nw - 1):
        raise ValueError(f"kernel '{jitfn.__name__}': num_warps must be a power of two, got {nw!r}")


# --- launch --------------------------------------------------------------------------------------------------------

def interpret_launch(jitfn: Any, grid: tuple[int, int, int], values: dict[str, Any],
                     options: dict[str, Any], as_numpy: Callable[[Any], np.ndarray] = np.asarray,
                     run_msl: Callable[..., np.ndarray] | None = None) -> None:
    """Run ``jitfn`` over ``grid`` with the NumPy interpreter; writes land in the caller's arrays.

    ``as_numpy`` views an array argument (a Tensor, a torch or MLX array) as NumPy: the runtime passes its own,
    so the interpreter never imports the runtime. ``run_msl(code, arrays, result_dtype)`` evaluates one MSL
    expression elementwise (tl.inline_asm_elementwise) on a backend; None: such kernels are refused."""
    _check_options(jitfn, options)
    if env_flag("ENCELADUS_VERIFY"):
        jitfn.compile_for(values, options)  # refuse exactly what the compiler refuses
    args = _arguments(jitfn, values, as_numpy)
    total = grid[0] * grid[1] * grid[2]
    if total == 0:
        return
    rebinder = Rebinder()
    kernel = rebinder.function(jitfn.fn)
    args = {k: _rebind_in_tuples(rebinder, v) if isinstance(v, tuple) else v for k, v in args.items()}
    launch = Launch(kernel=jitfn.__name__, grid=grid, codes=rebinder.codes, rebinder=rebinder,
                    debug=bool(options.get("debug") or getattr(jitfn, "debug", False) or env_flag("ENCELADUS_DEBUG")))
    launch.buffers = [a.buf for a in _leaves(args) if isinstance(a, PointerTile)]
    launch.run_msl = run_msl
    sequential = needs_sequential(jitfn.fn) or env_flag("ENCELADUS_INTERPRET_SEQUENTIAL")
    previous = activate(launch)
    try:
        _run_launch(launch, kernel, args, total, sequential)
    except (TypeError, ValueError, IndexError) as e:
        if isinstance(e, InterpreterError):
            raise
        refusal = _as_refusal(e, jitfn, launch.codes, values, options)
        if refusal is not None:  # a tl.* builtin refused the kernel: the compiler's CompilationError
            raise refusal from e
        if isinstance(e, IndexError):
            raise
        # the kernel's own error: also an InterpreterError, as in Triton
        wrapper = InterpreterTypeError if isinstance(e, TypeError) else InterpreterValueError
        raise wrapper(str(e)).with_traceback(e.__traceback__) from e
    finally:
        launch.log = None
        activate(previous)


def _run_launch(launch: Launch, kernel: Callable[..., Any], args: dict[str, Any], total: int,
                sequential: bool) -> None:
    """The launch's programs, in groups (or one by one when the kernel needs it)."""
    if sequential:
        for lin in py.range(total):
            launch.set_programs(np.array([lin], np.int64))
            kernel(**args)
        return
    launch.log = []
    PEAK[0] = 1
    _run_group(launch, kernel, args, np.array([0], np.int64))
    start = 1
    limit = int(os.environ.get("ENCELADUS_INTERPRET_BATCH_ELEMENTS", BATCH_ELEMENTS))
    per = max(1, limit // max(1, PEAK[0]))
    while start < total:
        end = min(total, start + per)
        launch.log.clear()
        _run_group(launch, kernel, args, np.arange(start, end, dtype=np.int64))
        start = end


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_REFUSAL_TYPES: dict[type, type] = {}


def refusal_type(base: type) -> type:
    """A CompilationError that is also ``base`` (so ``except TypeError`` around an interpreted launch still works)."""
    if base not in _REFUSAL_TYPES:
        _REFUSAL_TYPES[base] = type(f"CompilationError[{base.__name__}]", (errors.CompilationError, base),
                                    {"__module__": errors.__name__})
    return _REFUSAL_TYPES[base]


def _as_refusal(e: Exception, jitfn: Any, codes: set[CodeType], values: dict[str, Any],
                options: dict[str, Any]) -> Exception | None:
    """A ``tl.*`` builtin refused a kernel: the same CompilationError (type and message) the compiler raises for
    it, or, where the compiler accepts the kernel, one located at the kernel line. None for the user's own errors."""
    frames = []
    tb = e.__traceback__
    while tb is not None:
        frames.append(tb)
        tb = tb.tb_next
    inner = os.path.abspath(frames[-1].tb_frame.f_code.co_filename) if frames else ""
    in_kernel = [t for t in frames if t.tb_frame.f_code in codes]
    if not inner.startswith(_PACKAGE) or not in_kernel:
        return None  # raised by the kernel's own Python, or outside the kernel
    base = {TypeError: InterpreterTypeError, ValueError: InterpreterValueError}.get(type(e), type(e))
    cls = refusal_type(base)
    try:
        jitfn.compile_for(values, options)
    except errors.CompilationError as c:  # one message for both paths: the compiler's
        refusal = cls(c.message, filename=c.filename, lineno=c.lineno, col=c.col, source_line=c.source_line,
                      fix=c.fix, kernel=c.kernel)
        if str(e) not in refusal.args[0]:  # and what the interpreter's builtin said, in Triton's words
            refusal.args = (f"{refusal.args[0]}\ninterpreter: {e}",)
        return refusal
    except Exception:  # noqa: BLE001 - the compiler failing otherwise: report the interpreter's refusal
        pass
    t = in_kernel[-1]
    fname, line = t.tb_frame.f_code.co_filename, t.tb_lineno
    import linecache

    return cls(str(e), filename=fname, lineno=line, source_line=linecache.getline(fname, line) or None,
               kernel=jitfn.__name__)


def _run_group(launch: Launch, kernel: Callable[..., Any], args: dict[str, Any], lins: np.ndarray) -> None:
    assert launch.log is not None
    mark = len(launch.log)
    launch.set_programs(lins)
    try:
        kernel(**args)
    except Divergence as d:
        if len(lins) == 1:
            raise RuntimeError("internal error: a single program diverged") from None
        rollback(launch, mark)
        key = np.broadcast_to(d.key, (len(lins),))
        _, groups = np.unique(key, return_inverse=True)
        for g in py.range(int(groups.max()) + 1):
            _run_group(launch, kernel, args, lins[groups.reshape(-1) == g])
