"""``@enceladus.jit``: binding arguments, specialization, the in-memory kernel cache and launch."""

from __future__ import annotations

import functools
import inspect
import os
import textwrap
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..compiler.kernel import CompiledKernel
from ..compiler.metal_limits import MAX_GRID
from ..compiler.source import KernelSource
from ..errors import CompilationError
from ..language.core import constexpr
from ..language.dtypes import dtype
from . import arguments, knobs, structs
from .arguments import ArgSpec
from .backend import get_backend
from .fastpath import KernelCache, LaunchPlan, SlowPath, arg_key, key_function, positional_key
from .guards import check as check_globals
from .guards import guard_of
from .launch import _DEBUG_KEY as _DEBUG_ENV
from .launch import _ENV_DATA, _ENVIRON, DEBUG_OFF_RAW, debug_enabled, launch, launcher_for

STRUCT_PREFIX = "__struct__"  # specialization entries that record the structure of tuple/descriptor arguments
DOT_BACKEND_KEY = "__dot_backend__"  # the specialization entry of the dot lowering (a launch option)
FP_FUSION_KEY = "__fp_fusion__"  # the specialization entry of enable_fp_fusion (a launch option)
BOUNDS_KEY = "__msl_bounds_checks__"  # debug launches on metal: the MSL checks its accesses (compile option)
DEVICE_KEY = "__device__"  # the specialization entry of what the device probes found (runtime/probes.py)
DEBUG_KEY = "__debug__"  # present in debug launches: `assert` statements are compiled in (as in Triton)
LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "debug", "dot_backend",
                  "extern_libs", "timeout")
DOT_BACKENDS = ("auto", "simdgroup", "matmul2d")


@dataclass(frozen=True)
class KernelParam:
    name: str
    index: int
    is_constexpr: bool
    default: Any
    annotation_type: dtype | None  # `n: tl.int32` fixes the argument's type
    do_not_specialize: bool
    is_const: bool = False  # `p: tl.const`: a pointer to constant data (`*k` in the signature)


def _is_constexpr_annotation(ann: Any) -> bool:
    if ann is constexpr:
        return True
    return isinstance(ann, str) and ann.replace(" ", "").split(".")[-1] == "constexpr"


def _is_const_annotation(ann: Any) -> bool:
    """``p: tl.const`` (or a ``tl.pointer_type(..., const=True)``): Triton's rule, "const" in the annotation."""
    from ..language.core import const

    if ann is const or getattr(ann, "const", False) is True:
        return True
    return isinstance(ann, str) and "const" in ann and "constexpr" not in ann


def _annotation_dtype(ann: Any) -> dtype | None:
    if isinstance(ann, dtype):
        return ann
    if isinstance(ann, str) and ann.startswith(("tl.", "enceladus.language.")):
        from .. import language

        value = getattr(language, ann.split(".")[-1], None)
        return value if isinstance(value, dtype) else None
    return None


# Every live kernel, so that setting a launch hook can drop their launch fast paths (knobs.py).
_ALL: weakref.WeakSet = weakref.WeakSet()


def _drop_fast_paths() -> None:
    for f in list(_ALL):
        f._fast.clear()


knobs._listeners.append(_drop_fast_paths)


