"""``CompiledKernel`` <-> JSON, for the disk cache. No pickle: only Enceladus's own dataclasses are rebuilt.

The encoding is generic over the compiler's frozen dataclasses (``KernelABI``, ``Param``, ``Access``,
``BlockedLayout``, ``dtype``...), so a new layout class or a new ABI field needs no change here:

- ``list``, ``str``, ``int``, ``float``, ``bool``, ``None`` map to themselves;
- a tuple is ``{"t": [...]}``, a dict with non-string keys or a key starting with ``~`` is
  ``{"~items": [[k, v], ...]}``, other dicts are ``{"d": {...}}``;
- a dataclass defined in the ``enceladus`` package is ``{"dc": "module:QualName", "f": {field: value}}``;
- anything else (a function read as a global, say) is ``{"opaque": repr(value)}`` and comes back as an
  :class:`Opaque` — such values are informational only (``metadata["read_globals"]``).

Decoding refuses any class outside the ``enceladus`` package, so a tampered cache file cannot
make the loader import or construct arbitrary objects.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
from typing import Any

from ..cachedir import loads
from ..compiler.kernel import CompiledKernel, KernelAsm, LazyDict

FORMAT = 2  # 2: global_reads
_RUNTIME_METADATA = ("read_globals", "global_reads", "cache", "target")  # not stored: read_globals separately, the rest per process
_PACKAGE = "enceladus"


class SerializationError(ValueError):
    """A value cannot be written to (or read back from) the disk cache."""


class Opaque:
    """Stands in for a value that has no JSON form (its ``repr`` is kept for display). Immutable; a plain class
    rather than a dataclass, which would cost a fresh process loading a cached kernel ~0.7 ms to create."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        object.__setattr__(self, "text", text)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Opaque is immutable (cannot set {name!r})")

    def __eq__(self, other: object) -> bool:
        return type(other) is Opaque and other.text == self.text

    def __hash__(self) -> int:
        return hash(("Opaque", self.text))

    def __repr__(self) -> str:
        return self.text


def encode(value: Any, *, strict: bool = True) -> Any:
    """A JSON-compatible form of ``value``. ``strict=False`` turns unknown objects into :class:`Opaque`."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return {"f": repr(value)}  # nan / inf: JSON has no literal for them
    if isinstance(value, tuple):
        return {"t": [encode(v, strict=strict) for v in value]}
    if isinstance(value, list):
        return [encode(v, strict=strict) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("~") for k in value):
            return {"d": {k: encode(v, strict=strict) for k, v in value.items()}}
        return {"~items": [[encode(k, strict=strict), encode(v, strict=strict)] for k, v in value.items()]}
    if isinstance(value, Opaque):
        return {"opaque": value.text}
    cls = type(value)
    if dataclasses.is_dataclass(value) and cls.__module__.split(".")[0] == _PACKAGE:
        fields = {f.name: encode(getattr(value, f.name), strict=strict)
                  for f in dataclasses.fields(value) if f.init}
        return {"dc": f"{cls.__module__}:{cls.__qualname__}", "f": fields}
    if hasattr(value, "item") and hasattr(value, "dtype") and getattr(value, "shape", None) == ():
        return encode(value.item(), strict=strict)  # NumPy scalar
    if strict:
        raise SerializationError(f"cannot store a {cls.__module__}.{cls.__qualname__} in the disk cache")
    return {"opaque": repr(value)}


_CLASSES: dict[str, type] = {}  # "module:QualName" -> the dataclass, once resolved


def _resolve_class(path: str) -> type:
    cls = _CLASSES.get(path)
    if cls is not None:
        return cls
    module, _, qualname = path.partition(":")
    if module.split(".")[0] != _PACKAGE or not qualname:
        raise SerializationError(f"cache entry names class {path!r}, which is not an Enceladus dataclass")
    try:
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as e:
        raise SerializationError(f"cache entry names unknown class {path!r}: {e}") from None
    if not (isinstance(obj, type) and dataclasses.is_dataclass(obj)):
        raise SerializationError(f"cache entry names {path!r}, which is not a dataclass")
    _CLASSES[path] = obj
    return obj


def decode(data: Any) -> Any:
    """The inverse of :func:`encode`; raises :class:`SerializationError` on anything it did not write."""
    if data is None or isinstance(data, (bool, str, int, float)):
        return data
    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict) or len(data) not in (1, 2):
        raise SerializationError(f"unexpected value in cache entry: {str(data)[:80]}")
    if "t" in data:
        return tuple(decode(v) for v in data["t"])
    if "d" in data:
        return {k: decode(v) for k, v in data["d"].items()}
    if "~items" in data:
        return {_hashable(decode(k)): decode(v) for k, v in data["~items"]}
    if "f" in data and "dc" not in data:
        return float(data["f"])
    if "opaque" in data:
        return Opaque(str(data["opaque"]))
    if "dc" in data:
        cls = _resolve_class(data["dc"])
        fields = data.get("f")
        if not isinstance(fields, dict):
            raise SerializationError(f"cache entry for {data['dc']} has no fields")
        try:
            return cls(**{k: decode(v) for k, v in fields.items()})
        except TypeError as e:
            raise SerializationError(f"cache entry does not match {data['dc']}: {e}") from None
    raise SerializationError(f"unexpected value in cache entry: {str(data)[:80]}")


def _hashable(v: Any) -> Any:
    return tuple(_hashable(x) for x in v) if isinstance(v, list) else v


def _asm_names(asm: dict[str, str]) -> list[str]:
    return asm.names() if isinstance(asm, KernelAsm) else list(asm)


def kernel_to_dict(kernel: CompiledKernel) -> dict[str, Any]:
    """The JSON-compatible form of a compiled kernel (without its loaded backend program)."""
    metadata = {k: v for k, v in kernel.metadata.items() if k not in _RUNTIME_METADATA}
    read_globals = kernel.metadata.get("read_globals", {})
    return {
        "format": FORMAT,
        "name": kernel.name,
        "asm": encode({k: kernel.asm[k] for k in _asm_names(kernel.asm) if k != "cpp"}),
        "abi": encode(kernel.abi),
        "metadata": encode(metadata),
        "read_globals": encode(dict(read_globals), strict=False),
        "global_reads": _encode_reads(kernel.metadata.get("global_reads") or ()),
        "accesses": encode(list(kernel.accesses)),
    }


def _encode_reads(reads: Any) -> list:
    from .guards import encode_reads

    return encode_reads(tuple(reads))


def kernel_from_dict(data: dict[str, Any]) -> CompiledKernel:
    """Rebuild a compiled kernel written by :func:`kernel_to_dict`."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise SerializationError(f"cache entry has format {data.get('format') if isinstance(data, dict) else '?'}, "
                                 f"expected {FORMAT}")
    try:
        metadata = _decode_metadata(data["metadata"])
        metadata["read_globals"] = decode(data["read_globals"])
        metadata["stored_global_reads"] = list(data["global_reads"])  # bound to this process by the cache
        return CompiledKernel(name=data["name"], asm=decode(data["asm"]), abi=decode(data["abi"]),
                              metadata=metadata, accesses=decode(data["accesses"]))
    except KeyError as e:
        raise SerializationError(f"cache entry lacks {e}") from None


