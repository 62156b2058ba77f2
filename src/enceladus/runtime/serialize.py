"""Writing the disk cache: ``CompiledKernel`` -> plain data (stored with marshal, shown as JSON), and the entries a
compiling process stores. No pickle: only Enceladus's own dataclasses are rebuilt.

The format is described in ``runtime/cache.py`` ("entries"), which reads it back: a fresh process that only loads
cached kernels imports that module and never this one (#26: each module on that path costs it 0.1-0.4 ms, most of it
unmarshalling the module's code). This module also names the reading side: ``from_payload``, ``from_json``,
``decode``, ``kernel_from_dict``, ``complete``, :class:`Opaque` and :class:`SerializationError`.
"""

from __future__ import annotations

import dataclasses
import math
import os
from typing import Any

from .. import cachedir
from ..compiler.kernel import CompiledKernel, KernelAsm
from .cache import (
    _PACKAGE,
    _RUNTIME_METADATA,
    FORMAT,
    Opaque,
    SerializationError,
    _entry_path,
    _note,
    cache_dir,
    complete,
    decode,
    from_payload,
    kernel_from_dict,
    log,
    read_entry,
    stats,
    write_entry,
)

__all__ = ["FORMAT", "Opaque", "SerializationError", "complete", "decode", "encode", "from_json", "from_payload",
           "kernel_from_dict", "kernel_to_dict", "load_data", "store_data", "store_kernel", "to_json", "to_payload",
           "write_entry"]


def _writable_entry_path(kind: str, key: str) -> str:
    """``_entry_path``; the first write of a process also removes temporaries interrupted writes left there."""
    root = cache_dir(kind)
    cachedir.sweep_stale_temporaries(root)
    return os.path.join(root, key[:2], f"{key}.json")


def encode(value: Any, *, strict: bool = True) -> Any:
    """The plain-data form of ``value`` (JSON-compatible). ``strict=False`` turns unknown objects into :class:`Opaque`."""
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


def _asm_names(asm: dict[str, str]) -> list[str]:
    return asm.names() if isinstance(asm, KernelAsm) else list(asm)


def kernel_to_dict(kernel: CompiledKernel) -> dict[str, Any]:
    """The plain-data form of a compiled kernel (JSON-compatible; without its loaded backend program)."""
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


def to_payload(kernel: CompiledKernel) -> bytes:
    """A compiled kernel as a cache entry's payload (read back by :func:`from_payload`)."""
    try:
        return cachedir.dump_data(kernel_to_dict(kernel))
    except ValueError as e:
        raise SerializationError(str(e)) from None


def to_json(kernel: CompiledKernel) -> str:
    """A compiled kernel as JSON text (what ``enceladus compile --abi`` and tools show; read back by
    :func:`from_json`)."""
    import json

    return json.dumps(kernel_to_dict(kernel), separators=(",", ":"), allow_nan=False)


def from_json(text: str | bytes) -> CompiledKernel:
    """A compiled kernel from :func:`to_json`'s text; raises :class:`SerializationError` if it is not one."""
    import json

    try:
        data = json.loads(text)
    except (ValueError, UnicodeDecodeError) as e:
        raise SerializationError(f"not a compiled kernel's JSON: {e}") from None
    return kernel_from_dict(data)


def store_kernel(key: str, kernel: CompiledKernel) -> bool:
    """Write ``kernel`` under ``key``; returns False (with a note) if it could not be stored."""
    try:
        payload = to_payload(kernel)
        write_entry(_writable_entry_path("kernels", key), payload, key)
    except SerializationError as e:
        log.info("kernel %s is not cached on disk: %s", kernel.name, e)
        return False
    except OSError as e:
        _note(f"cannot write the disk cache ({e}); continuing without it")
        return False
    stats.stored += 1
    return True


def load_data(kind: str, key: str) -> Any:
    """A plain value stored with :func:`store_data`, or None."""
    payload = read_entry(_entry_path(kind, key), key)
    if payload is None:
        return None
    try:
        return cachedir.load_data(payload)
    except ValueError:
        stats.corrupt += 1
        return None


def store_data(kind: str, key: str, value: Any) -> None:
    """Store a plain value (e.g. an autotuning result: dicts, lists, tuples, str, int, float, bool, None) under
    ``key``."""
    try:
        write_entry(_writable_entry_path(kind, key), cachedir.dump_data(value), key)
    except OSError as e:
        _note(f"cannot write the disk cache ({e}); continuing without it")
