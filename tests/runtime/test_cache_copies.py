"""Disk-cache entries written by another copy of the same code (another checkout, a moved project, CI's home
cache of an earlier clone): the key holds each function's file name and lines but not its folder, so such an
entry is loaded, and every file its messages cite must then be this copy's (stale-global errors, the cpu
backend's bounds reports through the line table, device_assert sites)."""

from __future__ import annotations

import numpy as np
import pytest

import enceladus
from enceladus import StaleGlobalError
from paths import needs_cpu

COPY = """
import enceladus
import enceladus.language as tl
SHIFT = 1

@enceladus.jit
def add_shift(x):
    return x + SHIFT

@enceladus.jit
def copied(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, add_shift(tl.load(x_ptr + offs)))

@enceladus.jit
def reads_past(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs + 1))

@enceladus.jit
def asserts(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_assert(x < 5, "x must stay below 5")
"""


def _two_copies(tmp_path, monkeypatch: pytest.MonkeyPatch) -> list:
    """Two copies of COPY in two folders (one module name, as in two checkouts) over one new kernel cache."""
    import importlib.util

    monkeypatch.setenv("ENCELADUS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ENCELADUS_CACHE", raising=False)
    out = []
    for tag in ("first", "second"):
        path = tmp_path / tag / "kernels.py"
        path.parent.mkdir()
        path.write_text(COPY)
        spec = importlib.util.spec_from_file_location("stale_copy", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        out.append((mod, path))
    return out


def test_a_stale_global_of_a_kernel_from_the_disk_cache_names_this_copys_file(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The disk key holds a kernel's file name and lines but not its folder: a second checkout of the same code
    loads the first one's entry, and a changed global must then be reported in the second checkout's file (the
    cached entry used to name the first one's: CI's cache of an earlier clone made this test file's messages
    point elsewhere)."""
    from enceladus.runtime import cache

    mods, hits = _two_copies(tmp_path, monkeypatch), cache.stats.disk_hits
    for mod, _ in mods:
        x = np.arange(8, dtype=np.float32)
        mod.copied[(1,)](x, BLOCK=8)
        np.testing.assert_array_equal(x, np.arange(8) + 1)
    assert cache.stats.disk_hits == hits + 1  # the second copy's kernel came from the first one's entry
    (mod, path), first = mods[1], mods[0][1]
    mod.SHIFT = 2
    with pytest.raises(StaleGlobalError, match="Global variable SHIFT .* from 1 to 2") as info:
        mod.copied[(1,)](np.zeros(8, dtype=np.float32), BLOCK=8)
    assert f"{path}:8: return x + SHIFT" in str(info.value) and str(first) not in str(info.value)


@needs_cpu
def test_bounds_and_assert_messages_of_a_kernel_from_the_disk_cache_name_this_copys_file(tmp_path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The cpu backend's out-of-bounds report (through the kernel's line table) and a device_assert (through its
    device-log site) name this copy's file, whose text they quote (the other copy's file may hold other text)."""
    from enceladus.runtime import cache

    (first, first_path), (second, second_path) = _two_copies(tmp_path, monkeypatch)
    x, out = np.arange(8, dtype=np.float32), np.zeros(8, dtype=np.float32)
    with pytest.raises(enceladus.LaunchError, match=f"at line 18 of {first_path}: " + r"tl.store\(out_ptr"):
        first.reads_past[(1,)](x, out, BLOCK=8)
    with pytest.raises(AssertionError, match="x must stay below 5"):
        first.asserts[(1,)](x, BLOCK=8, debug=True)
    first_path.write_text("# this copy changed since\n" * 30)  # what linecache would read from it now
    hits = cache.stats.disk_hits
    with pytest.raises(enceladus.LaunchError) as info:
        second.reads_past[(1,)](x, out, BLOCK=8)
    assert cache.stats.disk_hits == hits + 1  # the second copy's kernel came from the first one's entry
    assert f"at line 18 of {second_path}: tl.store(out_ptr + offs, tl.load(x_ptr + offs + 1))" in str(info.value)
    assert str(first_path) not in str(info.value)
    with pytest.raises(AssertionError, match="x must stay below 5") as info:  # a device-log site: the same
        second.asserts[(1,)](x, BLOCK=8, debug=True)
    assert f"of {second_path}" in str(info.value) and str(first_path) not in str(info.value)
