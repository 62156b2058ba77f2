"""Compiler discovery, the build cache and its safety checks, compile errors."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from enceladus.backends.cpu import (
    CacheSecurityError,
    CompilerNotFoundError,
    CpuBackend,
    MSLCompileError,
    MSLSyntaxError,
    cache_dir,
    find_compiler,
)

SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void k(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] += %s; }
"""


def test_cache_reuses_library(backend: CpuBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENCELADUS_CACHE_DIR", str(tmp_path / "c"))
    first = backend.compile(SRC % "1.0f")
    assert first.built
    second = backend.compile(SRC % "1.0f")
    assert not second.built and second.path == first.path
    assert stat.S_IMODE((tmp_path / "c" / "cpu").stat().st_mode) == 0o700
    assert backend.compile(SRC % "2.0f").path != first.path


def test_missing_compiler_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENCELADUS_CXX", "/nonexistent/clang++")
    with pytest.raises(CompilerNotFoundError, match=r"apt-get install -y clang.*pip install ziglang"):
        find_compiler()


def test_no_compiler_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    import enceladus.backends.cpu.toolchain as tc

    monkeypatch.delenv("ENCELADUS_CXX", raising=False)
    monkeypatch.setattr(tc, "_which", lambda name: None)
    real_import = builtins.__import__

    def no_zig(name: str, *args: object, **kwargs: object) -> object:
        if name == "ziglang":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_zig)
    tc._find_compiler_cached.cache_clear()
    try:
        with pytest.raises(CompilerNotFoundError, match="apt-get install -y clang"):
            find_compiler()
    finally:
        tc._find_compiler_cached.cache_clear()


def test_unsafe_cache_dir_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = tmp_path / "shared"
    base.mkdir()
    os.chmod(base, 0o777)
    monkeypatch.setenv("ENCELADUS_CACHE_DIR", str(base))
    with pytest.raises(CacheSecurityError, match="writable by group or others"):
        cache_dir()


def test_compile_error_points_at_msl_line(backend: CpuBackend) -> None:
    with pytest.raises(MSLCompileError, match=r"kernel\.metal:4"):
        backend.compile(SRC % "undefined_name")


def test_metal_rejections(backend: CpuBackend) -> None:
    with pytest.raises(MSLCompileError, match="double"):
        backend.compile(SRC % "double(1)")
    with pytest.raises(MSLCompileError):
        backend.compile("#include <vector>\n" + SRC % "1.0f")


def test_bad_signature() -> None:
    from enceladus.backends.cpu import parse_kernels

    with pytest.raises(MSLSyntaxError, match="no attribute"):
        parse_kernels("kernel void k(device float* x) {}")
    with pytest.raises(MSLSyntaxError, match="use one of"):
        parse_kernels("kernel void k(float3 p [[thread_position_in_grid]]) {}")
    with pytest.raises(MSLSyntaxError, match="does not support"):
        parse_kernels("kernel void k(uint p [[stage_in]]) {}")


def test_library_cache_key_includes_the_runtime_abi(monkeypatch):
    # a library built for another runtime ABI (an upgrade, another checkout sharing the cache) gets another key, so
    # it is rebuilt instead of being loaded and refused ("built for another runtime ABI")
    from enceladus.backends.cpu import library, toolchain

    compiler = toolchain.CompilerInfo(("/usr/bin/c++",), "clang", "test identity")
    before = toolchain.cache_key("kernel void k() {}", compiler, ("-O2",))
    monkeypatch.setattr(library, "ABI_VERSION", library.ABI_VERSION + 1)
    assert toolchain.cache_key("kernel void k() {}", compiler, ("-O2",)) != before
