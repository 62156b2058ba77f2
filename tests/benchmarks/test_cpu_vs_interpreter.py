"""benchmarks/cpu_vs_interpreter.py: the interpreter against the cpu backend, with another checkout's cpu backend as a
baseline column."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "cpu_vs_interpreter.py"


def test_baseline_must_be_a_source_directory(tmp_path):
    res = subprocess.run([sys.executable, str(SCRIPT), "--baseline", str(tmp_path), "--out", str(tmp_path / "r.json")],
                         capture_output=True, text=True)
    assert res.returncode == 2
    assert "expected a source directory holding enceladus/__init__.py" in res.stderr
    assert not (tmp_path / "r.json").exists()


def test_baseline_column(tmp_path, monkeypatch):
    monkeypatch.setenv("ENCELADUS_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "r.json"
    res = subprocess.run([sys.executable, str(SCRIPT), "--cases", "tutorial", "--rounds", "1", "--launches", "1",
                          "--baseline", str(ROOT / "src"), "--out", str(out)], capture_output=True, text=True,
                         timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "cpu/base" in res.stdout
    (row,) = json.loads(out.read_text())["cases"]
    assert row["case"].startswith("tutorial matmul")
    assert len(row["rounds_baseline_s"]) == 1 and row["baseline_cpu_s"] > 0
    assert row["ratio_to_baseline"] == row["cpu_cpu_s"] / row["baseline_cpu_s"]
    assert (tmp_path / "cache-baseline").is_dir()  # the baseline built into its own cache