class JITFunction:
    """A kernel: launch with ``kernel[grid](*args, num_warps=4, **constexprs)``."""

    __enceladus_jit__ = True

    def __init__(self, fn: Callable, *, do_not_specialize: Any = (), do_not_specialize_on_alignment: Any = (),
                 debug: bool | None = None, interpret: bool | None = None, noinline: bool = False,
                 launch_metadata: Callable[..., dict] | None = None, repr: Callable[..., str] | None = None,
                 source_text: str | None = None):
        if not inspect.isfunction(fn):
            raise TypeError(f"@enceladus.jit decorates Python functions, got {type(fn).__name__}")
        if launch_metadata is not None and not callable(launch_metadata):
            raise TypeError("launch_metadata must be a function (grid, metadata, args) -> dict, "
                            f"got {launch_metadata!r}")
        self.fn = fn
        self.source = KernelSource(fn, source_text if source_text is not None else exec_source(fn))
        self.launch_metadata = launch_metadata
        self._repr = repr
        self._options = {"do_not_specialize": do_not_specialize,
                             "do_not_specialize_on_alignment": do_not_specialize_on_alignment, "debug": debug,
                             "interpret": interpret, "noinline": noinline, "launch_metadata": launch_metadata, "repr": repr}
        functools.update_wrapper(self, fn)
        sig = inspect.signature(fn)
        names = list(sig.parameters)
        dns = {names[i] if isinstance(i, int) else i for i in do_not_specialize}
        self.do_not_specialize_on_alignment = {names[i] if isinstance(i, int) else i
                                               for i in do_not_specialize_on_alignment}
        self.params: list[KernelParam] = []
        for i, (name, p) in enumerate(sig.parameters.items()):
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise TypeError(f"kernel '{fn.__name__}': *args/**kwargs parameters are not supported")
            self.params.append(KernelParam(
                name, i, _is_constexpr_annotation(p.annotation),
                p.default if p.default is not p.empty else inspect.Parameter.empty,
                _annotation_dtype(p.annotation), name in dns, _is_const_annotation(p.annotation)))
        self.param_names = names
        self._by_name = {p.name: p for p in self.params}
        self.debug = debug
        env_interp = os.environ.get("ENCELADUS_INTERPRET", "0") not in ("", "0", "false", "False")
        self.interpret = env_interp if interpret is None else interpret
        self.cache: dict[Any, CompiledKernel] = KernelCache()  # a dict (runtime/fastpath.py)
        self._lock = threading.Lock()
        # Fast path (runtime/fastpath.py): fast key -> LaunchPlan; per-position "is constexpr" flags.
        self._fast: dict[Any, LaunchPlan] = {}
        self._cflags = tuple(p.is_constexpr for p in self.params)
        self._keyfns: dict[int, Any] = {}  # number of positional arguments -> fastpath.key_function
        self._key_counts: set[int] = set()  # the counts seen once (see _first_key)
        self._key_by_value = {p.name for p in self.params if p.is_constexpr} | set(LAUNCH_OPTIONS)
        self._defaults = [p.default for p in self.params]
        self._fn_defaults = (fn.__defaults__, fn.__kwdefaults__)
        _ALL.add(self)

    def __repr__(self) -> str:
        return f"JITFunction({self.fn.__module__}:{self.fn.__qualname__})"

    # --- source, as Triton's JITFunction.src ------------------------------------------------------------
    @property
    def src(self) -> str:
        """The kernel's source from its ``def`` line (decorators left out), as Triton's ``JITFunction.src``."""
        return source_from_def(self.source.text)

    @src.setter
    def src(self, new_src: str) -> None:
        raise AttributeError("JITFunction.src cannot be assigned; use _unsafe_update_src(new_src), as in Triton")

    def _unsafe_update_src(self, new_src: str) -> None:
        """Replace the kernel's source (Triton's escape hatch, used by its tests to patch kernels).

        The new source is compiled against the kernel's module globals; the compiled and in-memory caches
        start afresh. Callers that inline this kernel keep their own copy, as in Triton."""
        if not isinstance(new_src, str):
            raise TypeError(f"_unsafe_update_src takes the new source text, got {type(new_src).__name__}")
        fn = function_from_source(new_src, self.fn)
        self.__init__(fn, source_text=source_from_def(new_src), **self._options)  # type: ignore[misc]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            f"kernel '{self.__name__}' must be launched with a grid: {self.__name__}[grid](...); "
            "to call it from another kernel, call it inside that kernel's body"
        )

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        return functools.partial(self.run, grid=grid)

    # --- binding ------------------------------------------------------------------------------------
    def _defaults_current(self) -> bool:
        """Whether the parameters' defaults are still those of ``fn`` (after ``fn.__defaults__ = ...`` they are
        read again, and launch plans that filled them in are dropped)."""
        fn = self.fn
        if fn.__defaults__ is self._fn_defaults[0] and fn.__kwdefaults__ is self._fn_defaults[1]:
            return True
        params = inspect.signature(fn).parameters
        self.params = [KernelParam(p.name, p.index, p.is_constexpr,
                                   params[p.name].default if params[p.name].default is not params[p.name].empty
                                   else inspect.Parameter.empty, p.annotation_type, p.do_not_specialize)
                       for p in self.params]
        self._by_name = {p.name: p for p in self.params}
        self._defaults = [p.default for p in self.params]
        self._fn_defaults = (fn.__defaults__, fn.__kwdefaults__)
        self._fast.clear()
        return False

    def bind(self, args: tuple, kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Map the launch's arguments to parameters. Returns (values by name, launch options)."""
        self._defaults_current()
        options = {k: kwargs.pop(k) for k in LAUNCH_OPTIONS if k in kwargs and k not in self._by_name}
        if len(args) > len(self.params):
            raise TypeError(f"kernel '{self.__name__}' takes {len(self.params)} arguments "
                            f"({', '.join(self.param_names)}) but {len(args)} were given")
        values: dict[str, Any] = {}
        for p, a in zip(self.params, args):
            values[p.name] = a
        for k, v in kwargs.items():
            if k not in self._by_name:
                raise TypeError(f"kernel '{self.__name__}' got an unexpected keyword argument '{k}' "
                                f"(parameters: {', '.join(self.param_names)}; launch options: "
                                f"{', '.join(LAUNCH_OPTIONS)})")
            if k in values:
                raise TypeError(f"kernel '{self.__name__}' got multiple values for argument '{k}'")
            values[k] = v
        for p in self.params:
            if p.name not in values:
                if p.default is inspect.Parameter.empty:
                    raise TypeError(f"kernel '{self.__name__}' is missing argument '{p.name}'")
                values[p.name] = p.default
        for p in self.params:
            if p.is_constexpr and isinstance(values[p.name], constexpr):
                values[p.name] = values[p.name].value
        return values, options

    def specialize(self, values: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any], dict[str, tuple[bool, bool]]]:
        signature: dict[str, str] = {}
        constexprs: dict[str, Any] = {}
        facts: dict[str, tuple[bool, bool]] = {}
        for p in self.params:
            v = values[p.name]
            if p.is_constexpr:
                constexprs[p.name] = v
                continue
            if structs.is_struct(v):  # tuples and tensor descriptors: one argument per leaf
                leaves, structure = structs.flatten(p.name, v)
                constexprs[STRUCT_PREFIX + p.name] = structure
                for leaf_name, leaf_value in leaves:
                    spec = arguments.spec_of(leaf_value, leaf_name, not p.do_not_specialize)
                    signature[leaf_name] = spec.type
                    facts[leaf_name] = (spec.divisible_by_16, spec.equal_to_1)
                continue
            spec: ArgSpec = arguments.spec_of(v, p.name, not p.do_not_specialize)
            if p.name in self.do_not_specialize_on_alignment:
                spec = ArgSpec(spec.type, False, spec.equal_to_1)
            if p.annotation_type is not None and not spec.type.startswith("*"):
                spec = ArgSpec(_annotated_type(p, v), False, False)
            if p.is_const and spec.type.startswith("*"):
                spec = ArgSpec("*k" + spec.type[1:], spec.divisible_by_16, spec.equal_to_1)
            signature[p.name] = spec.type
            facts[p.name] = (spec.divisible_by_16, spec.equal_to_1)
        return signature, constexprs, facts

    def specialization(self, values: dict[str, Any], options: dict[str, Any]) -> tuple[dict, dict, dict]:
        """``specialize`` plus the launch options that change the generated code (the dot lowering)."""
        signature, constexprs, facts = self.specialize(values)
        constexprs[DOT_BACKEND_KEY] = resolve_dot_backend(options.get("dot_backend"))
        constexprs[FP_FUSION_KEY] = resolve_fp_fusion(options.get("enable_fp_fusion"))
        backend = get_backend()
        if options.get("debug") or self.debug or debug_enabled():
            constexprs[DEBUG_KEY] = True
            if getattr(backend, "name", "") == "metal":  # debug mode on Metal: bounds checks compiled into the MSL
                constexprs[BOUNDS_KEY] = True
        if getattr(backend, "probe_on_compile", False):  # what the device probes found (runtime/probes.py)
            from . import probes

            found = probes.for_backend(backend).constraints()
            if found:
                constexprs[DEVICE_KEY] = found
        return signature, constexprs, facts

    def _key(self, signature: dict[str, str], constexprs: dict[str, Any], facts: dict[str, Any],
             num_warps: int) -> Any:
        try:
            # the type is part of the key: BLOCK=128.0 is not BLOCK=128 even though they compare equal
            const_key = tuple((k, type(v).__name__, v) for k, v in constexprs.items())
            hash(const_key)
        except TypeError:
            const_key = tuple((k, type(v).__name__, repr(v)) for k, v in constexprs.items())
        return (tuple(signature.items()), const_key, tuple(facts.items()), num_warps)

    def compile_for(self, values: dict[str, Any], options: dict[str, Any], _probed: bool = False,
                    spec_keys: list | None = None) -> CompiledKernel:
        """The compiled kernel for these bound arguments: memory cache, then disk cache, then compile. Metal 4
        matmul2d tiles are probed on first use; a tile the device refuses means one recompile without it.
        ``spec_keys``: a list the specialization key of the kernel is appended to (``run`` maps its fast key to it)."""
        kernel = self._compile_for(values, options, spec_keys)
        tiles = kernel.metadata.get("matmul2d_tiles")
        if tiles and not _probed:
            backend = get_backend()
            if getattr(backend, "probe_on_compile", False):
                from . import probes

                if probes.for_backend(backend).check_matmul2d(tiles):
                    return self.compile_for(values, options, _probed=True, spec_keys=spec_keys)
        return kernel

    def _compile_for(self, values: dict[str, Any], options: dict[str, Any],
                     spec_keys: list | None = None) -> CompiledKernel:
        num_warps = options.get("num_warps", 4)
        signature, constexprs, facts = self.specialization(values, options)
        key = self._key(signature, constexprs, facts, num_warps)
        if spec_keys is not None:
            spec_keys.append(key)
        kernel = self.cache.get(key)
        if kernel is None:
            with self._lock:
                kernel = self.cache.get(key)
                if kernel is None:
                    from . import cache as disk  # the disk cache, then the compiler

                    kernel = disk.load_or_compile(self, signature, constexprs, facts, num_warps, compile_kernel)
                    self.cache[key] = kernel
        return kernel

    # --- launch --------------------------------------------------------------------------------------
    def _fast_key(self, args: tuple, kwargs: dict[str, Any]) -> Any:
        """Everything specialization can see of these arguments (see runtime/fastpath.py)."""
        keyfn = self._keyfns.get(len(args))
        key = keyfn(args) if keyfn is not None else self._first_key(args)
        if kwargs:
            by_value = self._key_by_value
            extra = []
            for name, v in kwargs.items():
                extra.append((name, (v.__class__, v) if name in by_value else arg_key(v)))
            key += tuple(extra)
        return key

    def _first_key(self, args: tuple) -> tuple:
        """The positional part of the fast key before ``fastpath.key_function`` is compiled for this many arguments:
        the first launch with a count computes it argument by argument, the second compiles the function (~0.05 ms
        per argument: a process that launches once does not pay it). SlowPath past the parameter count."""
        nargs = len(args)
        if nargs > len(self._cflags):
            raise SlowPath
        if nargs in self._key_counts:
            self._keyfns[nargs] = key_function(self._cflags[:nargs])
            return self._keyfns[nargs](args)
        self._key_counts.add(nargs)
        return tuple(positional_key(args, self._cflags))

    def run(self, *args: Any, grid: Any, **kwargs: Any) -> CompiledKernel | None:
        fkey = None
        if not self.interpret and not self.debug:
            try:  # (self._fast_key, inlined)
                keyfn = self._keyfns.get(len(args))
                key = keyfn(args) if keyfn is not None else self._first_key(args)
                if kwargs:
                    by_value = self._key_by_value
                    extra = []
                    for name, v in kwargs.items():
                        extra.append((name, (v.__class__, v) if name in by_value else arg_key(v)))
                    key += tuple(extra)
                fkey = key
                plan = self._fast.get(fkey)
            except (SlowPath, TypeError):  # TypeError: an unhashable constexpr
                fkey = plan = None
            cache = self.cache
            fn = self.fn
            if plan is not None and (cache is plan.cache and cache.version == plan.version or plan.current(cache)) \
                    and (_ENV_DATA.get(_DEBUG_ENV) in DEBUG_OFF_RAW if _DEBUG_ENV is not None and os.environ is _ENVIRON
                         else not debug_enabled()) \
                    and (not plan.tail or fn.__defaults__ is self._fn_defaults[0] and
                                                 fn.__kwdefaults__ is self._fn_defaults[1] or self._defaults_current()):
                if plan.guard is not None:
                    plan.guard.check()  # the globals it was compiled with (runtime/guards.py)
                plan.run(args, kwargs, grid)
                return plan.kernel
        values, options = self.bind(args, dict(kwargs))
        if knobs.hooks_active():  # the fast path is off while hooks are set (knobs._listeners)
            return self._run_hooked(grid, values, options)
        debug = bool(options.get("debug", False) or self.debug or debug_enabled())
        timed = options.get("timeout") is not None  # a launch with a time limit takes the slow path
        spec_keys: list = []
        kernel = self._launch_bound(grid, values, options, spec_keys)
        if kernel is None:  # interpreted
            return None
        # kernels with a device log or 16-bit atomics (padded bindings: launch.launch) keep the slow path
        if fkey is not None and not debug and not timed and not kernel.metadata.get("log_sites") and \
                not kernel.metadata.get("word_atomics") and not kernel.metadata.get("int_pointers"):
            # the key compile_for looked the kernel up by (debug off here: the same specialization)
            spec_key = spec_keys[-1] if spec_keys else \
                self._key(*self.specialization(values, options), options.get("num_warps", 4))
            if self.cache.get(spec_key) is kernel:
                self._fast[fkey] = LaunchPlan(spec_key, launcher_for(kernel), self.param_names, self._defaults,
                                              len(args), [values[n] for n in self.param_names], guard_of(kernel))
        return kernel

    def _launch_bound(self, grid: Any, values: dict[str, Any], options: dict[str, Any],
                      spec_keys: list | None = None) -> CompiledKernel | None:
        """The launch of ``run`` after binding, without the fast path (``spec_keys``: see ``compile_for``)."""
        if self.interpret:
            from ..interpreter import interpret_launch
            from .shader import run_msl_elementwise

            interpret_launch(self, resolve_grid(grid, values), values, options, arguments.as_numpy,
                             run_msl_elementwise)
            return None
        debug = bool(options.pop("debug", False) or self.debug or debug_enabled())
        timeout = options.pop("timeout", None)  # seconds (cpu backend): the launch is stopped after that long
        kernel = self.compile_for(values, {**options, "debug": debug}, spec_keys=spec_keys)
        check_globals(kernel)
        launch_values = values
        if any(structs.is_struct(values[p.name]) for p in self.params if not p.is_constexpr):
            launch_values = dict(values)
            for p in self.params:
                if not p.is_constexpr and structs.is_struct(values[p.name]):
                    launch_values.update(structs.flatten(p.name, values[p.name])[0])
        launch(kernel, resolve_grid(grid, values), launch_values, debug=debug, timeout=timeout)
        return kernel

    def _run_hooked(self, grid: Any, values: dict[str, Any], options: dict[str, Any]) -> CompiledKernel | None:
        """A launch with ``knobs.runtime.launch_enter_hook``/``launch_exit_hook`` set (Triton's launch hooks)."""
        resolved = resolve_grid(grid, values)
        metadata = LaunchMetadata({"name": self.__name__, "function": self.fn, "stream": None})
        if self.launch_metadata is not None:
            md = {"num_warps": options.get("num_warps", 4), "num_stages": options.get("num_stages", 3),
                  "name": self.__name__}
            metadata.add(self.launch_metadata, (resolved, _AttrDict(md), dict(values)))
        enter, leave = knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook
        if enter:
            enter(metadata)
        kernel = self._launch_bound(grid, values, options)
        if leave:
            leave(metadata)
        return kernel

    def warmup(self, *args: Any, grid: Any = None, **kwargs: Any) -> Any:
        """Compile for these arguments without launching; returns the compiled kernel, which launches itself
        with ``compiled[grid](*every_argument)`` (``runtime/compiled.py``)."""
        from .compiled import CompiledHandle

        values, options = self.bind(args, dict(kwargs))
        if self.interpret:  # launches run in the interpreter; the figures come from the compiler when it can
            try:
                kernel = self.compile_for(values, options)
            except CompilationError:
                kernel = None
        else:
            kernel = self.compile_for(values, options)
        constexprs = {p.name: values[p.name] for p in self.params if p.is_constexpr}
        return CompiledHandle(self, kernel, constexprs, options.get("num_warps", 4), options.get("num_stages", 3),
                              interpreted=self.interpret)

    def explain(self, *args: Any, save: str | None = None, **kwargs: Any) -> str:
        """The IR with layouts, threads per threadgroup and vectorization decisions for these arguments.

        With ``save="layout.svg"`` (or .png/.pdf; needs matplotlib) also draws which SIMD group, lane and
        register holds each element of every layout.
        """
        kwargs.pop("grid", None)
        values, options = self.bind(args, dict(kwargs))
        kernel = self.compile_for(values, options)
        if save is not None:
            from ..tools.layout_svg import save_kernel_layouts

            save_kernel_layouts(kernel, save)
        return kernel.explain()


