"""The stamps a fresh process checks instead of reading every source: the compiler's sources (part of every kernel
key, ``runtime/cache.compiler_digest``) and the cpu backend's headers, runtime and translator (part of every library
key, ``backends/cpu/toolchain.headers_digest``). An unchanged tree is answered from the memo without reading a
source; an edited, added or removed file changes the digest (an editable install must never reuse a kernel built
by the old compiler)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from enceladus import cachedir
from enceladus.backends.cpu import toolchain
from enceladus.runtime import cache

PKG = Path(cache.__file__).resolve().parents[1]


def _refuse(*_args: object) -> str:
    raise AssertionError("the memo should have answered: no source is read for an unchanged tree")


def _touch_later(path: Path) -> None:
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))


@pytest.fixture
def compiler_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    pkg = tmp_path / "enceladus"
    for sub in ("compiler", "language"):
        shutil.copytree(PKG / sub, pkg / sub, ignore=shutil.ignore_patterns("__pycache__"))
    (pkg / "runtime").mkdir()
    for name in ("cache.py", "serialize.py"):  # the entry format's sources (cache._FORMAT_SOURCES)
        shutil.copy(PKG / "runtime" / name, pkg / "runtime")
    shutil.copy(PKG / "errors.py", pkg)
    monkeypatch.setattr(cache, "_PACKAGE_DIR", str(pkg))
    monkeypatch.setenv("ENCELADUS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ENCELADUS_CACHE", raising=False)
    cache.compiler_digest.cache_clear()
    yield pkg
    cache.compiler_digest.cache_clear()  # the next call computes the real tree's digest again


def _digest_again() -> str:
    cache.compiler_digest.cache_clear()  # as a new process would
    return cache.compiler_digest()


def test_compiler_digest_comes_from_the_memo_until_a_source_changes(compiler_tree: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    first = _digest_again()
    assert len(first) == 64
    with monkeypatch.context() as m:
        m.setattr(cache, "_hash_compiler_sources", _refuse)
        assert _digest_again() == first
    seen = {first}
    ir = compiler_tree / "compiler" / "ir.py"
    text = ir.read_bytes()
    ir.write_bytes(text.replace(b"def ", b"def  ", 1)[:-1])  # edited in place, same size
    _touch_later(ir)
    seen.add(_digest_again())
    (compiler_tree / "compiler" / "passes" / "new_pass.py").write_text("X = 1\n")  # a new source in a subpackage
    seen.add(_digest_again())
    (compiler_tree / "language" / "core.py").unlink()  # a removed source
    seen.add(_digest_again())
    assert len(seen) == 4
    (compiler_tree / "compiler" / "passes" / "__pycache__").mkdir()  # bytecode is not a source
    (compiler_tree / "compiler" / "passes" / "__pycache__" / "x.py").write_text("")
    last = cache.compiler_digest()
    assert _digest_again() == last


def test_headers_digest_comes_from_the_memo_until_a_header_changes(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    here = tmp_path / "cpu"
    shutil.copytree(toolchain.INCLUDE_DIR, here / "include")
    for p in (toolchain.RUNTIME_SOURCE, *toolchain.TRANSLATOR_SOURCES):
        shutil.copy(p, here)
    monkeypatch.setattr(toolchain, "_HERE", str(here))
    monkeypatch.setattr(toolchain, "INCLUDE_DIR", str(here / "include"))
    monkeypatch.setattr(toolchain, "RUNTIME_SOURCE", str(here / "runtime.cpp"))
    monkeypatch.setattr(toolchain, "TRANSLATOR_SOURCES", (str(here / "translate.py"), str(here / "signature.py")))
    monkeypatch.setenv("ENCELADUS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ENCELADUS_CACHE", raising=False)

    def again() -> str:
        toolchain.headers_digest.cache_clear()
        return toolchain.headers_digest()

    try:
        first = again()
        reads = []
        real_open = open
        monkeypatch.setattr("builtins.open", lambda p, *a, **k: reads.append(str(p)) or real_open(p, *a, **k))
        assert again() == first
        assert not [p for p in reads if p.startswith(str(here))]  # no header was read
        monkeypatch.setattr("builtins.open", real_open)
        header = next((here / "include").rglob("*.h"))
        header.write_bytes(header.read_bytes() + b"\n")
        second = again()
        runtime = here / "runtime.cpp"
        runtime.write_bytes(runtime.read_bytes().replace(b"int ", b"int  ", 1)[:-1])  # same size
        _touch_later(runtime)
        third = again()
        assert len({first, second, third}) == 3
    finally:
        toolchain.headers_digest.cache_clear()


def test_stat_tree_lists_sources_sorted_without_bytecode(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "__pycache__").mkdir()
    for rel in ("z.py", "a.py", "b/m.py", "b/__pycache__/m.py", "notes.txt"):
        (tmp_path / rel).write_text(rel)
    os.symlink(tmp_path / "b", tmp_path / "linked")  # a linked directory is not entered (as os.walk)
    rows = cachedir.stat_tree(str(tmp_path), ".py")
    assert [os.path.relpath(p, tmp_path) for p, _, _ in rows] == ["a.py", "b/m.py", "z.py"]
    assert all(size == len(os.path.relpath(p, tmp_path)) for p, size, _ in rows)
    with pytest.raises(OSError):
        cachedir.stat_tree(str(tmp_path / "missing"))
