"""The disk cache: compiled kernels (and autotuning results) keyed by content, shared by processes.

Layout of ``$ENCELADUS_CACHE_DIR`` (default ``~/.cache/enceladus``), every directory mode 0700::

    kernels/<k[:2]>/<k>.json    one compiled kernel: IR, MSL, ABI, metadata (plain data in marshal, no pickle)
    autotune/<k[:2]>/<k>.json   one autotuning result (with cache_results=True)
    cpu/                        the cpu backend's shared libraries (content-addressed by that backend)
                                and its compiler probes (probe-<k>.json: `CXX --version`, see toolchain.py)
    .kdigest-<stamp>            compiler_digest() of one installation (stamp: source paths, sizes, mtimes)

A kernel's key hashes the kernel's source, the source of every ``@jit`` function it calls
(transitively, found from the AST and ``fn.__globals__``), the values of the globals those functions
read, the specialization (signature, constexprs, divisibility / ==1 facts), the options, the Enceladus
version and a digest of the compiler's own sources, the Python version and the target. The kernel's
name matters only as part of its source. The cpu backend keys its libraries by the generated C++, its
headers, the host compiler's identity and flags, so a cached kernel's library is found without running
the C++ compiler.

Each file starts with a header line recording its own key, a SHA-256 and the length of the payload
(``enceladus/cachedir.py``); a truncated or damaged file, or one holding another key's entry, fails the
check, is deleted with one warning and the kernel is recompiled. Files are written to a temporary name in
the same directory and renamed into place, so concurrent processes never see half a file and two processes
compiling the same kernel both succeed. ``ENCELADUS_CACHE=0`` disables the cache (the cpu backend then
builds into a private temporary directory). The threat model is in docs/cache_and_autotune.md.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import os
import sys
from collections.abc import Callable
from typing import Any

from .. import cachedir
from ..cachedir import CacheSecurityError, load_data, sha256
from ..compiler.kernel import VERSION, CompiledKernel, KernelAsm, LazyDict, dump_kernel

__all__ = ["CacheSecurityError", "cache_base", "cache_dir", "enabled", "load_or_compile", "read_entry",
           "write_entry"]

log = cachedir.log
KINDS = ("kernels", "autotune", "cpu", "probes")
# plain strings and os.path throughout: importing pathlib would cost a fresh process ~3 ms
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # (realpath: ~7 lstat calls)


class CacheStats:
    """Counters for this process (tests and ``benchmarks/fresh_process.py`` read them). Plain classes here: the
    cached path of a fresh process imports this module, and a dataclass costs ~0.7 ms to create."""

    __slots__ = ("compiled", "disk_hits", "disk_misses", "stored", "corrupt", "unkeyable", "notes")

    def __init__(self) -> None:
        self.compiled = 0  # kernels compiled from source
        self.disk_hits = 0  # kernels loaded from the disk cache
        self.disk_misses = 0
        self.stored = 0
        self.corrupt = 0  # damaged entries found (and deleted)
        self.unkeyable = 0  # compilations whose inputs have no stable key (memory cache only)
        self.notes: list[str] = []

    def __repr__(self) -> str:
        return "CacheStats(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__) + ")"


stats = CacheStats()
stats.notes = cachedir.notes  # one list of warnings for the disk cache and the cpu backend's build cache


# --- where -----------------------------------------------------------------------------------------------
enabled = cachedir.enabled


def cache_base() -> str:
    """The user's cache directory (not created): ``$ENCELADUS_CACHE_DIR`` or ``~/.cache/enceladus``."""
    return cachedir.configured()


def cache_dir(kind: str) -> str:
    """``<cache>/<kind>`` of the directory in use (see enceladus/cachedir.py), created mode 0700 and checked."""
    if kind not in KINDS:
        raise ValueError(f"unknown cache kind {kind!r}; expected one of {', '.join(KINDS)}")
    return cachedir.subdir(kind)


# --- entries: keyed, checksummed, atomic ----------------------------------------------------------------------
def _entry_path(kind: str, key: str) -> str:
    return os.path.join(cache_dir(kind), key[:2], f"{key}.json")


def _key_of(path: str | os.PathLike) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def write_entry(path: str | os.PathLike, payload: bytes, key: str | None = None) -> None:
    """Write ``payload`` atomically with a header recording its key (default: the file's name), SHA-256 and
    length."""
    cachedir.write_entry(os.fspath(path), payload, key or _key_of(path))


