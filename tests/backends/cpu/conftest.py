"""Shared fixtures: every test runs under each installed host compiler (clang++, g++)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import numpy as np
import pytest

from enceladus.backends.cpu import CpuBackend, CpuLibrary
from paths import path_missing

COMPILERS = ["clang++", "g++"]


@pytest.fixture(scope="session")
def _private_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("enceladus-cache"))


@pytest.fixture(autouse=True)
def _private_cache(_private_cache_dir: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # One cache per test session for the tests of this directory: they build for real, and reruns inside a session
    # hit the cache. Set per test, so the tests of other directories run by the same worker keep the run's cache
    # (a session-wide setting moved them to this one from the first test here on, and each worker rebuilt what the
    # other had built).
    monkeypatch.setenv("ENCELADUS_CACHE_DIR", _private_cache_dir)
    yield


@pytest.fixture(scope="session", params=COMPILERS)
def backend(request: pytest.FixtureRequest) -> CpuBackend:
    if shutil.which(request.param) is None:
        if not any(shutil.which(c) for c in COMPILERS):
            path_missing("cpu", "no C++ compiler (clang++ or g++) is installed")  # a failure when CI=true
        pytest.skip(f"{request.param} is not installed")
    return CpuBackend(request.param)


def _run(lib: CpuLibrary, name: str, groups, tptg, *arrays: np.ndarray, threads=None, **kw) -> None:
    """Launch kernel `name` with arrays bound to buffer slots 0, 1, 2, ... in order."""
    buffers = {i: a.ctypes.data for i, a in enumerate(arrays)}
    fn = lib.function(name)
    if threads is not None:
        fn.dispatch_threads(threads, tptg, buffers, **kw)
    else:
        fn.launch(groups, tptg, buffers, **kw)


@pytest.fixture
def run():
    """``run(lib, name, groups, tptg, *arrays, threads=None, **kw)``: arrays go to buffer slots 0, 1, ..."""
    return _run
