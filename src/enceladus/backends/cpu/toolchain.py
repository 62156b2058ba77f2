"""Host C++ compiler discovery and the on-disk build cache for compiled kernel libraries."""

from __future__ import annotations

import functools
import json
import os
import shlex
import stat
import sys
from dataclasses import dataclass

from .errors import CacheSecurityError, CompilerNotFoundError, MSLCompileError

try:  # the interpreter's own SHA-256: importing hashlib loads OpenSSL (~3 ms per process); same digests
    from _sha2 import sha256  # Python 3.12+
except ImportError:
    try:
        from _sha256 import sha256  # Python 3.11
    except ImportError:
        from hashlib import sha256

# plain strings and os.path throughout: importing pathlib would cost a fresh process ~3 ms
_HERE = os.path.dirname(os.path.realpath(__file__))
INCLUDE_DIR = os.path.join(_HERE, "include")
RUNTIME_SOURCE = os.path.join(_HERE, "runtime.cpp")

# Flags for kernel translation units: Metal's integer semantics (-fwrapv: no signed-overflow UB
# exploitation), as_type-style punning (-fno-strict-aliasing), no exceptions/RTTI (Metal has none),
# no FMA contraction (results reproducible across compilers), signed char as in Metal, and no
# system or C++ standard headers (Metal has no standard library).
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
)
RUNTIME_FLAGS = ("-std=c++17", "-O2", "-fPIC", "-shared", "-pthread", "-fvisibility=hidden")
INSTALL_HINT = (
    "install one of: clang (`apt-get install -y clang`, preferred), g++ (`apt-get install -y g++`), "
    "or the ziglang package (`pip install ziglang`); or set ENCELADUS_CXX to a C++ compiler command"
)


@dataclass(frozen=True)
class CompilerInfo:
    """A host C++ compiler: the command to run it, its family and its version banner."""

    command: tuple[str, ...]
    kind: str  # "clang", "gcc" or "zig" (zig c++ is clang underneath)
    version: str

    @property
    def warning_flags(self) -> tuple[str, ...]:
        # Metal's [[...]] attributes are unknown to C++; the launcher binds them instead.
        if self.kind == "gcc":
            return ("-Wno-attributes",)
        return ("-Wno-unknown-attributes",)

    @property
    def identity(self) -> str:
        return f"{' '.join(self.command)}\n{self.version}"