def read_entry(path: str | os.PathLike, key: str | None = None) -> bytes | None:
    """The payload of a cache file written under ``key`` (default: the file's name), or None if it is missing.
    A damaged file, or one holding another key's entry, is deleted with a warning and reported as None."""
    before = len(cachedir.notes)
    payload = cachedir.read_entry(os.fspath(path), key or _key_of(path))
    if payload is None and len(cachedir.notes) > before:
        stats.corrupt += 1
    return payload


def _note(message: str) -> None:
    cachedir.note(message)


# --- keys ----------------------------------------------------------------------------------------------------
# besides compiler/ and language/: the compile errors, this module and serialize.py (they decide how an entry is read
# and written)
_FORMAT_SOURCES = (("errors.py",), ("runtime", "cache.py"), ("runtime", "serialize.py"))


def _compiler_sources() -> list[tuple[str, int, int]]:
    """``(path, size, mtime_ns)`` of every source that decides what a kernel compiles to."""
    rows = cachedir.stat_files(tuple(os.path.join(_PACKAGE_DIR, *p) for p in _FORMAT_SOURCES))
    for sub in ("compiler", "language"):
        rows += cachedir.stat_tree(os.path.join(_PACKAGE_DIR, sub), ".py")
    return rows


@functools.lru_cache(maxsize=1)
def compiler_digest() -> str:
    """Hash of the Enceladus version and the sources that decide what a kernel compiles to.

    Hashing the sources is a content hash; a fresh process first looks it up by a stamp of the files'
    paths, sizes and mtimes (``<cache>/.kdigest-<stamp>``, written after the first full hash), so an
    unchanged installation reads one small file instead of every compiler source.
    """
    try:
        rows = _compiler_sources()
    except OSError:
        return _hash_compiler_sources(None)
    files = [r[0] for r in rows]
    stamp = sha256(f"{_PACKAGE_DIR}\0{VERSION}\0{sys.version_info[:2]}\0{rows!r}".encode())
    memo = key = None
    if enabled():
        try:
            key = f"kdigest-{stamp.hexdigest()[:40]}"
            memo = os.path.join(cachedir.base(), f".{key}")  # a dot file: not listed as an entry
            digest = (cachedir.read_entry(memo, key) or b"").decode()
            if len(digest) == 64 and all(c in "0123456789abcdef" for c in digest):
                return digest
        except (OSError, CacheSecurityError, UnicodeDecodeError):
            memo = None
    digest = _hash_compiler_sources(files)
    if memo is not None and key is not None:
        with contextlib.suppress(OSError):
            cachedir.write_entry(memo, digest.encode(), key)
    return digest


def _hash_compiler_sources(files: list[str] | None) -> str:
    """The content hash of ``files`` (None: the sources found by walking the directories, unreadable ones
    included as missing)."""
    if files is None:
        files = [os.path.join(_PACKAGE_DIR, *p) for p in _FORMAT_SOURCES]
        for sub in ("compiler", "language"):
            found = []
            for root, dirs, names in os.walk(os.path.join(_PACKAGE_DIR, sub)):
                dirs[:] = [d for d in dirs if d != "__pycache__"]
                found.extend(os.path.join(root, n) for n in names if n.endswith(".py"))
            files += sorted(found)
    h = sha256(f"enceladus {VERSION} python {sys.version_info[:2]}".encode())
    for p in files:
        try:
            with open(p, "rb") as f:
                data = f.read()
        except OSError:
            data = b"<missing>"
        h.update(os.path.relpath(p, _PACKAGE_DIR).encode() + b"\0" + data + b"\0")
    return h.hexdigest()


def target() -> str:
    """The backend kernels are compiled for, decided the way ``runtime.backend.get_backend`` decides it."""
    name = os.environ.get("ENCELADUS_BACKEND", "").strip().lower()
    return name or ("metal" if sys.platform == "darwin" else "cpu")


class Unkeyable(Exception):
    """A value that has no stable, process-independent description (the kernel is then not cached on disk)."""


def _is_jit(obj: Any) -> bool:
    return bool(getattr(obj, "__enceladus_jit__", False)) and hasattr(obj, "source")


