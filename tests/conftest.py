"""Suite-wide settings: hypothesis profiles (select with HYPOTHESIS_PROFILE=<name>).

- "default": deterministic examples, no per-example deadline (a first compile takes ~0.2 s of clang).
- "fuzz-long": random examples for the long differential fuzz (see docs/robustness.md and tools/fuzz_campaign.sh).
- Every kernel launched in a session (any test directory) also goes through the GPU proxy's MSL -> CUDA
  rewrite (benchmarks/gpu_proxy); the rewrite must type-check as C++ against a CUDA stub header (no GPU
  or nvcc needed). Checked once per session and xdist worker, over every kernel that worker launched;
  ENCELADUS_PROXY_CHECK=0 turns it off (the long fuzz campaign of docs/robustness.md; the child runs of
  tests/cpu_modes.py, whose parent checks the same kernels).
- The kernel cache is a new folder per run (ENCELADUS_CACHE_DIR, unless given): never the user's own cache.
- A child run of tests/cpu_modes.py (a cpu-backend build mode over the kernel corpus) records the ops of
  every launched kernel and the mode's reports, per test.
"""

import atexit
import hashlib
import os
import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, settings

# Hermetic: the suite never reads or writes the user's own kernel cache (~/.cache/enceladus), whose entries may
# come from another checkout or an older version and would change what a test sees. One new folder per run,
# created by the process that loads this file first (xdist's workers inherit the variable, so they share it),
# removed when that process exits. An ENCELADUS_CACHE_DIR given by the caller is kept.
if "ENCELADUS_CACHE_DIR" not in os.environ:
    os.environ["ENCELADUS_CACHE_DIR"] = _SUITE_CACHE = tempfile.mkdtemp(prefix="enceladus-test-cache-")
    atexit.register(shutil.rmtree, _SUITE_CACHE, True)

settings.register_profile("default", deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("fuzz-long", deadline=None, derandomize=False, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile("default")


@pytest.fixture(scope="session", autouse=True)
def gpu_proxy_rewrite_of_every_kernel():
    from enceladus.backends.cpu import find_compiler
    from enceladus.runtime import launch

    if os.environ.get("ENCELADUS_PROXY_CHECK", "1") == "0":  # long fuzz campaigns: thousands of throwaway kernels
        yield {}
        return
    seen: dict[str, str] = {}
    original = launch.KernelLauncher.__init__

    def record(self, kernel):
        msl = kernel.asm["msl"]
        seen.setdefault(hashlib.sha256(msl.encode()).hexdigest(), msl)
        original(self, kernel)

    launch.KernelLauncher.__init__ = record
    try:
        yield seen
    finally:
        launch.KernelLauncher.__init__ = original
    if not seen:
        return
    from codegen.gpu_proxy_loader import gpu_proxy

    syntax_check = gpu_proxy("check").syntax_check
    problems = syntax_check(seen.values(), find_compiler().command)
    if problems:
        pytest.fail(f"the GPU proxy's rewrite of {len(seen)} kernels launched by this test session failed:\n"
                    + "\n".join(problems)[:12000], pytrace=False)


@pytest.fixture(scope="session", autouse=True)
def _cpu_mode_recorder():
    """In a child run of tests/cpu_modes.py (ENCELADUS_TEST_MODE_RECORD set): record the IR ops of every
    launched kernel and every report of a cpu-backend build mode, per test. Otherwise nothing."""
    from cpu_modes import recorder_from_env

    recorder = recorder_from_env()
    if recorder is not None:
        recorder.install()
    try:
        yield recorder
    finally:
        if recorder is not None:
            recorder.uninstall()
            recorder.write(os.environ.get("PYTEST_XDIST_WORKER", "main"))


@pytest.fixture(autouse=True)
def _cpu_mode_record_test(request, _cpu_mode_recorder):
    if _cpu_mode_recorder is None:
        yield
        return
    t0 = _cpu_mode_recorder.start(request.node.nodeid)
    try:
        yield
    finally:
        _cpu_mode_recorder.stop(request.node.nodeid, t0)
