"""Differential fuzzing: random well-typed tile programs must give the same results on the interpreter
and on the compiled cpu backend (see generator.py for what is generated, harness.py for the comparison).

Normal runs: a few deterministic examples (the "default" hypothesis profile in tests/conftest.py).
Long run:    ENCELADUS_FUZZ_EXAMPLES=10000 ENCELADUS_FUZZ_LOG=fuzz.log .venv/bin/python -m pytest tests/fuzz -q \
             -p no:cacheprovider   (docs/robustness.md: the campaign command and the figures of the last one)
A failure is shrunk to a minimal program; its file is named in the failure. Keep it as a regression
test by copying it into tests/fuzz/regressions/ (test_regressions.py runs every file there).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings

from paths import needs_cpu

from .generator import programs
from .harness import Mismatch, differential, write_program

EXAMPLES = int(os.environ.get("ENCELADUS_FUZZ_EXAMPLES", "25"))
LONG = EXAMPLES > 25

pytestmark = needs_cpu


@pytest.fixture(scope="module", autouse=True)
def private_cache_for_long_runs(tmp_path_factory):
    """Long runs compile thousands of throwaway kernels: keep them out of the user's cache."""
    if not LONG:
        yield
        return
    old = os.environ.get("ENCELADUS_CACHE_DIR")
    os.environ["ENCELADUS_CACHE_DIR"] = str(tmp_path_factory.mktemp("fuzz-cache"))
    yield
    if old is None:
        os.environ.pop("ENCELADUS_CACHE_DIR", None)
    else:
        os.environ["ENCELADUS_CACHE_DIR"] = old


@settings(max_examples=EXAMPLES, deadline=None, derandomize=not LONG, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs())
def test_interpreter_and_cpu_backend_agree(program):
    path = write_program(program.source())
    log = os.environ.get("ENCELADUS_FUZZ_LOG")  # long campaigns count their programs here (one line each)
    if log:
        with open(log, "a") as f:
            f.write(f"{path.name} {' '.join(sorted(program.features))}\n")
    try:
        differential(path)
    except Exception as e:
        raise Mismatch(f"{type(e).__name__}: {e}\nprogram: {path}\n"
                       f"keep it: cp {path} tests/fuzz/regressions/<short_name>.py\n\n{program.source()}") from e
