"""Stale-state checks: a compiled kernel is only launched while the globals it read still hold their values.

Compiling bakes in every value the kernel reads outside its arguments: module globals (``BLOCK``), attributes
of modules and classes (``cfg.BLOCK``), tuple globals, ``@jit`` helpers and their ``__defaults__``. The
compiler records each read with its location (``compiler.kernel.GlobalRead``); this module checks them again on
every launch and raises :class:`~enceladus.errors.StaleGlobalError` naming the global, its old and new values
and the kernel line that reads it (as Triton 3.9 does: "Global variable X has changed since we compiled this
kernel, from A to B").

Cheap on the launch path: one probe per read (an ``itemgetter``/``attrgetter`` call and an identity test,
~40 ns); a value replaced by an equal one (``BLOCK = 128`` executed again, a helper redefined with the same
code) is compared by content once and then tracked by identity. Kernels that read no globals (only ``tl.*``)
have no guard at all.

For kernels loaded from the disk cache the recorded reads (owner function, path, a description of the value)
are bound to the current process's functions; if one cannot be found, or its value's description differs
from the one compiled in, the entry is not used (the kernel is compiled again).
"""

from __future__ import annotations

from operator import attrgetter, itemgetter
from typing import Any

from ..compiler.kernel import CompiledKernel, GlobalRead
from ..errors import StaleGlobalError

_MISSING = object()
_DEFAULTS = ("__defaults__", "__kwdefaults__")


class KernelGuard:
    """The launch-time check of one compiled kernel's global reads."""

    __slots__ = ("kernel", "reads", "probes")

    def __init__(self, kernel: CompiledKernel, reads: tuple[GlobalRead, ...]) -> None:
        self.kernel = kernel
        self.reads = reads
        probes = []
        for i, r in enumerate(reads):
            container = _container(r)
            fetch = itemgetter(r.path[0]) if len(r.path) == 1 and r.path[0] not in _DEFAULTS else attrgetter(r.path[-1])
            probes.append((fetch, container, r.value, i))
        self.probes = probes

    def check(self) -> None:
        """Raise StaleGlobalError if a value the kernel was compiled with has changed."""
        for fetch, container, expected, i in self.probes:
            try:
                current = fetch(container)
            except (KeyError, AttributeError, TypeError):
                current = _MISSING
            if current is not expected:
                self._changed(i, current)

    def _changed(self, i: int, current: Any) -> None:
        read = self.reads[i]
        if current is not _MISSING and same_value(read.value, current):
            fetch, container, _, _ = self.probes[i]
            self.probes[i] = (fetch, container, current, i)  # an equal value: follow it by identity from now on
            return
        raise StaleGlobalError(_message(self.kernel, read, current))


def guard_of(kernel: CompiledKernel) -> KernelGuard | None:
    """The kernel's guard (built on first use), or None when it read nothing outside its arguments."""
    d = kernel.__dict__
    if "_enceladus_guard" not in d:
        reads = kernel.metadata.get("global_reads") or ()
        d["_enceladus_guard"] = KernelGuard(kernel, tuple(reads)) if reads else None
    return d["_enceladus_guard"]


def check(kernel: CompiledKernel) -> None:
    """Raise StaleGlobalError if a global ``kernel`` was compiled with has changed since."""
    guard = guard_of(kernel)
    if guard is not None:
        guard.check()


def _container(read: GlobalRead) -> Any:
    """What a probe reads from: the owner's globals, the owner (defaults), or the object holding the attribute."""
    if read.path[0] in _DEFAULTS:
        return read.owner
    obj: Any = read.owner.__globals__
    if len(read.path) == 1:
        return obj
    obj = obj.get(read.path[0], _MISSING)
    for attr in read.path[1:-1]:
        obj = getattr(obj, attr, _MISSING)
    return obj


