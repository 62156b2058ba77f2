"""The cache directory, shared by the disk cache (``runtime/cache.py``) and the cpu backend's build cache
(``backends/cpu/toolchain.py``): where it is, that it is private, checksummed entries and atomic writes.

It sits below the backends (like ``errors.py``) so both layers use one implementation:

- :func:`base` is ``$ENCELADUS_CACHE_DIR`` (default ``~/.cache/enceladus``), created mode 0700 and refused
  (:class:`CacheSecurityError`) when another user owns it or group/others may write it. A path that cannot be
  used (a file, not creatable, not writable) gives one :class:`CacheDirWarning` and a private temporary
  directory instead, removed when the process exits. ``ENCELADUS_CACHE=0`` also uses a private temporary
  directory: nothing is written to the user's cache.
- :func:`write_entry` / :func:`read_entry`: a header line records the entry's format, its own key, a SHA-256
  and the length of the payload; :func:`read_entry` discards (with one warning) a file that is damaged or
  holds another key's data. Payloads of plain data (kernel entries, records) are :func:`dump_data` /
  :func:`load_data`: ``marshal``, built into the interpreter.
- :func:`write_atomic` writes through a temporary file and a rename; temporaries left behind by an
  interrupted write (``.<name>.<random>.tmp``) are removed by the next process that writes to that directory.

Plain ``os.path`` strings throughout: importing pathlib (or tempfile, shutil, logging) would cost a fresh
process milliseconds, and the cached path must stay light.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import stat
import sys
import time
from typing import Any

# the interpreter's own SHA-256: importing hashlib loads OpenSSL (~3 ms per process); same digests
try:
    if sys.version_info >= (3, 12):
        from _sha2 import sha256
    else:
        from _sha256 import sha256
except ImportError:
    from hashlib import sha256

__all__ = ["CacheDirWarning", "CacheSecurityError", "base", "check_entry", "configured", "dump_data", "enabled", "load_data",
           "read_data", "read_entry", "sha256", "subdir", "write_atomic", "write_entry"]

MAGIC = b"ENCELADUS-CACHE"
ENTRY_FORMAT = 3  # 2: the header records the entry's own key; 3: payloads of plain data are marshal, not JSON
TMP_SUFFIX = ".tmp"
STALE_TMP_S = 3600.0  # a temporary this old is left from an interrupted write (builds time out after 600 s)


class CacheSecurityError(RuntimeError):
    """The cache directory is not private to the current user (cached entries and libraries become code)."""


class CacheDirWarning(UserWarning):
    """The configured cache directory cannot be used; a private temporary directory is used instead."""


class _Log:
    """``logging.getLogger("enceladus.cache")``, imported on first message (not at startup)."""

    def __getattr__(self, name: str) -> Any:
        import logging

        return getattr(logging.getLogger("enceladus.cache"), name)


log = _Log()
notes: list[str] = []  # every warning about damaged entries this process gave (tests and benchmarks read it)


def note(message: str) -> None:
    """Record and log one warning about the cache (a damaged entry, a failed write)."""
    notes.append(message)
    log.warning(message)


# --- where --------------------------------------------------------------------------------------------------
def enabled() -> bool:
    """False when ``ENCELADUS_CACHE=0`` (also ``false``/``off``/``no``)."""
    return os.environ.get("ENCELADUS_CACHE", "1").strip().lower() not in ("0", "false", "off", "no")


def configured() -> str:
    """The user's cache directory (not created): ``$ENCELADUS_CACHE_DIR`` or ``~/.cache/enceladus``."""
    return os.environ.get("ENCELADUS_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "enceladus")


_resolved: dict[tuple[bool, str], str] = {}  # (enabled, configured path) -> directory in use
_made: set[str] = set()  # directories created and checked by this process
_private: list[str] = []  # this process's temporary directory (at most one), removed at exit


def base() -> str:
    """The cache directory in use, created and checked (see the module docstring)."""
    key = (enabled(), configured())
    path = _resolved.get(key)
    if path is None:
        path = _resolved[key] = _resolve(*key)
    return path


def subdir(kind: str) -> str:
    """``<base>/<kind>``, created mode 0700 and checked to be private."""
    root = base()
    path = os.path.join(root, kind)
    if path in _made:
        return path
    try:
        _make_private(path)
    except OSError as e:
        if root in _private:
            raise
        key = (enabled(), configured())
        _resolved[key] = _fall_back(root, f"{path} cannot be created ({e.strerror or e})")
        return subdir(kind)
    return path


def _resolve(use_cache: bool, path: str) -> str:
    if not use_cache:
        return _private_dir()
    try:
        _make_private(path)
    except OSError as e:
        what = "it is not a directory" if os.path.exists(path) and not os.path.isdir(path) else (e.strerror or e)
        return _fall_back(path, what)
    if not os.access(path, os.W_OK | os.X_OK):
        return _fall_back(path, "it is not writable")
    return path


def _fall_back(path: str, why: Any) -> str:
    import warnings

    private = _private_dir()
    warnings.warn(f"cannot use the Enceladus cache directory {path}: {why}. Kernels are cached in a private "
                  f"temporary directory for this process only ({private}, removed at exit); set "
                  "ENCELADUS_CACHE_DIR to a writable directory to keep them", CacheDirWarning, stacklevel=4)
    return private


def _private_dir() -> str:
    if not _private:
        import atexit
        import tempfile

        path = tempfile.mkdtemp(prefix="enceladus-cache-")  # mode 0700, owned by us
        _private.append(path)
        atexit.register(_remove_private, path)
    return _private[0]


def _remove_private(path: str) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def _make_private(path: str) -> None:
    try:  # an existing directory (every process but the first): one stat, no mkdir raising FileExistsError
        st = os.stat(path)
    except OSError:
        st = None
    if st is None or not stat.S_ISDIR(st.st_mode):
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = None
    check_private(path, st)
    _made.add(path)


def check_private(path: str, st: os.stat_result | None = None) -> None:
    """Raise :class:`CacheSecurityError` unless ``path`` is owned by this user and not writable by others
    (``st``: its ``os.stat`` if the caller has it)."""
    if st is None:
        st = os.stat(path)
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        raise CacheSecurityError(
            f"refusing to use cache directory {path}: it is owned by uid {st.st_uid}, not by you (uid {os.getuid()}); "
            "cached kernels and libraries become code. Set ENCELADUS_CACHE_DIR to a private directory, or "
            "ENCELADUS_CACHE=0 to use a private temporary one.")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise CacheSecurityError(
            f"refusing to use cache directory {path}: it is writable by group or others "
            f"(mode {stat.S_IMODE(st.st_mode):o}); cached kernels and libraries become code. Run `chmod 700 {path}`.")


# --- writing --------------------------------------------------------------------------------------------------
_swept: set[str] = set()


def write_atomic(path: str, data: bytes, mode: int = 0o600) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory and a rename: readers see the
    old file or the new one, never a partial one. The first write into a directory removes temporaries an
    interrupted write left there."""
    import tempfile  # only writers need it (and it imports shutil, bz2, lzma, random)

    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    sweep_stale_temporaries(directory)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=TMP_SUFFIX, dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def temporary_path(path: str) -> str:
    """A new, empty temporary file next to ``path`` (for a tool that writes it, e.g. the C++ compiler); the
    caller renames it into place or removes it."""
    import tempfile

    directory = os.path.dirname(path)
    sweep_stale_temporaries(directory)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=TMP_SUFFIX, dir=directory)
    os.close(fd)
    return tmp


def sweep_stale_temporaries(directory: str, older_than_s: float = STALE_TMP_S) -> int:
    """Remove ``.*.tmp`` files older than ``older_than_s`` from ``directory`` (once per process and directory;
    a concurrent writer's temporary is younger). Returns how many were removed."""
    if directory in _swept:
        return 0
    _swept.add(directory)
    removed = 0
    limit = time.time() - older_than_s
    try:
        with os.scandir(directory) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False) and len(e.name) == 2:  # kernels/<k[:2]>/, autotune/<k[:2]>/
                    removed += sweep_stale_temporaries(e.path, older_than_s)
                elif e.name.startswith(".") and e.name.endswith(TMP_SUFFIX):
                    try:
                        if e.stat(follow_symlinks=False).st_mtime < limit:
                            os.unlink(e.path)
                            removed += 1
                    except OSError:
                        pass
    except OSError:
        pass
    return removed


# --- checksummed entries ------------------------------------------------------------------------------------------
def write_entry(path: str, payload: bytes, key: str) -> None:
    """Write ``payload`` under ``key`` with a header recording the format, the key, a SHA-256 and the length."""
    if not key or any(c in key for c in " \n"):
        raise ValueError(f"cache key {key!r} must be a non-empty word")
    header = b"%s %d %s %s %d\n" % (MAGIC, ENTRY_FORMAT, key.encode(), sha256(payload).hexdigest().encode(),
                                     len(payload))
    write_atomic(path, header + payload)


def read_entry(path: str, key: str) -> bytes | None:
    """The payload stored under ``key`` at ``path``, or None when there is none. A file that is damaged
    (checksum, length), holds another key's entry (swapped or copied) or comes from another format is
    deleted, with one warning for damage and mismatches, and reported as None (the caller rebuilds it)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        note(f"cannot read cache entry {path}: {e}")
        return None
    payload, problem = check_entry(raw, key)
    if problem is None:
        return payload
    discard(path, None if problem == "old" else f"cache entry {path} {problem}; it is discarded and rebuilt")
    return None


def check_entry(raw: bytes, key: str) -> tuple[bytes, str | None]:
    """``(payload, None)`` for the bytes of an entry written under ``key`` that passes every check, else
    ``(b"", what is wrong)`` ("old" for another format). Nothing is deleted (see :func:`read_entry`)."""
    header, sep, payload = raw.partition(b"\n")
    parts = header.split(b" ")
    problem = None
    if sep != b"\n" or len(parts) < 2 or parts[0] != MAGIC:
        problem = "is damaged (no valid header)"
    elif parts[1] != b"%d" % ENTRY_FORMAT:
        problem = "old"  # written by another version: replaced quietly
    elif len(parts) != 5 or parts[4] != b"%d" % len(payload) or sha256(payload).hexdigest().encode() != parts[3]:
        problem = "is damaged (checksum or length mismatch)"
    elif parts[2] != key.encode():
        problem = f"holds the entry of another key ({parts[2][:16].decode(errors='replace')}...)"
    return (payload, None) if problem is None else (b"", problem)


# --- plain data, without the json package ------------------------------------------------------------------------
# Kernel entries, autotuning results and the cpu backend's records are plain data: dicts, lists, tuples, str, bytes,
# int, float, bool, None. They are stored with ``marshal``, which is built into the interpreter: decoding JSON, even
# with json's C scanner alone, makes a fresh process load the ``_json`` shared library (~0.2-0.3 ms on the cached
# path, #26), and marshal reads tuples, non-string keys and NaN as they are. ``marshal`` is not meant for data from
# elsewhere: a payload is decoded only after its entry's key, length and SHA-256 have been checked (read_entry), so it
# is what this user's Enceladus wrote, and only plain values are written (nothing decoded is ever run; no pickle).
MARSHAL_VERSION = 4  # the data format of Python 3.4 and later: an entry is readable by every supported Python
_PLAIN = (str, int, float, bool, type(None), bytes)


def dump_data(value: Any) -> bytes:
    """The payload of a plain value (see above); ValueError naming the first value that is not plain data."""
    _check_plain(value)
    return marshal.dumps(value, MARSHAL_VERSION)


def _check_plain(value: Any) -> None:
    t = type(value)
    if t in _PLAIN:
        return
    if t is list or t is tuple:
        for v in value:
            _check_plain(v)
        return
    if t is dict:
        for k, v in value.items():
            _check_plain(k)
            _check_plain(v)
        return
    raise ValueError(f"a {t.__module__}.{t.__qualname__} is not plain data for the cache: {value!r:.60}")


def load_data(payload: bytes) -> Any:
    """The value of a :func:`dump_data` payload; ValueError if ``payload`` is not one. (Its readers check the shape
    they expect: a kernel entry's decoding refuses any value it did not write.)"""
    try:
        return marshal.loads(payload)
    except (EOFError, ValueError, TypeError) as e:
        raise ValueError(f"not a cache payload: {e}") from None


def read_data(path: str, key: str) -> Any:
    """The plain value stored under ``key`` at ``path`` (:func:`read_entry`, then :func:`load_data`), or None when
    there is none; ValueError when the payload is not plain data."""
    payload = read_entry(path, key)
    return None if payload is None else load_data(payload)


def dumps_plain(value: Any) -> str:
    """``json.dumps(value)`` (default separators, the same text), written here for lists/tuples of ints, bools, None
    and ASCII strings (what the cpu backend's cache keys of a cached kernel hold); anything else goes through json."""
    t = type(value)
    if t is list or t is tuple:
        return "[" + ", ".join(dumps_plain(v) for v in value) + "]"
    if t is int:
        return int.__repr__(value)
    if t is bool:
        return "true" if value else "false"
    if value is None:
        return "null"
    if t is str and value.isascii():
        escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r") \
            .replace("\t", "\\t")
        if escaped.isprintable():
            return f'"{escaped}"'
    import json

    return json.dumps(value)


def discard(path: str, warning: str | None) -> None:
    """Delete a cache file that must not be used; ``warning`` (if any) is given once, here."""
    if warning:
        note(warning)
    with contextlib.suppress(OSError):
        os.unlink(path)


def stat_tree(root: str, suffix: str = "") -> list[tuple[str, int, int]]:
    """``(path, size, mtime_ns)`` of every file under ``root`` whose name ends with ``suffix`` (``__pycache__``
    left out), sorted by path: the stamp that tells a fresh process whether sources changed, in one ``scandir`` pass
    (``os.walk`` plus a ``stat`` per file costs it more Python). OSError when ``root`` cannot be read."""
    out = []
    stack = [root]
    while stack:
        with os.scandir(stack.pop()) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False):  # (as os.walk: a linked directory is not entered)
                    if e.name != "__pycache__":
                        stack.append(e.path)
                elif e.name.endswith(suffix):
                    st = e.stat()
                    out.append((e.path, st.st_size, st.st_mtime_ns))
    out.sort()
    return out


def stat_files(paths: list[str] | tuple[str, ...]) -> list[tuple[str, int, int]]:
    """``(path, size, mtime_ns)`` of each of ``paths`` (OSError when one is missing)."""
    out = []
    for p in paths:
        st = os.stat(p)
        out.append((p, st.st_size, st.st_mtime_ns))
    return out


def file_digest(path: str) -> tuple[int, str] | None:
    """(size, SHA-256) of a file's content, or None if it cannot be read."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    return len(data), sha256(data).hexdigest()