class _AttrDict(dict):
    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class LaunchMetadata:
    """What launch hooks receive (Triton's ``LazyDict``): ``get()`` is the dict, computed on first call."""

    def __init__(self, data: dict[str, Any]):
        self.data = data
        self.extras: list[tuple[Callable[..., dict], tuple]] = []

    def add(self, func: Callable[..., dict], args: tuple) -> None:
        self.extras.append((func, args))

    def get(self) -> dict[str, Any]:
        for func, args in self.extras:
            self.data = self.data | func(*args)
        self.extras.clear()
        return self.data


def source_from_def(text: str) -> str:
    """``text`` from its first ``def`` line (what Triton calls a kernel's ``src``)."""
    import re

    m = re.search(r"^\s*def\s+\w+\s*\(", text, re.MULTILINE)
    return textwrap.dedent(text[m.start():]) if m else text


def function_from_source(src: str, like: Callable) -> Callable:
    """The function ``src`` defines, compiled against ``like``'s module globals (decorators dropped)."""
    import ast

    text = textwrap.dedent(src)
    tree = ast.parse(text)
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    if len(defs) != 1:
        raise ValueError("the new kernel source must define exactly one function")
    defs[0].decorator_list = []
    namespace: dict[str, Any] = {}
    filename = f"<enceladus-src {like.__name__} {abs(hash(text)):x}>"
    exec(compile(tree, filename, "exec"), like.__globals__, namespace)  # noqa: S102 - the user's kernel source
    fn = namespace[defs[0].name]
    fn.__module__ = like.__module__
    return fn


