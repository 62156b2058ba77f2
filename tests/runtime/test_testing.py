"""enceladus.testing: do_bench, perf_report / Benchmark, assert_close."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import enceladus
from enceladus.testing import Benchmark, assert_close, do_bench, perf_report


def test_do_bench_times_a_sleep() -> None:
    import time

    ms = do_bench(lambda: time.sleep(0.002), warmup=2, rep=20)
    assert 1.5 < ms < 50
    med, lo, hi = do_bench(lambda: time.sleep(0.001), warmup=0, rep=10, quantiles=[0.5, 0.2, 0.8])
    assert lo <= med <= hi
    assert do_bench(lambda: None, rep=1, return_mode="min") <= do_bench(lambda: None, rep=1, return_mode="max") + 1


def test_do_bench_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="quantiles"):
        do_bench(lambda: None, quantiles=[1.5])
    with pytest.raises(ValueError, match="rep > 0"):
        do_bench(lambda: None, rep=0)


def test_assert_close() -> None:
    assert_close(np.ones(4, np.float32), np.ones(4) + 1e-3)
    assert_close(1.0, 1.005)
    assert_close(np.array([np.nan, 1.0]), np.array([np.nan, 1.0]))
    assert_close(np.float16(1), 1.0, atol=lambda dt: 1e-3 if dt == np.float16 else 0)
    with pytest.raises(AssertionError):
        assert_close(np.ones(4), np.zeros(4))
    with pytest.raises(AssertionError, match="is not close"):
        assert_close(1.0, 2.0, err_msg="scalar")


def test_perf_report_table_csv_and_plot(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    @perf_report(Benchmark(x_names=["size"], x_vals=[2**k for k in range(4, 7)], line_arg="provider",
                           line_vals=["numpy", "twice"], line_names=["NumPy", "Twice"], plot_name="copy-speed",
                           ylabel="ms", args={"scale": 1}))
    def bench(size: int, provider: str, scale: int):
        t = float(size) * scale * (2 if provider == "twice" else 1)
        return t, t - 1, t + 1

    table = bench.run(print_data=True, return_df=True)
    printed = capsys.readouterr().out
    assert "copy-speed" in printed and "NumPy" in printed and "Twice" in printed and "-min" not in printed
    rows = table.values.tolist() if hasattr(table, "values") else table.rows
    assert [r[0] for r in rows] == [16, 32, 64] and rows[0][1] == 16.0 and rows[0][4] == 32.0
    pytest.importorskip("matplotlib")
    bench.run(save_path=str(tmp_path))
    assert (tmp_path / "copy-speed.csv").read_text().startswith("size,NumPy,NumPy-min")
    assert (tmp_path / "copy-speed.png").stat().st_size > 1000


def test_benchmark_validation() -> None:
    with pytest.raises(ValueError, match="line_names"):
        Benchmark(x_names=["n"], x_vals=[1], line_arg="p", line_vals=[1, 2], line_names=["a"], plot_name="x")


def test_testing_is_reachable_from_the_package() -> None:
    assert enceladus.testing.do_bench is do_bench
