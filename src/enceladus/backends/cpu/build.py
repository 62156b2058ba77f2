"""Building the cpu backend's libraries: probing a C++ compiler (``CXX --version``), compiling C++ into a cached shared
library or precompiled header, and recording what was built (the records and index entries ``toolchain.py`` reads).

Imported only when something is built or probed: a fresh process that launches a cached kernel finds its compiler,
runtime and kernel library through ``toolchain.py`` alone (#26: each module on that path costs it 0.1-0.4 ms, most of
it unmarshalling the module's code).
"""

from __future__ import annotations

import contextlib
import os

from ... import cachedir
from ...cachedir import sha256
from . import MSLCompileError
from .toolchain import (
    INCLUDE_DIR,
    PCH_ENV,
    PCH_FLAGS,
    CompilerInfo,
    _key_of,
    cache_dir,
    headers_digest,
    verified_library,
)

__all__ = ["build_shared_library", "cache_key", "hash_sources", "install", "precompiled_prelude", "probe",
           "write_library_index", "write_record", "write_small_entry"]


def hash_sources(root: str, files: list[str]) -> str:
    """SHA-256 of ``files`` (their paths relative to ``root`` and their bytes): what ``toolchain.headers_digest``
    stands for when its memo is missing."""
    h = sha256()
    for p in files:
        h.update(os.path.relpath(p, root).encode())
        with open(p, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def probe(command: tuple[str, ...]) -> CompilerInfo | None:
    """Run ``command --version``: the compiler it names, or None when it does not run."""
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


def write_small_entry(path: str, payload: bytes, key: str) -> None:
    """A small keyed, checksummed cache entry (see enceladus/cachedir.py); failures are ignored."""
    with contextlib.suppress(OSError):
        cachedir.write_entry(path, payload, key)


def write_record(path: str, record: dict, key: str) -> None:
    """A record (plain data: read back with ``cachedir.load_data``) as a small entry."""
    write_small_entry(path, cachedir.dump_data(record), key)


def write_library_index(path: str, so: str, kernels: list, uses_fibers: bool) -> None:
    """Record a built (or found) library for :func:`read_library_index`, with a copy of its record."""
    found = cachedir.file_digest(so)
    record: dict = {"library": _library_key_of(so), "kernels": kernels, "uses_fibers": uses_fibers}
    if found is not None:
        record["record"] = [os.path.basename(so), *found]
    write_record(path, record, _key_of(path))


def cache_key(source: str, compiler: CompilerInfo, flags: tuple[str, ...]) -> str:
    # the runtime ABI too: a library built by another Enceladus whose Python side expects another ABI (an upgrade,
    # another checkout sharing the cache) must be rebuilt, never loaded and refused
    from .library import ABI_VERSION

    h = sha256()
    for part in (source, headers_digest(), compiler.identity, " ".join(flags), f"abi {ABI_VERSION}"):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:40]


def _library_key_of(so: str) -> str:
    """``kernel-<key>`` of ``kernel-<key>-<content hash>.so``."""
    return os.path.basename(so).rsplit("-", 1)[0]


def install(partial: str, key: str, suffix: str) -> str:
    """Move a freshly built file into the cache as ``<key>-<content hash><suffix>`` and record its size and SHA-256
    in ``<key>.json`` (what :func:`verified_library` checks); returns its path."""
    size, digest = cachedir.file_digest(partial) or (0, "")
    target = os.path.join(cache_dir(), f"{key}-{digest[:16]}{suffix}")
    os.chmod(partial, 0o700)
    os.replace(partial, target)  # atomic: concurrent builders of the same key both succeed
    write_record(os.path.join(cache_dir(), f"{key}.json"), {"so": os.path.basename(target), "size": size,
                                                             "sha256": digest}, key)
    return target