def describe_value(value: Any, seen: set[int] | None = None) -> str:
    """A stable text for a constexpr or global value; raises :class:`Unkeyable` if there is none."""
    from ..language.core import constexpr

    if isinstance(value, constexpr):
        value = value.value
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return f"{type(value).__name__}:{value!r}"
    if isinstance(value, (tuple, list)):
        return f"{type(value).__name__}(" + ",".join(describe_value(v, seen) for v in value) + ")"
    if _is_jit(value):
        return "jit:" + function_digest(value, seen)
    mod = getattr(type(value), "__module__", "") or ""
    if mod.split(".")[0] == "enceladus" and not callable(value):
        return f"{mod}.{type(value).__qualname__}:{value!r}"  # dtypes and other small frozen values
    if hasattr(value, "dtype") and getattr(value, "shape", None) == ():
        return f"np.{value.dtype}:{value.item()!r}"  # NumPy scalar
    if callable(value) or isinstance(value, type):
        mod = getattr(value, "__module__", None)
        qual = getattr(value, "__qualname__", None)
        if mod and qual and "<locals>" not in qual:
            return f"callable:{mod}.{qual}"
    if type(value).__name__ == "module":
        return f"module:{value.__name__}"
    raise Unkeyable(f"{type(value).__module__}.{type(value).__qualname__} value {value!r:.60}")


def _code_objects(code: Any) -> list[Any]:
    out = [code]
    for c in code.co_consts:
        if hasattr(c, "co_code"):
            out.extend(_code_objects(c))
    return out


def _hash_code(code: Any, h: Any) -> None:
    """Hash a code object by content (bytecode, constants, names, line table), not by its file path."""
    for part in (code.co_code, code.co_linetable, repr(code.co_names), repr(code.co_varnames),
                 f"{code.co_qualname}:{code.co_firstlineno}:{code.co_argcount}:{code.co_kwonlyargcount}"):
        h.update(part if isinstance(part, bytes) else part.encode())
        h.update(b"\0")
    for c in code.co_consts:
        if hasattr(c, "co_code"):
            _hash_code(c, h)
        else:
            h.update(f"{type(c).__name__}:{c!r}\0".encode())


def function_digest(fn: Any, seen: set[int] | None = None) -> str:
    """Hash of a ``@jit`` function and of everything it reads from its globals, transitively.

    The function is hashed by its code object (bytecode, constants, names, line numbers; Python's version
    is part of every key), annotations and defaults: the same source gives the same hash in every process
    and path, and reading it needs no source parsing. Globals are found from the code's names, as
    Triton's dependency finder does from the AST: ``@jit`` callees are hashed recursively, constants by
    value, attributes of imported modules (``mod.helper``, ``cfg.BLOCK``) by what they resolve to.
    """
    seen = set() if seen is None else seen
    if id(fn) in seen:
        return f"recursive:{fn.__name__}"
    seen.add(id(fn))
    func = fn.fn
    h = sha256()
    _hash_code(func.__code__, h)
    h.update(f"{os.path.basename(func.__code__.co_filename)}\0".encode())
    for extra in (getattr(func, "__annotations__", {}), func.__defaults__, func.__kwdefaults__):
        h.update(repr(_describe_loose(extra)).encode() + b"\0")
    glb = func.__globals__
    names = sorted({n for c in _code_objects(func.__code__) for n in c.co_names})
    for name in names:
        if name not in glb:
            continue  # an attribute name, a local, or a builtin
        value = glb[name]
        if type(value).__name__ == "module" or isinstance(value, type):
            if type(value).__name__ == "module" and (value.__name__ or "").split(".")[0] == "enceladus":
                continue  # tl.* itself is covered by compiler_digest()
            if isinstance(value, type):
                h.update(f"{name}={_describe_loose(value, seen)}\0".encode())
            for attr in names:  # mod.helper / cfg.BLOCK / Config.BLOCK: every name the code uses that it has
                if attr != name and hasattr(value, attr):
                    h.update(f"{name}.{attr}={_describe_loose(getattr(value, attr), seen)}\0".encode())
            continue
        h.update(f"{name}={_describe_loose(value, seen)}\0".encode())
    seen.discard(id(fn))
    return h.hexdigest()


