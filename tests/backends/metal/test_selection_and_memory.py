"""Backend selection on Linux, and the metal backend's pure host-memory arithmetic."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from enceladus.backends.metal import unavailable_reason
from enceladus.backends.metal.memory import AllocationRegistry, byte_extent, page_span
from enceladus.backends.metal.stream import buffer_runs


def _run(code: str, **env: str) -> subprocess.CompletedProcess:
    import os

    full = {**os.environ, **env}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=120)


off_macos = pytest.mark.skipif(sys.platform == "darwin", reason="checks the behaviour off macOS")


@off_macos
def test_import_and_default_backend_never_touch_objc() -> None:
    code = ("import sys, enceladus; from enceladus.runtime.backend import get_backend; "
            "print(get_backend().name, 'enceladus.backends.metal' in sys.modules)")
    r = _run(code, ENCELADUS_BACKEND="")
    assert r.stdout.split() == ["cpu", "False"], r.stderr


@off_macos
def test_forcing_metal_off_macos_is_a_clear_error() -> None:
    r = _run("from enceladus.runtime.backend import get_backend; get_backend()", ENCELADUS_BACKEND="metal")
    assert r.returncode != 0
    assert "ENCELADUS_BACKEND=metal, but the metal backend cannot start: Metal exists only on macOS" in r.stderr


def test_unavailable_reasons() -> None:
    assert "only on macOS" in unavailable_reason("linux")
    assert "arm64" in unavailable_reason("darwin", "x86_64", 15)
    assert "macOS 15" in unavailable_reason("darwin", "arm64", 14)
    assert unavailable_reason("darwin", "arm64", 15) is None
    assert unavailable_reason("darwin", "arm64", 26) is None


@pytest.mark.parametrize("address,nbytes,page,expect", [
    (16384, 100, 16384, (16384, 16384, 0)),
    (16384 + 4, 16384, 16384, (16384, 32768, 4)),
    (3 * 16384 - 8, 16, 16384, (2 * 16384, 2 * 16384, 16384 - 8)),
    (4096 * 7 + 1, 0, 4096, (4096 * 7, 4096, 1)),
])
def test_page_span(address: int, nbytes: int, page: int, expect: tuple[int, int, int]) -> None:
    span = page_span(address, nbytes, page)
    assert (span.base, span.length, span.offset) == expect
    assert span.base % page == 0 and span.length % page == 0
    assert span.base + span.offset == address and span.base + span.length >= address + nbytes


def test_byte_extent() -> None:
    a = np.zeros((4, 6), dtype=np.float32)
    assert byte_extent(a) == (a.ctypes.data, 96)
    v = a[:, ::2]
    assert byte_extent(v) == (a.ctypes.data, (3 * 24 + 2 * 8) + 4)
    assert byte_extent(a[1:2, :3]) == (a.ctypes.data + 24, 12)


class _Buf:
    def __init__(self, address: int, nbytes: int) -> None:
        self.address, self.nbytes = address, nbytes


def test_allocation_registry() -> None:
    reg = AllocationRegistry()
    a, b = _Buf(1000, 100), _Buf(5000, 10)
    reg.add(b)
    reg.add(a)
    assert reg.find(1000) == (a, 0) and reg.find(1099) == (a, 99)
    assert reg.find(1100) is None and reg.find(999) is None
    assert reg.find(5009) == (b, 9)
    reg.remove(a)
    assert reg.find(1000) is None and len(reg) == 1


def test_buffer_runs() -> None:
    assert buffer_runs({0: (10, 0), 1: (11, 4), 2: (12, 0)}) == [(0, [10, 11, 12], [0, 4, 0])]
    assert buffer_runs({3: (1, 0), 0: (2, 8)}) == [(0, [2], [8]), (3, [1], [0])]
