"""Every program the fuzzer ever shrank to a failure stays here and must keep agreeing on both paths.

A file may set ``SKIP = "compiler bug: <one line>; reported"`` while the bug is open.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from paths import needs_cpu

from .harness import differential, load_module

FILES = sorted((Path(__file__).parent / "regressions").glob("*.py"))


@needs_cpu
@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_regression(path):
    skip = getattr(load_module(path), "SKIP", None)
    if skip:
        pytest.skip(skip)
    differential(path)
