"""Every example runs and checks itself, compiled (cpu backend) and with the interpreter."""

import os
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = sorted(p for p in (pathlib.Path(__file__).parent.parent / "examples").glob("[0-9]*.py"))


@pytest.mark.parametrize("interpret", [False, True], ids=["cpu", "interpreter"])
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_example(example, interpret):
    env = dict(os.environ, ENCELADUS_INTERPRET="1" if interpret else "0")
    res = subprocess.run([sys.executable, str(example)], capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "OK" in res.stdout
    assert ("'interpreter'" if interpret else "'cpu'") in res.stdout
