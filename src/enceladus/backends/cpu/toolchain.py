"""Host C++ compiler discovery and the lookups of the on-disk build cache: the keys, flags, records and index entries
through which a process finds a compiler's answer, the cpu runtime and a kernel's library already built. Probing a
compiler and building (and recording what was built) is ``build.py``, imported only then."""

from __future__ import annotations

import functools
import os
import sys

from ... import cachedir
from ...cachedir import CacheSecurityError, sha256
from . import CompilerNotFoundError, CpuBackendError

# plain strings and os.path throughout: importing pathlib would cost a fresh process ~3 ms
_HERE = os.path.dirname(os.path.abspath(__file__))  # (realpath: ~7 lstat calls per process)
INCLUDE_DIR = os.path.join(_HERE, "include")
RUNTIME_SOURCE = os.path.join(_HERE, "runtime.cpp")

# ELF (Linux): a loaded kernel library takes two memory mappings (read+execute, read-write) instead of five
# (code, read-only data and RELRO get their own by default). A process may hold vm.max_map_count mappings
# (65530 by default): five per library ran out at about 13,000 specializations in one process, two leave
# room for 20,000 and more (benchmarks/many_specializations.py). What is given up: RELRO's read-only GOT and
# non-executable constants, hardening against memory-corruption exploits of the kernel libraries themselves.
ELF_LINK_FLAGS: tuple[str, ...] = ("-Wl,-z,noseparate-code", "-Wl,-z,norelro") if sys.platform.startswith("linux") \
    else ()

# Flags for kernel translation units: -fwrapv (signed overflow wraps, so the host compiler cannot
# exploit it: NOT Metal's semantics, where signed overflow is undefined, MSL spec 4 §3.1; generated
# kernels do the arithmetic Triton defines as wrapping in unsigned types, and the UBSan mode below
# builds without -fwrapv to catch what is left), as_type-style punning (-fno-strict-aliasing), no
# exceptions/RTTI (Metal has none), no FMA contraction (results reproducible across compilers),
# signed char as in Metal, and no system or C++ standard headers (Metal has no standard library).
KERNEL_FLAGS = (
    "-std=c++17",
    "-O2",
    "-fPIC",
    "-shared",
    "-fwrapv",
    "-fno-strict-aliasing",
    "-fno-exceptions",
    "-fno-rtti",
    "-ffp-contract=off",
    "-fsigned-char",
    "-fvisibility=hidden",
    "-nostdinc",
    "-nostdinc++",
    *ELF_LINK_FLAGS,
)
# UBSan mode (ENCELADUS_CPU_UBSAN=1): kernels built without -fwrapv, with signed-overflow and shift checks whose
# reports go through include/enceladus/ubsan.h to the launch's error (clang only; see docs/cpu_backend.md).
UBSAN_ENV = "ENCELADUS_CPU_UBSAN"
UBSAN_CHECKS = "signed-integer-overflow,shift"
UBSAN_FLAGS = (f"-fsanitize={UBSAN_CHECKS}", f"-fsanitize-recover={UBSAN_CHECKS}")
# The runtime library is loaded and its SHA-256 checked by every process that launches: without a page-aligned
# segment of its own for the code (-z noseparate-code, as for kernels) the file is 58 KB instead of 66 KB, and takes
# two memory mappings fewer (RELRO is kept); without its local symbol table (-s: the exported functions stay in the
# dynamic one, which is all dlopen and dladdr read; a debugger no longer names the runtime's hidden functions) 48 KB
# (#26: 0.03 ms less to hash per process).
RUNTIME_FLAGS = ("-std=c++17", "-O2", "-fPIC", "-shared", "-pthread", "-fvisibility=hidden",
                 *(("-Wl,-z,noseparate-code", "-Wl,-s") if sys.platform.startswith("linux") else ()))
# Every kernel translation unit starts with the same prelude (the compatibility headers, ~2,700 lines). With clang it
# is parsed once into a precompiled header per prelude, compiler and flags, cached like a library: a small kernel's
# build takes about a quarter less CPU time, and the library is byte for byte the same
# (tests/backends/cpu/test_toolchain.py). No timestamps in it: the cache key holds the headers' digest, and clang
# still refuses the header if an included file changed size. ENCELADUS_CPU_PCH=0 turns it off.
PCH_ENV = "ENCELADUS_CPU_PCH"
PCH_FLAGS = ("-Xclang", "-fno-pch-timestamp")
INSTALL_HINT = (
    "install one of: clang (`apt-get install -y clang`, preferred), g++ (`apt-get install -y g++`), "
    "or the ziglang package (`pip install ziglang`); or set ENCELADUS_CXX to a C++ compiler command"
)


