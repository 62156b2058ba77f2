"""Shared fixtures: every test runs under each installed host compiler (clang++, g++)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import numpy as np
import pytest

from enceladus.backends.cpu import CpuBackend, CpuLibrary
from paths import path_missing

COMPILERS = ["clang++", "g++"]


@pytest.fixture(scope="session", autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    # One cache per test session: tests build for real, and reruns inside a session hit the cache.
    mp = pytest.MonkeyPatch()
    mp.setenv("ENCELADUS_CACHE_DIR", str(tmp_path_factory.mktemp("enceladus-cache")))
    yield
    mp.undo()


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