def exec_source(fn: Callable) -> str | None:
    """The source of a function defined by ``exec(text)``, found in the caller that ran ``exec`` (Triton's tests
    build kernels that way); None when the function has a file or no such text is found. A candidate counts only
    if it compiles to the function's own bytecode."""
    code = getattr(fn, "__code__", None)
    if code is None or not code.co_filename.startswith("<") or code.co_filename.startswith("<enceladus"):
        return None
    import linecache
    import sys

    if linecache.getlines(code.co_filename):
        return None
    frame = sys._getframe(1)
    for _ in range(12):  # up to the frame that called exec
        frame = frame.f_back
        if frame is None:
            return None
        if frame.f_code.co_filename == code.co_filename:
            break
    else:
        return None
    for _ in range(3):
        frame = frame.f_back
        if frame is None:
            return None
        for value in list(frame.f_locals.values()):
            if isinstance(value, str) and f"def {code.co_name}" in value and _defines(value, code):
                return value
    return None


def _defines(text: str, code: Any) -> bool:
    try:
        module = compile(text, code.co_filename, "exec")
    except (SyntaxError, ValueError):
        return False
    return any(getattr(c, "co_name", None) == code.co_name and c.co_code == code.co_code
               and c.co_firstlineno == code.co_firstlineno for c in module.co_consts)