def _decode_metadata(data: Any) -> dict[str, Any]:
    """``decode`` of a kernel's metadata, leaving ``"layouts"`` to be decoded on first use: a launch never reads
    it, and decoding it would import the compiler's layout classes into a process that only launches."""
    fields = data.get("d") if isinstance(data, dict) and len(data) == 1 else None
    if not isinstance(fields, dict) or "layouts" not in fields:
        return decode(data)
    rest = decode({"d": {k: v for k, v in fields.items() if k != "layouts"}})
    raw = fields["layouts"]
    return LazyDict(rest, lazy={"layouts": lambda: decode(raw)})


def to_json(kernel: CompiledKernel) -> str:
    """A compiled kernel as JSON text."""
    import json  # (readers use cachedir.loads: a process that only loads cached kernels never imports json)

    return json.dumps(kernel_to_dict(kernel), separators=(",", ":"), allow_nan=False)


def from_json(text: str | bytes) -> CompiledKernel:
    """A compiled kernel from :func:`to_json`'s text; raises :class:`SerializationError` if it is not one."""
    try:
        data = loads(text)
    except (ValueError, UnicodeDecodeError) as e:
        raise SerializationError(f"cache entry is not valid JSON: {e}") from None
    return kernel_from_dict(data)


def complete(kernel: CompiledKernel, target: str, origin: str) -> CompiledKernel:
    """Add what the runtime knows to a compiled kernel: ``metadata["target"]``, ``["simd_groups"]``,
    ``["cache"]`` (``"disk"`` or ``"compiled"``) and, for the cpu backend, ``asm["cpp"]`` (see :class:`KernelAsm`)."""
    md = kernel.metadata
    md["target"] = target
    md["cache"] = origin
    md.setdefault("simd_groups", md.get("num_warps"))
    md.setdefault("threadgroup_memory", kernel.abi.threadgroup_memory)
    if not isinstance(kernel.asm, KernelAsm):
        kernel.asm = KernelAsm(kernel.asm)
    if target == "cpu":
        kernel.asm.add_lazy("cpp", lambda: _cpp_of(kernel.asm["msl"]))
    return kernel


def _cpp_of(msl: str) -> str:
    """The C++ translation unit the cpu backend builds from this MSL."""
    from ..backends.cpu.signature import parse_kernels
    from ..backends.cpu.translate import translation_unit

    return translation_unit(msl, parse_kernels(msl))
