"""Fixtures: the metal backend's host code running against the recording stand-in for libobjc."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from enceladus.backends.metal import MetalBackend

from .objc_recorder import RecordingObjCRuntime


@pytest.fixture(scope="session")
def _private_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("enceladus-metal-cache"))


@pytest.fixture(autouse=True)
def _private_cache(_private_cache_dir: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # per test: the tests of other directories run by the same worker keep the run's cache (see ../cpu/conftest.py)
    monkeypatch.setenv("ENCELADUS_CACHE_DIR", _private_cache_dir)
    yield


@pytest.fixture(scope="session")
def cpu() -> object:
    from enceladus.backends.cpu import CpuBackend

    return CpuBackend()


@pytest.fixture
def recorder(cpu: object) -> RecordingObjCRuntime:
    return RecordingObjCRuntime(cpu_backend=cpu)


@pytest.fixture
def metal(recorder: RecordingObjCRuntime, monkeypatch: pytest.MonkeyPatch) -> Iterator[MetalBackend]:
    monkeypatch.delenv("ENCELADUS_CAPTURE", raising=False)
    backend = MetalBackend(runtime=recorder, macos=15)
    yield backend
    assert recorder.violations == []
    assert recorder.unpooled == []  # nothing Metal autoreleases may leak (MSL_AUDIT D8)