def _annotated_type(p: KernelParam, value: Any) -> str:
    ty = p.annotation_type
    return ty.name


def compile_kernel(source: Any, name: str, param_names: list[str], signature: dict[str, str],
                   constexprs: dict[str, Any], *args: Any, **kwargs: Any) -> CompiledKernel:
    """The compiler, loaded on the first compile (a process that only launches cached kernels never loads it).

    The runtime's specialization records tuple/descriptor structures, the dot lowering, fp fusion and the device
    probes' findings beside the constexprs
    (they are part of the cache key); the compiler gets them as explicit arguments."""
    from ..compiler import driver

    plain = {k: v for k, v in constexprs.items()
             if not k.startswith(STRUCT_PREFIX) and k not in (DOT_BACKEND_KEY, FP_FUSION_KEY, DEVICE_KEY, DEBUG_KEY, BOUNDS_KEY)}
    struct_args = {k[len(STRUCT_PREFIX):]: v for k, v in constexprs.items() if k.startswith(STRUCT_PREFIX)}
    return driver.compile_kernel(source, name, param_names, signature, plain, *args, structs=struct_args,
                                 dot_backend=constexprs.get(DOT_BACKEND_KEY, "simdgroup"),
                                 enable_fp_fusion=constexprs.get(FP_FUSION_KEY, True),
                                 device=dict(constexprs.get(DEVICE_KEY, ())),
                                 debug=bool(constexprs.get(DEBUG_KEY, False)),
                                 msl_bounds_checks=bool(constexprs.get(BOUNDS_KEY, False)), **kwargs)