def _probe(command: tuple[str, ...]) -> CompilerInfo | None:
    import subprocess  # not imported at startup: a cached probe and a cached library need no process

    try:
        out = subprocess.run([*command, "--version"], check=False, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    banner = out.stdout.strip() or out.stderr.strip()
    first = banner.splitlines()[0] if banner else ""
    if "zig" in " ".join(command):
        kind = "zig"
    elif "clang" in banner.lower():
        kind = "clang"
    elif "g++" in first or "gcc" in banner.lower() or "free software foundation" in banner.lower():
        kind = "gcc"
    else:
        kind = "clang"
    return CompilerInfo(command=command, kind=kind, version=first)


def _which(name: str) -> str | None:
    """``shutil.which`` for an executable name (shutil itself imports bz2 and lzma: ~5 ms at startup)."""
    for d in os.environ.get("PATH", os.defpath).split(os.pathsep):
        p = os.path.join(d or ".", name)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


def _executable_stamp(command: tuple[str, ...]) -> str | None:
    """What identifies the compiler a command runs: real path, size and mtime of its executable (and of
    the ziglang package for ``python -m ziglang``), or None when it cannot be found."""
    exe = command[0] if os.sep in command[0] else _which(command[0])
    if not exe:
        return None
    paths = [os.path.realpath(exe)]
    if "ziglang" in command:
        import importlib.util

        spec = importlib.util.find_spec("ziglang")
        if spec is None or not spec.origin:
            return None
        paths.append(os.path.realpath(spec.origin))
    parts = []
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            return None
        parts.append(f"{p}:{st.st_size}:{st.st_mtime_ns}")
    return "\n".join(parts)


def _probe_cached(command: tuple[str, ...]) -> CompilerInfo | None:
    """``_probe`` with its answer remembered in the cache directory (``probe-<key>.json``), keyed by the
    command and the executable's real path, size and mtime: running ``CXX --version`` costs ~30 ms per
    process. The directory is checked like the libraries' (private to the user); if it cannot be used,
    the compiler is probed every time."""
    stamp = _executable_stamp(command)
    if stamp is None:
        return _probe(command)
    key = sha256(json.dumps([list(command), stamp]).encode()).hexdigest()[:40]
    try:
        path = os.path.join(cache_dir(), f"probe-{key}.json")
    except (OSError, CacheSecurityError):
        return _probe(command)
    try:
        with open(path) as f:
            data = json.loads(f.read())
        if data["command"] == list(command) and data["stamp"] == stamp:
            return CompilerInfo(command=command, kind=str(data["kind"]), version=str(data["version"]))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    info = _probe(command)
    if info is None:
        return None
    record = {"command": list(command), "stamp": stamp, "kind": info.kind, "version": info.version}
    _write_private(path, json.dumps(record))
    return info


@functools.lru_cache(maxsize=16)
def _find_compiler_cached(override: str | None) -> CompilerInfo:
    if override:
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


def _check_private_dir(path: str) -> None:
    st = os.stat(path)
    if st.st_uid != os.getuid():
        raise CacheSecurityError(
            f"refusing to use cache directory {path}: it is owned by uid {st.st_uid}, not by you "
            f"(uid {os.getuid()}); a cached shared library is code. Set ENCELADUS_CACHE_DIR to a private directory."
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise CacheSecurityError(
            f"refusing to use cache directory {path}: it is writable by group or others "
            f"(mode {stat.S_IMODE(st.st_mode):o}); a cached shared library is code. Run `chmod 700 {path}`."
        )


def cache_dir() -> str:
    """The directory holding built libraries: ``$ENCELADUS_CACHE_DIR/cpu`` or ``~/.cache/enceladus/cpu``."""
    base = os.environ.get("ENCELADUS_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "enceladus")
    path = os.path.join(base, "cpu")
    for d in (base, path):
        os.makedirs(d, mode=0o700, exist_ok=True)
        _check_private_dir(d)
    return path


# Python sources that decide the C++ made from an MSL text (part of the library index key).
TRANSLATOR_SOURCES = (os.path.join(_HERE, "translate.py"), os.path.join(_HERE, "signature.py"))


@functools.lru_cache(maxsize=1)
def headers_digest() -> str:
    """Hash of every compatibility header, the runtime source and the MSL -> C++ translator (part of each
    cache key). A fresh process looks it up by a stamp of the files' paths, sizes and mtimes
    (``digest-<stamp>`` in the cache directory) instead of reading them all."""
    root = _HERE
    files = [RUNTIME_SOURCE, *TRANSLATOR_SOURCES]
    for d, dirs, names in os.walk(INCLUDE_DIR):
        dirs.sort()
        files.extend(os.path.join(d, n) for n in sorted(names))
    stamp = sha256(root.encode())
    try:
        for p in files:
            st = os.stat(p)
            stamp.update(f"\0{p}\0{st.st_size}\0{st.st_mtime_ns}".encode())
        memo: str | None = os.path.join(cache_dir(), f"digest-{stamp.hexdigest()[:40]}")
    except (OSError, CacheSecurityError):
        memo = None
    if memo is not None:
        try:
            with open(memo) as f:
                digest = f.read().strip()
            if len(digest) == 64 and all(c in "0123456789abcdef" for c in digest):
                return digest
        except OSError:
            pass
    h = sha256()
    for p in files:
        h.update(os.path.relpath(p, root).encode())
        with open(p, "rb") as f:
            h.update(f.read())
    digest = h.hexdigest()
    if memo is not None:
        _write_private(memo, digest)
    return digest


def _write_private(path: str, text: str) -> None:
    """Write a small file atomically (temporary file + rename), mode 0600; failures are ignored."""
    import tempfile

    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=os.path.dirname(path))
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except OSError:
        pass


def library_index_path(msl: str, compiler: CompilerInfo, race_check: bool) -> str:
    """Where the index entry of a kernel library lives: ``lib-<key>.json``, keyed by the MSL text, the
    headers and translator, the compiler and the flags. It names the built ``kernel-*.so`` and holds
    the parsed signatures, so a cached library is loaded without translating the MSL again."""
    h = sha256()
    for part in (msl, headers_digest(), compiler.identity, " ".join(KERNEL_FLAGS + compiler.warning_flags),
                 "race" if race_check else "plain"):
        h.update(part.encode())
        h.update(b"\0")
    return os.path.join(cache_dir(), f"lib-{h.hexdigest()[:40]}.json")


def read_library_index(path: str) -> dict | None:
    """The index entry at ``path`` if it exists and its library is still there, else None."""
    try:
        with open(path) as f:
            data = json.loads(f.read())
        so = os.path.join(os.path.dirname(path), data["so"])
        if os.sep in data["so"] or not os.path.isfile(so):
            return None
        data["so"] = so
        return data
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_library_index(path: str, so: str, kernels: list, uses_fibers: bool) -> None:
    """Record a built (or found) library for :func:`read_library_index`."""
    _write_private(path, json.dumps({"so": os.path.basename(so), "kernels": kernels, "uses_fibers": uses_fibers}))


def cache_key(source: str, compiler: CompilerInfo, flags: tuple[str, ...]) -> str:
    h = sha256()
    for part in (source, headers_digest(), compiler.identity, " ".join(flags)):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:40]


def build_shared_library(
    source: str, compiler: CompilerInfo, flags: tuple[str, ...], prefix: str, what: str
) -> tuple[str, bool]:
    """Compile ``source`` (C++) into a cached shared library; returns (path, built_now)."""
    directory = cache_dir()
    target = os.path.join(directory, f"{prefix}-{cache_key(source, compiler, flags)}.so")
    if os.path.exists(target):
        return target, False
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="enceladus-build-") as tmp:
        src = os.path.join(tmp, "kernel.cpp")
        with open(src, "w") as f:
            f.write(source)
        fd, partial = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=directory)
        os.close(fd)
        cmd = [*compiler.command, *flags, "-I", INCLUDE_DIR, src, "-o", partial]
        try:
            res = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired as exc:
            os.unlink(partial)
            raise MSLCompileError(f"{what}: the C++ compiler timed out after 600 s", "", source) from exc
        if res.returncode != 0:
            os.unlink(partial)
            output = (res.stderr + res.stdout).replace(src, "kernel.cpp")
            raise MSLCompileError(
                f"{what} failed to compile with {compiler.version or compiler.command[0]}:\n{output.strip()}",
                output,
                source,
            )
        os.chmod(partial, 0o700)
        os.replace(partial, target)  # atomic: concurrent builders of the same key both succeed
    return target, True