def same_value(old: Any, new: Any) -> bool:
    """Whether a kernel compiled with ``old`` is also right for ``new``: same type and the same value as the
    disk cache's keys describe it (ints and floats of one type, tuples element by element, @jit helpers by their
    code and globals)."""
    if old is new:
        return True
    if type(old) is not type(new):
        return False
    from .cache import Unkeyable, describe_value

    try:
        return describe_value(old) == describe_value(new)
    except Unkeyable:
        try:
            return bool(old == new)
        except Exception:  # noqa: BLE001 - a value without a usable ==: treat it as changed
            return False


def _show(value: Any) -> str:
    if value is _MISSING:
        return "<deleted>"
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _message(kernel: CompiledKernel, read: GlobalRead, current: Any) -> str:
    old, new = _show(read.value), _show(current)
    if getattr(read.value, "__enceladus_jit__", False) and old == new:
        new += " (its code or a global it reads changed)"
    if read.path[0] in _DEFAULTS:
        what = f"The defaults of {read.name.rsplit('.', 1)[0]} ({read.path[0]}) have"
    else:
        what = f"Global variable {read.name} has"
    return (f"{what} changed since we compiled this kernel, from {old} to {new}.\n"
            f"  kernel '{kernel.name}' reads it at {read.where}: {read.source_line}\n"
            f"fix: pass the value as an argument (a tl.constexpr parameter for compile-time values) instead of "
            f"changing a global, or clear the kernel's cache after changing it (kernel.cache.clear()) so that it "
            f"is compiled again")


# --- the disk cache's view ------------------------------------------------------------------------------------
def encode_reads(reads: tuple[GlobalRead, ...]) -> list[dict[str, Any]]:
    """A JSON form of the reads: owner function, path, a stable description of the value, location."""
    from .cache import Unkeyable, describe_value

    out = []
    for r in reads:
        try:
            desc: str | None = describe_value(r.value)
        except Unkeyable:
            desc = None
        out.append({"owner": _owner_id(r.owner), "path": list(r.path), "desc": desc, "where": r.where,
                    "line": r.source_line})
    return out


def bind_reads(fn: Any, constexprs: dict[str, Any], stored: list[dict[str, Any]]) -> tuple[GlobalRead, ...] | None:
    """The stored reads of a cached kernel bound to this process's functions, or None when one cannot be found or
    its current value differs from the one compiled in (the cached entry must not be used)."""
    from .cache import Unkeyable, describe_value

    owners = _reachable_functions(fn, constexprs)
    out = []
    for s in stored:
        owner = owners.get(s["owner"])
        if owner is None:
            return None
        path = tuple(s["path"])
        value = _resolve(owner, path)
        if value is _MISSING:
            return None
        if s["desc"] is not None:
            try:
                if describe_value(value) != s["desc"]:
                    return None
            except Unkeyable:
                return None
        out.append(GlobalRead(owner, path, value, str(s["where"]), str(s["line"])))
    return tuple(out)


def _resolve(owner: Any, path: tuple[str, ...]) -> Any:
    if path[0] in _DEFAULTS:
        return getattr(owner, path[0], _MISSING)
    obj = owner.__globals__.get(path[0], _MISSING)
    for attr in path[1:]:
        obj = getattr(obj, attr, _MISSING)
    return obj


def _owner_id(fn: Any) -> str:
    return f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', '?')}"


def _reachable_functions(fn: Any, constexprs: dict[str, Any]) -> dict[str, Any]:
    """The Python functions of ``fn`` and of every @jit function it can reach (globals, module attributes,
    constexpr arguments), by ``module:qualname``."""
    from .cache import _code_objects, _is_jit

    stack = [fn.fn] + [v.fn for v in constexprs.values() if _is_jit(v)]
    out: dict[str, Any] = {}
    while stack:
        f = stack.pop()
        key = _owner_id(f)
        if key in out:
            continue
        out[key] = f
        names = {n for c in _code_objects(f.__code__) for n in c.co_names}
        g = f.__globals__
        for n in names:
            v = g.get(n)
            if _is_jit(v):
                stack.append(v.fn)
            elif type(v).__name__ == "module":
                stack.extend(a.fn for a in (getattr(v, m, None) for m in names) if _is_jit(a))
    return out
