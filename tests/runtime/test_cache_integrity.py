"""Cache integrity (issue #19): every artifact records its key and a content hash; damaged, swapped or
truncated files are discarded with one warning and rebuilt, never loaded; unusable cache directories and
ENCELADUS_CACHE=0 use a private temporary directory; temporaries of interrupted writes are removed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from enceladus import cachedir
from enceladus.runtime import cache

from . import launch_kernels as lk

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import logging, sys, warnings
    import numpy as np
    import enceladus
    import enceladus.language as tl
    logging.basicConfig(level=logging.WARNING, format="WARN %(message)s", stream=sys.stderr)

    @enceladus.jit
    def axpy(x_ptr, out_ptr, n, a, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, a * tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)

    x = np.arange(3000, dtype=np.float32); out = np.empty_like(x)
    axpy[(enceladus.cdiv(x.size, 256),)](x, out, x.size, 2.0, BLOCK=256)
    np.testing.assert_allclose(out, 2 * x + 1)
    from enceladus import cachedir
    print("PRIVATE", cachedir._private[0] if cachedir._private else "-")
    print("OK")
""")


def run_script(tmp_path: Path, cache_dir: Path | str, **env: str) -> subprocess.CompletedProcess:
    script = tmp_path / "axpy_script.py"
    script.write_text(SCRIPT)
    full = {k: v for k, v in os.environ.items() if k != "ENCELADUS_CACHE"}
    full.update({"ENCELADUS_CACHE_DIR": str(cache_dir), **env})
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=full, timeout=300,
                          cwd=ROOT)


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache directory holding the script's kernel entry, its library and the cpu runtime."""
    root = tmp_path_factory.mktemp("warm")
    res = run_script(root, root / "cache")
    assert res.returncode == 0 and "OK" in res.stdout, res.stderr
    return root / "cache"


