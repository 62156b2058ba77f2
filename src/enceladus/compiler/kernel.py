"""What compiling produces: ``CompiledKernel`` (MSL, IR text, metadata) and its ``KernelABI``.

Light on purpose: the runtime loads cached kernels and launches them without importing the compiler.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

VERSION = "0.1.0"


@dataclass
class Param:
    """One kernel parameter as the host binds it."""

    name: str
    kind: str  # 'buffer' or 'scalar'
    type: str  # '*fp32', 'int32', ...
    slot: int | None = None  # buffer slot
    offset: int | None = None  # byte offset in the scalar struct
    writes: bool = False  # the kernel stores through this pointer


@dataclass
class Access:
    """What codegen decided for one load or store (shown by explain())."""

    kind: str
    line: int | None
    dtype: str
    shape: tuple[int, ...]
    vector: int  # elements per access
    bytes: int
    reason: str

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line else ""
        width = f"{self.vector} x {self.dtype} ({self.bytes} bytes)"
        return f"{where}{self.kind} {list(self.shape)} {width}: {self.reason}"


@dataclass(frozen=True)
class KernelABI:
    """How the host binds a compiled kernel's arguments (shared by every backend)."""

    kernel_name: str
    params: tuple[Param, ...]
    args_slot: int | None  # buffer slot of the packed scalar struct
    args_size: int
    args_format: tuple[tuple[str, int, str], ...]  # (name, byte offset, dtype name) of each packed scalar
    threads_per_threadgroup: int
    threadgroup_memory: int = 0

    @property
    def buffer_params(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.kind == "buffer")


class LazyDict(dict):
    """A dict some of whose values are made on first use: registered with :meth:`add_lazy`. Iterating,
    ``keys()``/``items()``/``values()``, ``==`` and ``len()`` see every key, lazy ones included."""

    def __init__(self, data: dict[str, Any] | None = None, lazy: dict[str, Callable[[], Any]] | None = None):
        super().__init__(data or {})
        self._lazy: dict[str, Callable[[], Any]] = {}
        for key, make in (lazy or {}).items():
            self.add_lazy(key, make)

    def add_lazy(self, key: str, make: Callable[[], Any]) -> None:
        """Make ``self[key]`` with ``make()`` when it is first read (unless it is already there)."""
        if not dict.__contains__(self, key):
            self._lazy[key] = make

    def names(self) -> list[str]:
        """Every key, without making the lazy values."""
        return [*dict.keys(self), *self._lazy]

    def _make(self, key: str) -> Any:
        # threads may read one kernel's metadata at once (the autotuner compiles configs on a thread pool, and
        # configs that differ only in num_stages share a kernel): the value is stored before the maker is dropped,
        # so a thread that finds the maker gone reads the value; two threads may both make it (the same value)
        make = self._lazy.get(key)
        if make is None:
            return dict.__getitem__(self, key)
        value = make()
        dict.__setitem__(self, key, value)
        self._lazy.pop(key, None)
        return value

    def _make_all(self) -> None:
        for key in list(self._lazy):
            self._make(key)

    def __missing__(self, key: str) -> Any:
        if key in self._lazy:
            return self._make(key)
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or key in self._lazy

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default  # noqa: SIM401 - dict.get skips __missing__

    def keys(self) -> Any:
        self._make_all()
        return dict.keys(self)

    def items(self) -> Any:
        self._make_all()
        return dict.items(self)

    def values(self) -> Any:
        self._make_all()
        return dict.values(self)

    def __iter__(self) -> Any:
        self._make_all()
        return dict.__iter__(self)

    def __len__(self) -> int:
        return dict.__len__(self) + len(self._lazy)

    def __eq__(self, other: object) -> bool:
        self._make_all()
        return dict.__eq__(self, other)

    def pop(self, key: str, *default: Any) -> Any:
        if key in self._lazy:
            self._make(key)
        return dict.pop(self, key, *default)

    def setdefault(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else dict.setdefault(self, key, default)

    def __setitem__(self, key: str, value: Any) -> None:
        self._lazy.pop(key, None)
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: str) -> None:
        if self._lazy.pop(key, None) is None:  # a key is either lazy or in the dict, never both
            dict.__delitem__(self, key)

    def copy(self) -> dict[str, Any]:
        self._make_all()
        return dict.copy(self)

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():  # (dict.update would leave a lazy maker beside the value)
            self[key] = value

    @classmethod
    def copy_of(cls, source: dict[str, Any]) -> LazyDict:
        """A copy of ``source`` (a dict or a LazyDict) that makes nothing: a value ``source`` has yet to make is
        read from ``source`` on first use, so it is made once for both."""
        pending = tuple(getattr(source, "_lazy", ()))  # before the values: a key made meanwhile is still read
        return cls(dict(dict.items(source)), {key: lambda key=key: source[key] for key in pending})

    def __repr__(self) -> str:
        self._make_all()
        return dict.__repr__(self)

    __hash__ = None  # type: ignore[assignment]


