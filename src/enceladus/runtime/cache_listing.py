"""The CLI's view of the cache directory (``enceladus cache list / clear``): every file, its size and kernel name.
Not imported by a process that launches kernels (see ``runtime/cache.py``)."""

from __future__ import annotations

import os
import time

from .. import cachedir
from .cache import KINDS, cache_base

__all__ = ["Entry", "clear", "list_entries", "total_size"]


class Entry:
    """One file in the cache directory (a plain class: this module is on the cached path of a fresh process)."""

    __slots__ = ("kind", "path", "size", "mtime", "name")

    def __init__(self, kind: str, path: str, size: int, mtime: float, name: str) -> None:
        self.kind = kind
        self.path = path
        self.size = size
        self.mtime = mtime
        self.name = name  # kernel name for kernel entries, file name otherwise

    def __repr__(self) -> str:
        return f"Entry({self.kind!r}, {self.path!r}, size={self.size}, name={self.name!r})"


def list_entries(kinds: tuple[str, ...] = KINDS) -> list[Entry]:
    """Every cache file, newest first (does not create the directory)."""
    out: list[Entry] = []
    base = cache_base()
    for kind in kinds:
        root = os.path.join(base, kind)
        if not os.path.isdir(root):
            continue
        for directory, _dirs, names in os.walk(root):
            for fname in names:
                p = os.path.join(directory, fname)
                if fname.startswith(".") or not os.path.isfile(p):
                    continue
                st = os.stat(p)
                name = _kernel_name(p) if kind != "cpu" else fname
                out.append(Entry(kind, p, st.st_size, st.st_mtime, name))
    out.sort(key=lambda e: e.mtime, reverse=True)
    return out


def _kernel_name(path: str) -> str:
    """The kernel an entry is for: a kernel entry's ``name``, an autotuning result's ``kernel`` ("?" if unreadable)."""
    try:
        with open(path, "rb") as f:
            payload, problem = cachedir.check_entry(f.read(), os.path.splitext(os.path.basename(path))[0])
        if problem is not None:  # (decoded only once checked, as read_entry does; listing deletes nothing)
            return "?"
        data = cachedir.load_data(payload)
        return str(data.get("name") or data.get("kernel") or "?")
    except (OSError, ValueError, AttributeError):
        return "?"


def total_size(kinds: tuple[str, ...] = KINDS) -> dict[str, int]:
    """Bytes used per kind of entry."""
    sizes = dict.fromkeys(kinds, 0)
    for e in list_entries(kinds):
        sizes[e.kind] += e.size
    return sizes


def clear(kinds: tuple[str, ...] = KINDS, older_than_s: float | None = None) -> tuple[int, int]:
    """Delete cache files (optionally only those not modified for ``older_than_s``). Returns (files, bytes)."""
    now = time.time()
    n = nbytes = 0
    for e in list_entries(kinds):
        if older_than_s is not None and now - e.mtime < older_than_s:
            continue
        try:
            os.unlink(e.path)
        except OSError:
            continue
        n += 1
        nbytes += e.size
    return n, nbytes