class CompilerInfo:
    """A host C++ compiler: the command to run it, its family and its version banner. Immutable; a plain class
    (a fresh process creates it, and a dataclass costs ~0.7 ms to create)."""

    __slots__ = ("command", "kind", "version")

    def __init__(self, command: tuple[str, ...], kind: str, version: str) -> None:
        object.__setattr__(self, "command", tuple(command))
        object.__setattr__(self, "kind", kind)  # "clang", "gcc" or "zig" (zig c++ is clang underneath)
        object.__setattr__(self, "version", version)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"CompilerInfo is immutable (cannot set {name!r})")

    def __eq__(self, other: object) -> bool:
        return type(other) is CompilerInfo and (self.command, self.kind, self.version) == \
            (other.command, other.kind, other.version)

    def __hash__(self) -> int:
        return hash((self.command, self.kind, self.version))

    def __repr__(self) -> str:
        return f"CompilerInfo(command={self.command!r}, kind={self.kind!r}, version={self.version!r})"

    @property
    def warning_flags(self) -> tuple[str, ...]:
        # Metal's [[...]] attributes are unknown to C++; the launcher binds them instead.
        if self.kind == "gcc":
            return ("-Wno-attributes",)
        return ("-Wno-unknown-attributes",)

    @property
    def identity(self) -> str:
        return f"{' '.join(self.command)}\n{self.version}"


def _which(name: str) -> str | None:
    """``shutil.which`` for an executable name (shutil itself imports bz2 and lzma: ~5 ms at startup)."""
    for d in os.environ.get("PATH", os.defpath).split(os.pathsep):
        p = os.path.join(d or ".", name)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


def _executable_stamp(command: tuple[str, ...]) -> str | None:
    """What identifies the compiler a command runs: the path of its executable and the device, inode, size and
    mtime of the file that path leads to (``os.stat`` follows symbolic links: a link pointed at another compiler
    leads to another inode), and the same of the ziglang package for ``python -m ziglang``; None when it cannot
    be found. (No ``realpath``: resolving a link chain costs a fresh process one ``lstat`` per path component.)"""
    exe = command[0] if os.sep in command[0] else _which(command[0])
    if not exe:
        return None
    paths = [exe]
    if "ziglang" in command:
        import importlib.util

        spec = importlib.util.find_spec("ziglang")
        if spec is None or not spec.origin:
            return None
        paths.append(spec.origin)
    parts = []
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            return None
        parts.append(f"{p}:{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}")
    return "\n".join(parts)


def _probe_cached(command: tuple[str, ...]) -> CompilerInfo | None:
    """``_probe`` with its answer remembered in the cache directory (``probe-<key>.json``), keyed by the
    command and the executable's real path, size and mtime: running ``CXX --version`` costs ~30 ms per
    process. The directory is checked like the libraries' (private to the user); if it cannot be used,
    the compiler is probed every time."""
    stamp = _executable_stamp(command)
    if stamp is None:
        from .build import probe

        return probe(command)
    key = "cxx-" + sha256(cachedir.dumps_plain([list(command), stamp]).encode()).hexdigest()[:40]
    try:
        path = os.path.join(cache_dir(), f"{key}.json")
    except (OSError, CacheSecurityError):
        from .build import probe

        return probe(command)
    try:
        data = cachedir.read_data(path, key)
        if data["command"] == list(command) and data["stamp"] == stamp:
            return CompilerInfo(command=command, kind=str(data["kind"]), version=str(data["version"]))
    except (ValueError, KeyError, TypeError):
        pass
    from .build import probe, write_record

    info = probe(command)
    if info is None:
        return None
    record = {"command": list(command), "stamp": stamp, "kind": info.kind, "version": info.version}
    write_record(path, record, key)
    return info