def _describe_loose(value: Any, seen: set[int] | None = None) -> str:
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_describe_loose(v, seen)}" for k, v in value.items()) + "}"
    if isinstance(value, tuple) and not all(isinstance(v, (int, float, str, bool, type(None))) for v in value):
        return "(" + ",".join(_describe_loose(v, seen) for v in value) + ")"
    try:
        return describe_value(value, seen)
    except Unkeyable:
        return f"<{type(value).__qualname__}>"  # the compiler refuses such globals if a kernel uses them


def kernel_key(fn: Any, signature: dict[str, str], constexprs: dict[str, Any],
               facts: dict[str, tuple[bool, bool]], options: dict[str, Any]) -> str | None:
    """The disk-cache key of one specialization of ``fn``, or None when some input has no stable key."""
    try:
        parts = [
            "kernel", compiler_digest(), target(), function_digest(fn),
            repr(sorted(signature.items())),
            repr(sorted((k, describe_value(v)) for k, v in constexprs.items())),
            repr(sorted((k, tuple(bool(x) for x in v)) for k, v in facts.items())),
            repr(sorted((k, describe_value(v)) for k, v in options.items())),
        ]
    except Unkeyable as e:
        stats.unkeyable += 1
        log.info("kernel %s is not cached on disk: %s", getattr(fn, "__name__", fn), e)
        return None
    return sha256("\0".join(parts).encode()).hexdigest()[:48]


# --- entries: CompiledKernel <-> plain data, no pickle -----------------------------------------------------------
# The plain-data form of a cache entry, JSON-compatible: stored with ``marshal`` (``cachedir.dump_data``: built into
# the interpreter, so a fresh process loads no JSON decoder), shown as JSON text by the CLI. No pickle: only
# Enceladus's own dataclasses are rebuilt. Reading it back is here (a fresh process loading a cached kernel imports
# this module anyway); writing it is ``runtime/serialize.py`` (``encode``, ``to_payload``, ``to_json``,
# ``store_kernel``), imported by a process that compiles.
#
# The encoding is generic over the compiler's frozen dataclasses (``KernelABI``, ``Param``, ``Access``,
# ``BlockedLayout``, ``dtype``...), so a new layout class or a new ABI field needs no change here:
#
# - ``list``, ``str``, ``int``, ``float``, ``bool``, ``None`` map to themselves;
# - a tuple is ``{"t": [...]}``, a dict with non-string keys or a key starting with ``~`` is
#   ``{"~items": [[k, v], ...]}``, other dicts are ``{"d": {...}}``;
# - a dataclass defined in the ``enceladus`` package is ``{"dc": "module:QualName", "f": {field: value}}``;
# - anything else (a function read as a global, say) is ``{"opaque": repr(value)}`` and comes back as an
#   :class:`Opaque` — such values are informational only (``metadata["read_globals"]``).
#
# Decoding refuses any class outside the ``enceladus`` package, so a tampered cache file cannot
# make the loader import or construct arbitrary objects.

FORMAT = 4  # 2: global_reads; 3: metadata["cited_files"] (the function of each file a message cites); 4: marshal
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


def from_payload(payload: bytes) -> CompiledKernel:
    """A compiled kernel from a cache entry's payload (``serialize.to_payload``); raises :class:`SerializationError`
    if it is not one."""
    try:
        data = load_data(payload)
    except ValueError as e:
        raise SerializationError(f"cache entry cannot be decoded: {e}") from None
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


# --- kernels ---------------------------------------------------------------------------------------------------
def load_or_compile(fn: Any, signature: dict[str, str], constexprs: dict[str, Any],
                    facts: dict[str, tuple[bool, bool]], num_warps: int,
                    compile_kernel: Callable[..., CompiledKernel]) -> CompiledKernel:
    """One specialization of ``fn`` from the disk cache, else compiled with ``compile_kernel`` and stored.

    The result's ``metadata["cache"]`` says which: ``"disk"`` or ``"compiled"``.
    """
    # only what compile_kernel receives goes into the key (options it ignores would split the cache)
    key = kernel_key(fn, signature, constexprs, facts, {"num_warps": num_warps}) if enabled() else None
    kernel = load_kernel(key) if key else None
    if kernel is not None:
        from .guards import bind_reads

        reads = bind_reads(fn, constexprs, kernel.metadata.pop("stored_global_reads", []))
        if reads is None:  # a global it read differs from the one compiled in (a value the key cannot see)
            log.info("cached kernel %s read globals that have changed since; compiling it again", fn.__name__)
            stats.disk_hits -= 1
            stats.disk_misses += 1
            kernel = None
        else:
            kernel.metadata["global_reads"] = reads
            _relocate_cited_files(kernel.metadata, fn, constexprs)
    if kernel is not None:
        dump_kernel(kernel)  # ENCELADUS_DUMP: the same files as for a kernel compiled now
        return complete(kernel, target(), "disk")
    kernel = compile_kernel(fn.source, fn.__name__, fn.param_names, signature, constexprs, facts,
                            num_warps=num_warps, origin=os.path.basename(fn.source.filename))
    _name_cited_files(kernel.metadata, fn, constexprs)
    stats.compiled += 1
    if key:
        from .serialize import store_kernel

        store_kernel(key, kernel)
    return complete(kernel, target(), "compiled")


