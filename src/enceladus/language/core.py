"""The machinery behind the ``tl`` namespace: ``constexpr`` and the ``builtin`` marker.

The functions in ``enceladus.language`` are never executed by the compiler: the frontend reads the
kernel's syntax tree and applies each builtin's rule (``compiler/semantic.py``, found by the
builtin's name). The interpreter binds the same names to NumPy implementations.
"""

from __future__ import annotations

import abc
import builtins
import functools
from collections.abc import Callable
from typing import Any


class constexpr:
    """A compile-time constant.

    Annotate a kernel parameter with ``tl.constexpr`` to make its value part of the kernel's
    specialization (a new kernel is compiled for each value)::

        @enceladus.jit
        def kernel(x_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
    """

    def __init__(self, value: Any):
        self.value = value.value if isinstance(value, constexpr) else value

    def __repr__(self) -> str:
        return f"constexpr[{self.value!r}]"

    def __index__(self) -> int:
        return self.value

    def __bool__(self) -> bool:
        return bool(self.value)

    def __eq__(self, other: object) -> bool:
        return self.value == (other.value if isinstance(other, constexpr) else other)

    def __hash__(self) -> int:
        return hash(self.value)


def builtin(fn: Callable) -> Callable:
    """Mark ``fn`` as a tile-language builtin, usable only inside ``@enceladus.jit`` kernels."""

    @functools.wraps(fn)
    def outside_kernel(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            f"tl.{fn.__name__}() can only be called inside a @enceladus.jit kernel "
            "(or with ENCELADUS_INTERPRET=1, which runs kernels with NumPy)"
        )

    outside_kernel.__enceladus_builtin__ = fn.__name__
    return outside_kernel


def named_builtin(signature: Callable, name: str, doc: str) -> Callable:
    """A builtin called ``name`` with ``signature``'s parameters and the docstring ``doc``, for families of
    builtins declared from one template (``tl.exp``, ``tl.log``...; ``tl.atomic_add``...)."""
    signature.__name__ = name
    signature.__qualname__ = name
    signature.__doc__ = doc
    return builtin(signature)


def builtin_name(obj: Any) -> str | None:
    """The builtin's name if ``obj`` is a tile-language builtin, else None."""
    return getattr(obj, "__enceladus_builtin__", None)


class _TupleMeta(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, builtins.tuple)  # every tuple in a kernel is a tl.tuple, as in Triton


class tuple(builtins.tuple, metaclass=_TupleMeta):  # noqa: A001 - Triton's name
    """Triton's ``tl.tuple``: a tuple of tiles, scalars and constexprs. ``tl.tuple([a, b])`` builds one (the same
    as ``(a, b)``) and ``isinstance(x, tl.tuple)`` holds for every tuple in a kernel."""

    def __new__(cls, args: Any = (), type: Any = None) -> builtins.tuple:  # noqa: A002 - Triton's signature
        return _TypedTuple(args)


class condition:
    """``while tl.condition(cond, disable_licm=False):`` -- a while condition with a compiler hint; the loop runs
    while ``cond`` holds (``disable_licm`` is accepted and has no effect)."""

    def __init__(self, arg1: Any, disable_licm: Any = False):
        self.condition = arg1
        self.disable_licm = disable_licm

    def __bool__(self) -> bool:
        return bool(self.condition)


class const:
    """Annotation of a pointer parameter to constant data (Triton's ``tl.const``)::

        @enceladus.jit
        def copy(src: tl.const, dst, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(dst + offs, tl.load(src + offs, mask=offs < n), mask=offs < n)

    Loads through ``src`` are allowed; a store or a writing atomic through it is refused when the kernel is
    compiled (and by the interpreter), naming the line. ``tl.pointer_type(tl.float32, const=True)`` is the type
    of such a pointer (``*kfp32`` in signatures)."""


class constexpr_type:
    """The type of a compile-time constant (Triton's ``tl.constexpr_type(value)``): what ``tl.tuple(...).type``
    holds for a constexpr entry. Two are equal when their values are."""

    __enceladus_host_const__ = True  # constructible inside kernels from constexprs

    def __init__(self, value: Any):
        self.value = value.value if isinstance(value, constexpr) else value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, constexpr_type) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"constexpr_type[{self.value}]"