def precompiled_prelude(source: str, prelude_end: str, compiler: CompilerInfo, flags: tuple[str, ...]) -> str | None:
    """The cached precompiled header of ``source``'s prelude (its text up to the end of the first ``prelude_end``),
    built on first use; None where there is none to use: not clang, no prelude, ENCELADUS_CPU_PCH=0, or clang could
    not build it (the kernel is then compiled without one, as before)."""
    end = source.find(prelude_end)
    if compiler.kind != "clang" or end < 0 or os.environ.get(PCH_ENV, "").strip() == "0":
        return None
    prelude = source[:end + len(prelude_end)]
    pch_flags = tuple(f for f in flags if f != "-shared" and not f.startswith("-Wl,")) + PCH_FLAGS
    key = f"pch-{cache_key(prelude, compiler, pch_flags)}"
    found = verified_library(key, ".pch")
    if found is not None:
        return found
    import subprocess

    partial = cachedir.temporary_path(os.path.join(cache_dir(), f"{key}.pch"))
    cmd = [*compiler.command, *pch_flags, "-x", "c++-header", "-I", INCLUDE_DIR, "-", "-o", partial]
    try:
        res = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=600, input=prelude)
        if res.returncode == 0:
            return install(partial, key, ".pch")
    except subprocess.TimeoutExpired:
        pass
    with contextlib.suppress(OSError):
        os.unlink(partial)
    return None


def build_shared_library(
    source: str, compiler: CompilerInfo, flags: tuple[str, ...], prefix: str, what: str, key: str | None = None,
    prelude_end: str | None = None,
) -> tuple[str, bool]:
    """Compile ``source`` (C++) into a cached shared library; returns (path, built_now).

    The library is ``<prefix>-<key>-<content hash>.so`` with a record ``<prefix>-<key>.json`` (its file name,
    size and SHA-256); a cached library is used only when both agree (:func:`verified_library`). ``key``
    (``<prefix>-<hash>``): a key the caller derived from what decides ``source`` (default: hash of ``source``).
    ``prelude_end``: the text that ends the part of ``source`` that many libraries share, compiled through a
    precompiled header (:func:`precompiled_prelude`)."""
    key = key or f"{prefix}-{cache_key(source, compiler, flags)}"
    found = verified_library(key)
    if found is not None:
        return found, False
    import subprocess
    import tempfile

    pch = precompiled_prelude(source, prelude_end, compiler, flags) if prelude_end else None
    with tempfile.TemporaryDirectory(prefix="enceladus-build-") as tmp:
        with open(os.path.join(tmp, "kernel.cpp"), "w") as f:
            f.write(source)
        partial = cachedir.temporary_path(os.path.join(cache_dir(), f"{key}.so"))
        # a relative source name: the library's bytes do not depend on the temporary directory
        cmd = [*compiler.command, *flags, "-I", INCLUDE_DIR, "kernel.cpp", "-o", partial]
        try:
            res = None
            if pch is not None:
                res = subprocess.run([*cmd[:-3], "-include-pch", pch, *cmd[-3:]], check=False, capture_output=True,
                                     text=True, timeout=600, cwd=tmp)
            if res is None or res.returncode != 0:
                # no precompiled header, or the build with it failed: the plain build decides, and its errors are
                # the ones reported (a header that no longer fits is dropped, to be rebuilt next time)
                res_pch, res = res, subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=600,
                                                   cwd=tmp)
                if res_pch is not None and res.returncode == 0:
                    cachedir.discard(pch, f"the precompiled header {pch} did not build {what}; it is rebuilt:\n"
                                     + (res_pch.stderr + res_pch.stdout).strip()[:2000])
        except subprocess.TimeoutExpired as exc:
            os.unlink(partial)
            raise MSLCompileError(f"{what}: the C++ compiler timed out after 600 s", "", source) from exc
        if res.returncode != 0:
            os.unlink(partial)
            output = (res.stderr + res.stdout).replace(os.path.join(tmp, "kernel.cpp"), "kernel.cpp")
            raise MSLCompileError(
                f"{what} failed to compile with {compiler.version or compiler.command[0]}:\n{output.strip()}",
                output,
                source,
            )
        target = install(partial, key, ".so")
    return target, True