def resolve_dot_backend(choice: Any) -> str:
    """How tl.dot is lowered: "simdgroup" (simdgroup_matrix, every Apple GPU) or "matmul2d" (Metal 4 tensor
    ops). "auto" (the default) takes matmul2d only where the backend says it is faster (GPUs with neural
    accelerators); the cpu backend runs either."""
    choice = "auto" if choice is None else choice
    if choice not in DOT_BACKENDS:
        raise ValueError(f"dot_backend={choice!r} is not one of {', '.join(DOT_BACKENDS)}")
    if choice == "auto":
        backend = get_backend()
        prefers = getattr(backend, "prefers_matmul2d", None)
        return "matmul2d" if prefers is not None and prefers() else "simdgroup"
    return choice


def resolve_fp_fusion(choice: Any) -> bool:
    """Whether a multiply whose only use is an add or a subtract becomes one fma (Triton's enable_fp_fusion);
    None takes ``knobs.compilation.enable_fp_fusion`` (on by default, as in Triton)."""
    if choice is None:
        choice = knobs.compilation.enable_fp_fusion
    if not isinstance(choice, (bool, np.bool_)):
        raise ValueError(f"enable_fp_fusion={choice!r}: expected True or False")
    return bool(choice)


def resolve_grid(grid: Any, values: dict[str, Any]) -> tuple[int, int, int]:
    """The launch grid as three positive ints (a callable grid receives the bound arguments)."""
    if callable(grid):
        grid = grid(dict(values))
    if isinstance(grid, (int, np.integer)):
        grid = (grid,)
    if not isinstance(grid, (tuple, list)) or not 1 <= len(grid) <= 3:
        raise TypeError(f"grid must be a tuple of 1 to 3 ints (or a callable returning one), got {grid!r}")
    out = []
    for i, g in enumerate(grid):
        if isinstance(g, constexpr):
            g = g.value
        if isinstance(g, bool) or not isinstance(g, (int, np.integer)):
            raise TypeError(f"grid[{i}] must be an int, got {type(g).__name__} {g!r}")
        g = int(g)
        if g < 0:
            raise ValueError(f"grid[{i}] = {g} is negative")
        if g > MAX_GRID:
            raise ValueError(f"grid[{i}] = {g} exceeds Metal's limit of {MAX_GRID} threadgroups per dimension")
        out.append(g)
    while len(out) < 3:
        out.append(1)
    return out[0], out[1], out[2]