def _copy(warm: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "cache"
    shutil.copytree(warm, dst)
    return dst


def _one(cache_dir: Path, pattern: str) -> Path:
    (found,) = sorted((cache_dir / "cpu").glob(pattern))
    return found


@pytest.mark.parametrize(("which", "damage"), [
    ("kernel-*.so", "truncate"), ("kernel-*.so", "garbage"), ("kernel-*.so", "empty"), ("runtime-*.so", "truncate"),
])
def test_a_damaged_shared_library_is_never_loaded_and_is_rebuilt(warm_cache: Path, tmp_path: Path, which: str,
                                                                   damage: str) -> None:
    cache_dir = _copy(warm_cache, tmp_path)
    so = _one(cache_dir, which)
    data = so.read_bytes()
    so.write_bytes({"truncate": data[: len(data) // 3], "garbage": os.urandom(len(data)), "empty": b""}[damage])
    res = run_script(tmp_path, cache_dir)  # on main: SIGBUS (truncated) or OSError on every launch
    assert res.returncode == 0 and "OK" in res.stdout, res.stderr
    warns = [ln for ln in res.stderr.splitlines() if ln.startswith("WARN")]
    assert len(warns) == 1 and "discarded and rebuilt" in warns[0] and so.name in warns[0], res.stderr
    assert _one(cache_dir, which).read_bytes() == data  # rebuilt: the same bytes (the build is deterministic)
    again = run_script(tmp_path, cache_dir)  # the rebuilt library is used as is
    assert again.returncode == 0 and "WARN" not in again.stderr, again.stderr


def test_swapped_libraries_and_index_entries_are_detected(warm_cache: Path, tmp_path: Path) -> None:
    cache_dir = _copy(warm_cache, tmp_path)
    # another kernel's library copied over this one's (same size: a different, valid shared library)
    kernel_so = _one(cache_dir, "kernel-*.so")
    runtime_so = _one(cache_dir, "runtime-*.so")
    kernel_so.write_bytes(runtime_so.read_bytes()[: kernel_so.stat().st_size].ljust(kernel_so.stat().st_size, b"\0"))
    # an index entry copied under another key's name
    index = _one(cache_dir, "index-*.json")
    other = index.with_name("index-" + "0" * 40 + ".json")
    shutil.copy(index, other)
    res = run_script(tmp_path, cache_dir)
    assert res.returncode == 0 and "OK" in res.stdout, res.stderr
    assert "does not match its recorded SHA-256" in res.stderr
    assert cachedir.read_entry(str(other), "index-" + "0" * 40) is None  # the copy is refused and removed
    assert not other.exists()


def test_a_kernel_entry_copied_under_another_key_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENCELADUS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ENCELADUS_CACHE", raising=False)
    x = np.arange(1000, dtype=np.float32)
    out = np.zeros_like(x)
    lk.scale_kernel.cache.clear()
    lk.scale_kernel[(8,)](x, out, 1000, 3.0)  # BLOCK=128 kernel: entry A
    entries = list((tmp_path / "cache" / "kernels").rglob("*.json"))
    (entry_a,) = entries
    lk.scale_kernel.cache.clear()
    lk.scale_kernel[(8,)](x, out, 1000, 3.0, num_warps=2)  # another specialization: entry B
    (entry_b,) = [p for p in (tmp_path / "cache" / "kernels").rglob("*.json") if p != entry_a]
    shutil.copy(entry_a, entry_b)  # B's file now holds A's (checksummed, well-formed) entry
    lk.scale_kernel.cache.clear()
    corrupt, compiled = cache.stats.corrupt, cache.stats.compiled
    out[:] = 0
    kernel = lk.scale_kernel[(8,)](x, out, 1000, 3.0, num_warps=2)
    np.testing.assert_allclose(out, 3 * x)
    assert kernel.metadata["num_warps"] == 2 and kernel.metadata["cache"] == "compiled"
    assert (cache.stats.corrupt, cache.stats.compiled) == (corrupt + 1, compiled + 1)
    assert "holds the entry of another key" in cache.stats.notes[-1]


@pytest.mark.parametrize("kind", ["a file", "under a file"])
def test_an_unusable_cache_directory_falls_back_to_a_private_temporary_one(tmp_path: Path, kind: str) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("user data")
    path = blocker if kind == "a file" else blocker / "cache"
    res = run_script(tmp_path, path)  # on main: FileExistsError / NotADirectoryError on every launch
    assert res.returncode == 0 and "OK" in res.stdout, res.stderr
    assert res.stderr.count("CacheDirWarning") == 1, res.stderr
    private = next(ln.split()[1] for ln in res.stdout.splitlines() if ln.startswith("PRIVATE"))
    assert private != "-" and not os.path.exists(private)  # removed at exit
    assert blocker.read_text() == "user data"


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() == 0, reason="root can write to a read-only directory")
def test_a_read_only_cache_directory_falls_back(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o500)
    res = run_script(tmp_path, ro)
    assert res.returncode == 0 and res.stderr.count("CacheDirWarning") == 1, res.stderr


def test_cache_disabled_writes_nothing_to_the_users_cache(tmp_path: Path) -> None:
    res = run_script(tmp_path, tmp_path / "cache", ENCELADUS_CACHE="0")
    assert res.returncode == 0 and "OK" in res.stdout, res.stderr
    assert not (tmp_path / "cache").exists()  # on main: cpu/ with the libraries and probes
    private = next(ln.split()[1] for ln in res.stdout.splitlines() if ln.startswith("PRIVATE"))
    assert private != "-" and not os.path.exists(private)
    assert "Warning" not in res.stderr


def test_the_in_process_fallback_warns_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    monkeypatch.setenv("ENCELADUS_CACHE_DIR", str(blocker))
    monkeypatch.delenv("ENCELADUS_CACHE", raising=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            lk.scale_kernel.cache.clear()
            x = np.arange(300, dtype=np.float32)
            out = np.zeros_like(x)
            lk.scale_kernel[(3,)](x, out, 300, 2.0)
            np.testing.assert_allclose(out, 2 * x)
    assert [w.category for w in caught].count(cachedir.CacheDirWarning) == 1
    assert cachedir.base().startswith(cachedir._private[0])


def test_stale_temporaries_of_interrupted_writes_are_removed(warm_cache: Path, tmp_path: Path) -> None:
    cache_dir = _copy(warm_cache, tmp_path)
    old = time.time() - 2 * cachedir.STALE_TMP_S
    stale = [cache_dir / "cpu" / ".kernel-x.so.abc123.tmp", cache_dir / "kernels" / "zz" / ".zz12.json.q1w2.tmp"]
    young = cache_dir / "cpu" / ".kernel-y.so.def456.tmp"  # a concurrent writer's: must survive
    for p in [*stale, young]:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"partial")
    for p in stale:
        os.utime(p, (old, old))
    res = run_script(tmp_path, cache_dir)
    assert res.returncode == 0, res.stderr
    # a process that only reads leaves them; the next one that writes sweeps
    (tmp_path / "other.py").write_text(SCRIPT.replace("a * tl.load", "a * 2 * tl.load").replace("2 * x + 1",
                                                                                                "4 * x + 1"))
    env = {**{k: v for k, v in os.environ.items() if k != "ENCELADUS_CACHE"}, "ENCELADUS_CACHE_DIR": str(cache_dir)}
    res = subprocess.run([sys.executable, str(tmp_path / "other.py")], capture_output=True, text=True, env=env,
                         timeout=300, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    assert not any(p.exists() for p in stale) and young.exists()


PLAIN_VALUES = [{"a": [1, 2.5, -3e10, True, False, None, "x\u00e9\n\"q\""]}, [], "s", 1, -0.0, 10**30, float("inf"),
                (1, (2.5, "t")), {(1, 2): "non-string key"}, {"nested": {"k": [[], {}, [{"z": 0}]]}}, b"\x00\xff",
                "\u00e9\u4e2d"]


def test_cache_payloads_round_trip_plain_data_and_refuse_anything_else() -> None:
    """Entries and records are marshal data (cachedir.dump_data / load_data: built into the interpreter, so a fresh
    process loads no JSON decoder, #26): plain values come back equal and of the same types, tuples as tuples; a value
    that is not plain data is refused when writing, and bytes that are not a payload with a ValueError when reading.
    dumps_plain (cache keys) writes json.dumps's text."""
    import json
    import math

    for value in PLAIN_VALUES:
        back = cachedir.load_data(cachedir.dump_data(value))
        assert back == value and repr(back) == repr(value), value
    assert math.isnan(cachedir.load_data(cachedir.dump_data(float("nan"))))
    for bad in ({1, 2}, [object()], {"k": np.float32(1)}, {"k": cachedir}, compile("1", "x", "eval"), 1j):
        with pytest.raises(ValueError, match="not plain data"):
            cachedir.dump_data(bad)
    payload = cachedir.dump_data({"a": [1, 2, "three"]})
    for broken in (b"", payload[:-3], b"\xff\xfe", b"{"):
        with pytest.raises(ValueError, match="not a cache payload"):
            cachedir.load_data(broken)
    for value in ([1, 2, [3, "a b", True, False, None]], (), [[]], ['q"uote', "back\\slash", "tab\tnew\nline\r"],
                  ["\u00e9"], [1.5, -0.0], {"a": [1]}, [-3, 10**30], ["\x01\x7f"], "plain", 7, None):
        assert cachedir.dumps_plain(value) == json.dumps(value), value