@functools.lru_cache(maxsize=16)
def _find_compiler_cached(override: str | None) -> CompilerInfo:
    if override:
        import shlex

        info = _probe_cached(tuple(shlex.split(override)))
        if info is None:
            raise CompilerNotFoundError(
                f"ENCELADUS_CXX={override!r} does not run (`{override} --version` failed); "
                f"fix the variable or unset it. Otherwise {INSTALL_HINT}"
            )
        return info
    for name in ("clang++", "g++"):
        path = _which(name)
        if path:
            info = _probe_cached((path,))
            if info is not None:
                return info
    try:
        import ziglang  # noqa: F401  (only checks that the package is importable)
    except ImportError:
        pass
    else:
        info = _probe_cached((sys.executable, "-m", "ziglang", "c++"))
        if info is not None:
            return info
    raise CompilerNotFoundError(
        f"the cpu backend needs a host C++ compiler and none was found: {INSTALL_HINT}"
    )


def find_compiler(cxx: str | None = None) -> CompilerInfo:
    """Find the host C++ compiler: ``cxx``, else ``$ENCELADUS_CXX``, else clang++, g++, ``python -m ziglang c++``."""
    return _find_compiler_cached(cxx or os.environ.get("ENCELADUS_CXX") or None)


# Perturbation mode (ENCELADUS_CPU_PERTURB=1): every math function whose Apple bound exceeds 0.5 ulp returns a
# result as far from the exact value as that bound allows (include/enceladus/math.h, docs/floating_point.md).
PERTURB_ENV = "ENCELADUS_CPU_PERTURB"
PERTURB_DEFINE = "ENCELADUS_PERTURB_MATH=1"


def perturb_requested() -> bool:
    """Whether ENCELADUS_CPU_PERTURB asks for kernels whose math errs by Apple's bounds (any value but empty or 0)."""
    return os.environ.get(PERTURB_ENV, "").strip() not in ("", "0")


# Instruction-set extensions for kernel libraries, chosen by a probe of the machine that builds them (the cpu
# backend builds and runs kernels on the same machine). x86-64 with F16C: -mf16c (with 128-bit vectors
# preferred), so half <-> float conversions are one instruction (include/enceladus/half.h; results bit-identical
# to the software conversion, which the generic build keeps), and with FMA also -mfma, so fma() is one
# instruction (bit-identical to libm's fmaf, which the generic build calls). The flags are part of every cache key (library index and build key), so a cache
# directory shared with a machine without them never hands it a library it cannot run.
TARGET_ENV = "ENCELADUS_CPU_TARGET"
TARGET_MODES = ("native", "generic")


@functools.lru_cache(maxsize=1)
def _host_cpu_features() -> frozenset[str]:
    """The feature flags of this machine's first CPU (Linux /proc/cpuinfo; empty elsewhere or on error)."""
    head = b""
    try:  # read up to the first complete flags line: the kernel writes /proc/cpuinfo one CPU at a time as it is
        with open("/proc/cpuinfo", "rb", buffering=0) as f:  # read, and a many-core host has dozens
            while len(head) < 1 << 16:
                chunk = f.read(4096)
                head += chunk
                at = head.find(b"\nflags")
                if not chunk or at >= 0 and head.find(b"\n", at + 1) >= 0:
                    break
    except OSError:
        return frozenset()
    for line in head.split(b"\n"):
        name, _, value = line.partition(b":")
        if name.strip() == b"flags":
            return frozenset(value.decode("ascii", "replace").split())
    return frozenset()


def target_flags(compiler: CompilerInfo) -> tuple[str, ...]:
    """The instruction-set flags kernels are built with: ``ENCELADUS_CPU_TARGET=native`` (the default) probes this
    machine, ``generic`` builds for the compiler's default target (the software half conversion). Only for clang and
    g++ (zig's driver, which parses target options itself, is not tried: it keeps the generic build)."""
    mode = os.environ.get(TARGET_ENV, "").strip().lower() or "native"
    if mode not in TARGET_MODES:
        raise CpuBackendError(
            f"{TARGET_ENV}={os.environ.get(TARGET_ENV)!r} is not a target: expected 'native' (use the instruction-set "
            f"extensions this machine has, the default) or 'generic' (the compiler's default target); unset it or "
            f"set one of those")
    if mode == "generic" or compiler.kind not in ("clang", "gcc") or os.uname().machine not in ("x86_64", "amd64"):
        return ()
    # -mf16c implies AVX; without -mprefer-vector-width=128 g++ 12 vectorises with 256-bit registers and ran the
    # fp16 dot kernels 10-14% slower than the generic build (clang: the same either way). -mfma makes each fma() of
    # a kernel one instruction instead of a call of libm's fmaf (both round once: the same bits); -ffp-contract=off
    # still keeps every other a * b + c unfused.
    features = _host_cpu_features()
    if not {"f16c", "avx"} <= features:
        return ()
    return ("-mf16c", *(("-mfma",) if "fma" in features else ()), "-mprefer-vector-width=128")


