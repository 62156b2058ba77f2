"""The machinery behind the ``tl`` namespace: ``constexpr`` and the ``builtin`` marker.

The functions in ``enceladus.language`` are never executed by the compiler: the frontend reads the
kernel's syntax tree and applies each builtin's rule (``compiler/semantic.py``, found by the
builtin's name). The interpreter binds the same names to NumPy implementations.
"""

from __future__ import annotations

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
        return builtins.tuple(args)


class condition:
    """``while tl.condition(cond, disable_licm=False):`` -- a while condition with a compiler hint; the loop runs
    while ``cond`` holds (``disable_licm`` is accepted and has no effect)."""

    def __init__(self, arg1: Any, disable_licm: Any = False):
        self.condition = arg1
        self.disable_licm = disable_licm

    def __bool__(self) -> bool:
        return bool(self.condition)