class KernelAsm(LazyDict):
    """``kernel.asm``: the kernel's texts by name ("ir", "ir_layouts", "msl"; "cpp" on the cpu backend).

    Texts nobody may read are registered with :meth:`add_lazy` and made on first use: the IR printouts
    (formatting them costs about a sixth of a small kernel's compile) and the cpu backend's C++ translation
    unit (a pure function of the MSL). Iterating, ``keys()``/``items()``/``values()`` and ``len()`` see
    every text, lazy ones included.
    """


@dataclass(eq=False)
class GlobalRead:
    """One value a compilation read from outside the kernel's arguments: a global of ``owner`` (``path`` =
    ``("BLOCK",)``), an attribute of one (``("cfg", "BLOCK")``) or ``owner``'s ``("__defaults__",)`` /
    ``("__kwdefaults__",)``. The runtime compares it again on every launch (runtime/guards.py)."""

    owner: Any  # the Python function whose globals (or defaults) were read
    path: tuple[str, ...]
    value: Any
    where: str  # file:line of the first read
    source_line: str = ""

    @property
    def name(self) -> str:
        """How the kernel's source spells it (``cfg.BLOCK``, ``helper.__defaults__``)."""
        if self.path[0] in ("__defaults__", "__kwdefaults__"):
            return f"{getattr(self.owner, '__qualname__', '?')}.{self.path[0]}"
        return ".".join(self.path)


@dataclass
class CompiledKernel:
    """A kernel compiled to MSL for one specialization."""

    name: str
    asm: dict[str, str]
    abi: KernelABI
    metadata: dict[str, Any]
    accesses: list[Access] = field(default_factory=list)
    program: Any = None  # the backend's loaded function, built on first launch

    def explain(self) -> str:
        lines = [f"kernel {self.name}: {self.abi.threads_per_threadgroup} threads per threadgroup "
                 f"({self.metadata['num_warps']} SIMD groups of 32), threadgroup memory {self.abi.threadgroup_memory} "
                 "bytes"]
        lines.append("layouts:")
        for i, lay in enumerate(self.metadata["layouts"]):
            lines.append(f"  L{i} = {lay}: {lay.elems_per_thread} elements per thread")
        lines.append("memory accesses:")
        for a in self.accesses:
            lines.append(f"  {a}")
        lines.append(f"barriers: {self.metadata.get('barriers', 0)}")
        for note in self.metadata.get("notes", []):
            lines.append(f"  {note}")
        lines.append("IR:")
        lines.append(self.asm["ir_layouts"])
        return "\n".join(lines)