def ubsan_requested() -> bool:
    """Whether ENCELADUS_CPU_UBSAN asks for the UBSan build of kernels (any value but empty or 0)."""
    return os.environ.get(UBSAN_ENV, "").strip() not in ("", "0")


def kernel_flags(compiler: CompilerInfo, ubsan: bool = False) -> tuple[str, ...]:
    """The flags kernel libraries are built with: KERNEL_FLAGS, or in UBSan mode the same without -fwrapv plus
    the sanitizer checks (CompilerNotFoundError when the compiler is not clang: the mode fails, never skips);
    in the perturbation mode (ENCELADUS_CPU_PERTURB=1) also -DENCELADUS_PERTURB_MATH=1."""
    perturb = (f"-D{PERTURB_DEFINE}",) if perturb_requested() else ()
    target = target_flags(compiler)
    if not ubsan:
        return KERNEL_FLAGS + target + compiler.warning_flags + perturb
    if compiler.kind not in ("clang", "zig"):
        raise CompilerNotFoundError(
            f"{UBSAN_ENV}=1 needs clang (its -fsanitize={UBSAN_CHECKS} checks), but the cpu backend's compiler is "
            f"{compiler.version or ' '.join(compiler.command)}: install clang (`apt-get install -y clang`) or set "
            f"ENCELADUS_CXX=clang++, or unset {UBSAN_ENV}")
    return tuple(f for f in KERNEL_FLAGS if f != "-fwrapv") + target + UBSAN_FLAGS + compiler.warning_flags + perturb


def cache_dir() -> str:
    """The directory holding built libraries: ``<cache>/cpu`` of the cache directory in use
    (``$ENCELADUS_CACHE_DIR``, ``~/.cache/enceladus`` or a private temporary one: see enceladus/cachedir.py)."""
    return cachedir.subdir("cpu")


# Python sources that decide the C++ made from an MSL text (part of the library index key).
TRANSLATOR_SOURCES = (os.path.join(_HERE, "translate.py"), os.path.join(_HERE, "signature.py"))


@functools.lru_cache(maxsize=1)
def headers_digest() -> str:
    """Hash of every compatibility header, the runtime source and the MSL -> C++ translator (part of each
    cache key). A fresh process looks it up by a stamp of the files' paths, sizes and mtimes
    (``digest-<stamp>`` in the cache directory) instead of reading them all."""
    root = _HERE
    try:
        rows = cachedir.stat_files((RUNTIME_SOURCE, *TRANSLATOR_SOURCES)) + cachedir.stat_tree(INCLUDE_DIR)
        files = [r[0] for r in rows]
        stamp = sha256(f"{root}\0{rows!r}".encode()).hexdigest()
        key: str | None = f"headers-{stamp[:40]}"
        memo: str | None = os.path.join(cache_dir(), f"{key}.json")
    except (OSError, CacheSecurityError):
        files = [RUNTIME_SOURCE, *TRANSLATOR_SOURCES]
        for d, dirs, names in os.walk(INCLUDE_DIR):
            dirs.sort()
            files.extend(os.path.join(d, n) for n in sorted(names))
        key = memo = None
    if memo is not None and key is not None:
        digest = (cachedir.read_entry(memo, key) or b"").decode(errors="replace")
        if len(digest) == 64 and all(c in "0123456789abcdef" for c in digest):
            return digest
    from .build import hash_sources, write_small_entry

    digest = hash_sources(root, files)
    if memo is not None and key is not None:
        write_small_entry(memo, digest.encode(), key)
    return digest