class tuple_type:
    """The type of a ``tl.tuple`` (Triton's ``tl.tuple_type(types, fields=None)``): the entries' types in order
    (``t.type[0]``, ``len(t.type)``, iteration) and, for a named tuple, its field names."""

    __enceladus_host_const__ = True

    def __init__(self, types: Any, fields: Any = None):
        self.types = list(types)
        self.fields = None if fields is None else list(fields)

    @property
    def name(self) -> str:
        if self.fields is None:
            return "[" + ",".join(str(t) for t in self.types) + "]"
        return "[" + ",".join(f"{k}:{t}" for k, t in zip(self.fields, self.types)) + "]"

    def __str__(self) -> str:
        return self.name

    __repr__ = __str__

    def __iter__(self):
        return iter(self.types)

    def __len__(self) -> int:
        return len(self.types)

    def __getitem__(self, index: int) -> Any:
        return self.types[index.value if isinstance(index, constexpr) else index]

    def __eq__(self, other: object) -> bool:
        return type(other) is tuple_type and self.types == other.types and self.fields == other.fields

    def __hash__(self) -> int:
        return hash((builtins.tuple(map(str, self.types)), builtins.tuple(self.fields or ())))


def type_of_entry(value: Any) -> Any:
    """An entry's type in a ``tuple_type``: a runtime value's ``.type``, a tuple's ``tuple_type``, else a
    ``constexpr_type``."""
    if isinstance(value, builtins.tuple):
        return tuple_type([type_of_entry(v) for v in value], getattr(value, "_fields", None))
    ty = getattr(value, "type", None)
    return ty if ty is not None and not isinstance(value, (int, float, bool, str)) else constexpr_type(value)


class _TypedTuple(builtins.tuple):
    """What ``tl.tuple([...])`` builds: a tuple whose ``.type`` is its ``tl.tuple_type``."""

    @property
    def type(self) -> tuple_type:
        return type_of_entry(builtins.tuple(self))


class tensor(abc.ABC):  # noqa: B024 - a registry of classes, no methods
    """Triton's ``tl.tensor``: every runtime value in a kernel (tiles, scalars computed at run time, pointers) is
    one; constexprs and Python numbers are not. Use it in ``isinstance(x, tl.tensor)`` and annotations. The
    compiler and the interpreter register their value classes as its subclasses; kernels never construct one."""


class _SliceMeta(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, builtins.slice)


class slice(metaclass=_SliceMeta):  # noqa: A001 - Triton's name
    """Triton's ``tl.slice(start, stop, step)``: what ``a:b:c`` in a subscript is. ``x[None, tl.slice(None, None,
    None)]`` is ``x[None, :]``, ``t[tl.slice(0, 2, None)]`` is ``t[0:2]`` on a tuple, and ``isinstance(s,
    tl.slice)`` holds for every slice in a kernel."""

    __enceladus_host_const__ = True

    def __new__(cls, start: Any, stop: Any, step: Any) -> builtins.slice:
        unwrap = lambda v: v.value if isinstance(v, constexpr) else v  # noqa: E731
        return builtins.slice(unwrap(start), unwrap(stop), unwrap(step))