def _cited_files(metadata: dict[str, Any]) -> set[str]:
    """The source files a compiled kernel's messages cite: its line table (MSL line -> kernel line, for the cpu
    backend's checks), its device-log sites (tl.device_assert, tl.device_print, the MSL's bounds checks) and the
    lines that read globals (StaleGlobalError)."""
    table = metadata.get("line_table")
    files = {table.get("file")} if isinstance(table, dict) else set()
    files.update(site.get("file") for site in metadata.get("log_sites") or ())
    files.update(read.where.rpartition(":")[0] for read in metadata.get("global_reads") or ())
    files.discard(None)
    files.discard("")
    return files


def _name_cited_files(metadata: dict[str, Any], fn: Any, constexprs: dict[str, Any]) -> None:
    """Record which function each cited file belongs to (``metadata["cited_files"]``: path -> ``module:qualname``),
    so that a process loading the entry can name those files as it has them (``_relocate_cited_files``)."""
    files = _cited_files(metadata)
    if not files:
        return
    from .guards import _owner_id, _reachable_functions

    own = fn.fn.__code__.co_filename
    sites = {own: _owner_id(fn.fn)} if own in files else {}
    if files - sites.keys():
        for key, f in _reachable_functions(fn, constexprs).items():
            file = getattr(getattr(f, "__code__", None), "co_filename", None)
            if file in files:
                sites.setdefault(file, key)
    metadata["cited_files"] = sites


def _relocate_cited_files(metadata: dict[str, Any], fn: Any, constexprs: dict[str, Any]) -> None:
    """Point a cached kernel's cited files at the files as this process has them. The key holds a function's file
    name and lines but not its folder, so the entry may have been written by a copy of the same code elsewhere
    (another checkout, a moved project), whose files may since hold other text. A file whose function is not found
    here is cited by name only."""
    sites = metadata.get("cited_files")
    if not sites:
        return
    from .guards import _owner_id, _reachable_functions

    own = _owner_id(fn.fn)
    owners = None
    moved = {}
    for old, site in sites.items():
        if site == own:
            f = fn.fn
        else:
            owners = _reachable_functions(fn, constexprs) if owners is None else owners
            f = owners.get(site)
        here = getattr(getattr(f, "__code__", None), "co_filename", None) or os.path.basename(old)
        if here != old:
            moved[old] = here
    if not moved:
        return
    table = metadata.get("line_table")
    if isinstance(table, dict) and table.get("file") in moved:
        metadata["line_table"] = {**table, "file": moved[table["file"]]}
    if metadata.get("log_sites"):
        metadata["log_sites"] = [{**site, "file": moved[site["file"]]} if site.get("file") in moved else site
                                 for site in metadata["log_sites"]]
    for read in metadata.get("global_reads") or ():
        file, _, line = read.where.rpartition(":")
        if file in moved:
            read.where = f"{moved[file]}:{line}"


def load_kernel(key: str) -> CompiledKernel | None:
    """The cached kernel for ``key``, or None (missing, damaged or unreadable entries count as misses)."""
    payload = read_entry(_entry_path("kernels", key), key)
    if payload is None:
        stats.disk_misses += 1
        return None
    try:
        kernel = from_payload(payload)
    except SerializationError as e:
        stats.corrupt += 1
        _note(f"cache entry {key} cannot be read back ({e}); it will be rebuilt")
        return None
    stats.disk_hits += 1
    return kernel