def library_index_path(msl: str, compiler: CompilerInfo, mode: str, ubsan: bool = False,
                       defines: tuple[str, ...] = ()) -> str:
    """Where the index entry of a kernel library lives: ``index-<key>.json``, keyed by the MSL text, the
    headers and translator, the compiler and the flags (UBSan and perturbation modes and -D macros included). It names the built
    library (its build key) and holds the parsed signatures, so a cached library is loaded without translating
    the MSL again. ``mode``: ``"checked"`` (access checks, the default), ``"plain"`` or ``"race"`` (debug)."""
    h = sha256()
    flags = " ".join(KERNEL_FLAGS + target_flags(compiler) + compiler.warning_flags) + (" ubsan:" + " ".join(UBSAN_FLAGS) if ubsan else "") \
        + "".join(f" -D{d}" for d in defines) + (f" -D{PERTURB_DEFINE}" if perturb_requested() else "")
    for part in (msl, headers_digest(), compiler.identity, flags, mode):
        h.update(part.encode())
        h.update(b"\0")
    return os.path.join(cache_dir(), f"index-{h.hexdigest()[:40]}.json")


def _key_of(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def read_library_index(path: str) -> dict | None:
    """The index entry at ``path`` with ``data["so"]`` the verified path of its library, or None (missing,
    damaged or another key's entry, or its library is missing or damaged: the caller rebuilds both).

    The entry carries a copy of its library's record (file name, size, SHA-256), so the library is checked
    against it without reading the record file; when the two disagree (the library was rebuilt since, or is
    damaged) the library's own record decides (:func:`verified_library`, which discards a damaged file)."""
    try:
        data = cachedir.read_data(path, _key_of(path))
        key = str(data["library"])
        copy = data.get("record")
        if type(copy) is list and len(copy) == 3 and _library_name_ok(str(copy[0]), key, ".so"):
            so = os.path.join(cache_dir(), str(copy[0]))
            if cachedir.file_digest(so) == (copy[1], copy[2]):
                data["so"] = so
                return data
        so = verified_library(key)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    if so is None:
        return None
    data["so"] = so
    return data


def _library_name_ok(name: str, key: str, suffix: str) -> bool:
    """Whether ``name`` is a file name the library of ``key`` may have (``<key>-<content hash><suffix>``)."""
    return os.sep not in name and "/" not in name and name.startswith(key + "-") and name.endswith(suffix)


def verified_library(key: str, suffix: str = ".so") -> str | None:
    """The path of the shared library built under ``key`` (``kernel-<hash>`` / ``runtime-<hash>``) if its record
    (``<key>.json``: file name, size, SHA-256) and the file agree; else None. A library that does not match its
    record (truncated, damaged, replaced) is deleted with one warning and never loaded: loading a truncated
    ``.so`` can kill the process with SIGBUS. The check reads the file once per load (~0.1 ms for a kernel).
    ``suffix``: ``.pch`` for a precompiled prelude (``pch-<hash>``), checked the same way before each use."""
    directory = cache_dir()
    record_path = os.path.join(directory, f"{key}.json")
    try:
        record = cachedir.read_data(record_path, key)
        if record is None:
            return None
        name, size, digest = str(record["so"]), int(record["size"]), str(record["sha256"])
    except (ValueError, KeyError, TypeError):
        cachedir.discard(record_path, f"cache entry {record_path} is not a library record; it is rebuilt")
        return None
    if not _library_name_ok(name, key, suffix):
        cachedir.discard(record_path, f"cache entry {record_path} names a library of another key; it is rebuilt")
        return None
    so = os.path.join(directory, name)
    found = cachedir.file_digest(so)
    if found == (size, digest):
        return so
    what = "is missing" if found is None else (f"has {found[0]} bytes, its record says {size}" if found[0] != size
                                               else "does not match its recorded SHA-256")
    cachedir.discard(so, None if found is None else f"cached library {so} {what}; it is discarded and rebuilt")
    cachedir.discard(record_path, None)
    return None


def runtime_library_key(compiler: CompilerInfo) -> str:
    """The build key of the cpu runtime library (``runtime-<hash>``). runtime.cpp is one of the files
    :func:`headers_digest` covers, so a fresh process finds the cached runtime without reading and hashing its
    source (61 KB); the key still changes with the source, the headers, the compiler, the flags and the ABI."""
    from .library import ABI_VERSION

    h = sha256()
    for part in ("runtime.cpp of headers_digest", headers_digest(), compiler.identity, " ".join(RUNTIME_FLAGS),
                 f"abi {ABI_VERSION}"):
        h.update(part.encode())
        h.update(b"\0")
    return f"runtime-{h.hexdigest()[:40]}"