def _aggregate(cls: type) -> type:
    """Triton's ``@aggregate`` (``from triton.language.core import _aggregate as aggregate``): a class of named
    fields (its annotations), built inside kernels as ``Pair(a, b)`` or ``Pair(a=.., b=..)``, read as ``p.a``,
    immutable after construction (``tl.aggregate_replace(p, b=...)`` makes a modified copy), carried through
    loops and branches. Fields hold tiles, scalars, constexprs or tuples of them; ``@jit`` methods take the instance
    first (``acc.update(x)``)."""
    names = builtins.tuple(cls.__dict__.get("__annotations__", {}))
    defaults = {n: cls.__dict__[n] for n in names if n in cls.__dict__}
    if "__init__" not in cls.__dict__:
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            if len(args) > len(names):
                raise TypeError(f"{cls.__name__}() takes {len(names)} fields, got {len(args)} positional arguments")
            values = dict(zip(names, args))
            for k, v in kwargs.items():
                if k not in names or k in values:
                    raise TypeError(f"{cls.__name__}() got an unexpected or repeated field '{k}' "
                                    f"(its fields: {', '.join(names)})")
                values[k] = v
            for n in names:
                if n not in values and n not in defaults:
                    raise TypeError(f"{cls.__name__}() is missing field '{n}'")
                object.__setattr__(self, n, values.get(n, defaults.get(n)))

        cls.__init__ = __init__

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if getattr(self, "_aggregate_done", False):
            raise AttributeError(f"cannot assign to field '{name}' of {cls.__name__}: aggregates are immutable; "
                                 "use tl.aggregate_replace(obj, name=value) to make a modified copy")
        object.__setattr__(self, name, value)

    user_init = cls.__init__

    def init_then_freeze(self: Any, *args: Any, **kwargs: Any) -> None:
        user_init(self, *args, **kwargs)
        missing = [n for n in names if not hasattr(self, n)]
        if missing:
            raise AttributeError(f"the constructor of {cls.__name__} did not set field '{missing[0]}'")
        object.__setattr__(self, "_aggregate_done", True)

    cls.__init__ = init_then_freeze
    cls.__setattr__ = __setattr__
    cls.__enceladus_aggregate__ = True
    cls.__aggregate_fields__ = names
    return cls


def is_aggregate(obj: Any) -> bool:
    """Whether ``obj`` is an instance of an ``@aggregate`` class."""
    return getattr(type(obj), "__enceladus_aggregate__", False) is True


def is_aggregate_class(obj: Any) -> bool:
    """Whether ``obj`` is an ``@aggregate`` class (calling it in a kernel builds an instance)."""
    return isinstance(obj, type) and getattr(obj, "__enceladus_aggregate__", False) is True


def aggregate_replace(instance: Any, **changes: Any) -> Any:
    """A copy of an ``@aggregate`` instance with the named fields replaced (Triton's ``tl.aggregate_replace``,
    like ``dataclasses.replace``)::

        p = tl.aggregate_replace(p, acc=p.acc + x)
    """
    if not is_aggregate(instance):
        raise TypeError(f"tl.aggregate_replace expects an @aggregate instance, got {type(instance).__name__}; "
                        "decorate the class with triton.language.core._aggregate (enceladus.language.core._aggregate)")
    names = type(instance).__aggregate_fields__
    for name in changes:
        if name not in names:
            raise TypeError(f"{type(instance).__name__} has no field '{name}' (its fields: {', '.join(names)})")
    return type(instance)(**{**{n: getattr(instance, n) for n in names}, **changes})


CONSTEXPR_0 = constexpr(0)


# ``tl.core`` is Triton's core module: it holds the builtins of ``tl`` except those Triton defines in its standard,
# math and random modules (``dir(triton.language.core)`` of Triton 3.9, compared with ``dir(triton.language)``).
_NOT_IN_CORE = frozenset((  # noqa: SIM905 - a word list reads better than 57 quoted names
    "abs argmax argmin bitonic_merge cdiv ceil core cos cumprod cumsum div_rn erf exp exp2 extra fdiv flip floor fma "
    "interleave log log2 max min pair_uniform_to_normal philox philox_impl rand rand4x randint randint4x randn "
    "randn4x random ravel reduce_or rsqrt sigmoid sin softmax sort sqrt sqrt_rn squeeze standard str_to_ty sum "
    "swizzle2d target_info topk uint_to_uniform_float umulhi unsqueeze xor_sum zeros zeros_like").split())


def __getattr__(name: str) -> Any:
    """``tl.core.load``, ``tl.core.arange``, ``tl.core.dtype``...: the ``tl`` builtins Triton's core module holds."""
    if not name.startswith("_") and name not in _NOT_IN_CORE:
        from enceladus import language

        if name in language.__dict__:
            return language.__dict__[name]
    raise AttributeError(f"module 'enceladus.language.core' has no attribute '{name}'")


def __dir__() -> list[str]:
    from enceladus import language

    public = {n for n in language.__dict__ if not n.startswith("_") and n not in _NOT_IN_CORE}
    return sorted(public | set(globals()))