def dump_kernel(ck: CompiledKernel) -> None:
    """``ENCELADUS_DUMP=dir``: write a kernel's IR (with layouts) and MSL there, whether it was compiled now or
    loaded from the disk cache (``<name>-<hash of the MSL>.ir`` / ``.metal``)."""
    import os

    out = os.environ.get("ENCELADUS_DUMP")
    if not out:
        return
    import hashlib

    os.makedirs(out, exist_ok=True)
    tag = hashlib.sha256(ck.asm["msl"].encode()).hexdigest()[:12]
    for kind, ext in (("ir_layouts", "ir"), ("msl", "metal")):
        path = os.path.join(out, f"{ck.name}-{tag}.{ext}")
        with open(path, "w") as f:
            f.write(ck.asm[kind] + ("\n" if not ck.asm[kind].endswith("\n") else ""))


# --- MSL kernel signatures (parsed by compiler/msl_signature.py; here so that a process loading a cached kernel
# builds them without importing the parser) ---------------------------------------------------------------
class KernelParam(tuple):
    """One kernel parameter: ``(name, msl_type, address_space, attribute, index)``.

    A named tuple written out (a ``typing.NamedTuple`` class costs a fresh process ~0.4 ms to create, and cached
    kernels load through this module): the same fields, tuple behaviour, ``_fields``, ``_replace`` and ``_asdict``."""

    __slots__ = ()
    _fields = ("name", "msl_type", "address_space", "attribute", "index")

    def __new__(cls, name: str, msl_type: str, address_space: str | None, attribute: str,
                index: int | None) -> KernelParam:
        return tuple.__new__(cls, (name, msl_type, address_space, attribute, index))

    name = property(itemgetter(0), doc="the parameter's name")
    msl_type = property(itemgetter(1), doc='declared type without the name, e.g. "device const half*"')
    address_space = property(itemgetter(2), doc="device, constant, threadgroup, thread, or None")
    attribute = property(itemgetter(3), doc='"buffer", "threadgroup", "texture", "sampler" or a builtin such as '
                                            '"thread_position_in_grid"')
    index = property(itemgetter(4), doc="the resource slot, or None")

    def __repr__(self) -> str:
        return "KernelParam(" + ", ".join(f"{f}={v!r}" for f, v in zip(self._fields, self)) + ")"

    def __getnewargs__(self) -> tuple:
        return tuple(self)

    def _replace(self, **changes: object) -> KernelParam:
        values = dict(zip(self._fields, self))
        unknown = set(changes) - set(values)
        if unknown:
            raise ValueError(f"KernelParam has no field(s) {', '.join(sorted(unknown))}")
        values.update(changes)
        return KernelParam(**values)  # type: ignore[arg-type]

    def _asdict(self) -> dict[str, object]:
        return dict(zip(self._fields, self))


class KernelSignature:
    """A parsed ``kernel void NAME(...)`` declaration. A plain class: a fresh process that loads a cached kernel
    creates it, and a dataclass (~0.7 ms) or a NamedTuple (~0.3 ms) costs more to create than the load's own work."""

    __slots__ = ("name", "params", "line")

    def __init__(self, name: str, params: list[KernelParam], line: int) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "params", params)
        object.__setattr__(self, "line", line)  # 1-based line of the declaration in the MSL text

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"KernelSignature is immutable (cannot set {name!r})")

    def __eq__(self, other: object) -> bool:
        return type(other) is KernelSignature and (self.name, self.params, self.line) == \
            (other.name, other.params, other.line)

    __hash__ = None  # type: ignore[assignment]  (params is a list)

    def __repr__(self) -> str:
        return f"KernelSignature(name={self.name!r}, params={self.params!r}, line={self.line})"

    @property
    def buffer_params(self) -> list[KernelParam]:
        return [p for p in self.params if p.attribute == "buffer"]

    @property
    def threadgroup_params(self) -> list[KernelParam]:
        return [p for p in self.params if p.attribute == "threadgroup"]

    def __str__(self) -> str:
        inner = ", ".join(
            f"{p.msl_type} {p.name} [[{p.attribute}{'' if p.index is None else f'({p.index})'}]]"
            for p in self.params
        )
        return f"kernel void {self.name}({inner})"
