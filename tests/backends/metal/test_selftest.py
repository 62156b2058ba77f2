"""``python -m enceladus.selftest`` on the backend available here (cpu on Linux)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def _selftest(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "ENCELADUS_BACKEND": ""}
    return subprocess.run([sys.executable, "-m", "enceladus.selftest", "--no-examples", *args], capture_output=True,
                          text=True, env=env, timeout=300)


@pytest.mark.skipif(sys.platform == "darwin", reason="on a Mac the backend may be metal (macos-metal workflow)")
def test_selftest_reports_backend_and_passes_on_cpu() -> None:
    r = _selftest()
    assert r.returncode == 0, r.stdout + r.stderr
    assert "backend: cpu" in r.stdout
    assert "[PASS] integer div/mod regression" in r.stdout
    assert "0 failed (backend: cpu)" in r.stdout


@pytest.mark.skipif(sys.platform == "darwin", reason="checks the behaviour off macOS")
def test_require_metal_fails_off_metal() -> None:
    r = _selftest("--require-metal")
    assert r.returncode == 1
    assert "did NOT run on Metal" in r.stderr


def test_selftest_through_the_metal_host_code_on_the_standin() -> None:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    r = subprocess.run([sys.executable, os.path.join(root, "tests/backends/metal/standin_runner.py"), "-m",
                        "enceladus.selftest", "--no-examples", "--require-metal"], capture_output=True, text=True,
                       timeout=300, cwd=root)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "backend: metal   device: Recording stand-in (not a GPU)" in r.stdout
    assert "6 passed, 0 failed (backend: metal)" in r.stdout
    assert '"violations": []' in r.stdout
