"""Benchmarking and checking helpers, as in ``triton.testing``: ``do_bench``, ``perf_report`` / ``Benchmark``,
``assert_close``.

    from enceladus.testing import do_bench
    ms = do_bench(lambda: add_kernel[grid](x, y, out, n, BLOCK=1024))

Timing is wall clock around each call, after waiting for the device (``enceladus.synchronize()``, when the
backend is asynchronous); launches on NumPy arrays are synchronous, so on the ``cpu`` backend the time
is the kernel's run time plus the launch overhead. On ``metal``, ``do_bench`` reads GPU timestamps
instead (several launches per command buffer, ``GPUEndTime - GPUStartTime`` divided by their number). Plots need matplotlib (``pip install matplotlib``),
imported only when a plot is asked for.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

_RETURN_MODES = ("min", "max", "mean", "median", "all")


def _synchronize() -> None:
    import enceladus

    sync = getattr(enceladus, "synchronize", None)
    if sync is not None:
        sync()


def _gpu_times(fn: Callable[[], Any], n_repeat: int) -> list[float] | None:
    """Per-launch GPU times (ms) from command-buffer timestamps, when the current stream's queue offers
    ``timed()`` (metal): up to 10 samples, each the average over one command buffer holding several
    calls (Apple GPUs sample timestamps only at command-buffer boundaries). None when unavailable or
    when ``fn`` launched nothing on the stream (e.g. it used another framework's queue)."""
    from .runtime.stream import current_stream

    timed = getattr(current_stream().queue, "timed", None)
    if timed is None:
        return None
    samples = max(1, min(n_repeat, 10))
    per = max(1, n_repeat // samples)
    times = []
    for _ in range(samples):
        with timed() as t:
            for _ in range(per):
                fn()
        if t.dispatches == 0 and t.command_buffers == 0:
            return None
        times.append(t.seconds * 1e3 / per)
    return times


def do_bench(fn: Callable[[], Any], warmup: float = 25, rep: float = 100, grad_to_none: Any = None,
             quantiles: Sequence[float] | None = None, return_mode: str = "mean") -> Any:
    """Time ``fn()`` in milliseconds (Triton's ``do_bench``).

    ``warmup`` and ``rep`` are budgets in milliseconds: the number of warm-up and timed calls is
    derived from a first estimate of one call's time (at least one of each). With ``quantiles``
    (e.g. ``[0.5, 0.2, 0.8]``) returns those quantiles of the timings (a list, or a float for one
    quantile); otherwise one statistic per ``return_mode``: "min", "max", "mean", "median" or "all"
    (the list of timings).

    >>> ms = do_bench(lambda: kernel[grid](x, out, n), warmup=5, rep=20)
    """
    if return_mode not in _RETURN_MODES:
        raise ValueError(f"return_mode must be one of {', '.join(_RETURN_MODES)}, got {return_mode!r}")
    if not (isinstance(warmup, (int, float)) and isinstance(rep, (int, float))) or warmup < 0 or rep <= 0:
        raise ValueError(f"warmup must be >= 0 and rep > 0 (milliseconds), got warmup={warmup!r} rep={rep!r}")
    if quantiles is not None and not all(0 <= q <= 1 for q in quantiles):
        raise ValueError(f"quantiles must lie in [0, 1], got {list(quantiles)}")
    fn()
    _synchronize()
    # estimate one call's time from up to 5 calls (fewer when a call is slow)
    t0 = time.perf_counter()
    calls = 0
    while calls < 5:
        fn()
        calls += 1
        if time.perf_counter() - t0 > rep / 1e3:
            break
    _synchronize()
    estimate_ms = max((time.perf_counter() - t0) * 1e3 / calls, 1e-6)
    n_warmup = max(1, int(warmup / estimate_ms)) if warmup > 0 else 0
    n_repeat = max(1, min(int(rep / estimate_ms), 100_000))
    for _ in range(n_warmup):
        fn()
    _synchronize()
    gpu = _gpu_times(fn, n_repeat)  # metal: GPU timestamps; None elsewhere (wall clock below)
    times = gpu if gpu is not None else []
    for _ in range(n_repeat if gpu is None else 0):
        start = time.perf_counter()
        fn()
        _synchronize()
        times.append((time.perf_counter() - start) * 1e3)
    if quantiles is not None:
        qs = [float(np.quantile(times, q)) for q in quantiles]
        return qs[0] if len(qs) == 1 else qs
    if return_mode == "all":
        return times
    return float({"min": min, "max": max, "mean": statistics.fmean, "median": statistics.median}[return_mode](times))


def _as_numpy(x: Any) -> np.ndarray:
    if isinstance(x, np.ndarray):
        arr = x
    elif hasattr(x, "__enceladus_array__"):
        arr = x.__enceladus_array__()
    elif type(x).__module__.startswith("torch"):
        t = x.detach().cpu()
        arr = (t.float() if str(t.dtype) == "torch.bfloat16" else t).numpy()
    elif hasattr(x, "numpy") and callable(x.numpy):
        arr = np.asarray(x.numpy())
    else:
        arr = np.asarray(x)
    if arr.dtype.kind == "V" or arr.dtype.name == "bfloat16":  # ml_dtypes bfloat16
        arr = arr.astype(np.float32)
    return arr


def assert_close(x: Any, y: Any, atol: float | Callable[[Any], float] | None = None,
                 rtol: float | Callable[[Any], float] | None = None, err_msg: str = "") -> None:
    """Assert that ``x`` and ``y`` are elementwise close: ``|x - y| <= atol + rtol * |y|``, NaNs equal.

    Defaults as in Triton: ``atol=1e-2``, ``rtol=0``; either may be a function of ``x``'s dtype.
    Accepts NumPy arrays, ``enceladus.Tensor``, torch tensors, scalars and sequences.
    """
    xa, ya = _as_numpy(x), _as_numpy(y)
    atol = 1e-2 if atol is None else atol
    rtol = 0.0 if rtol is None else rtol
    atol = atol(xa.dtype) if callable(atol) else atol
    rtol = rtol(xa.dtype) if callable(rtol) else rtol
    if xa.size > 1 or ya.size > 1:
        np.testing.assert_allclose(xa, ya, atol=atol, rtol=rtol, equal_nan=True, err_msg=err_msg)
        return
    if not np.allclose(xa, ya, atol=atol, rtol=rtol, equal_nan=True):
        raise AssertionError(f"{err_msg} {xa} is not close to {ya} (atol={atol}, rtol={rtol})".strip())


# --- perf_report --------------------------------------------------------------------------------------------------
@dataclass
class Benchmark:
    """One benchmark series (``triton.testing.Benchmark``): the x axis, one line per ``line_vals`` entry.

    The decorated function is called as ``fn(**{x_name: x for x_name in x_names}, **{line_arg: line},
    **args)`` and returns a time (or ``(value, min, max)``).
    """

    x_names: list[str]
    x_vals: list[Any]
    line_arg: str
    line_vals: list[Any]
    line_names: list[str]
    plot_name: str
    args: dict[str, Any] = field(default_factory=dict)
    xlabel: str = ""
    ylabel: str = ""
    x_log: bool = False
    y_log: bool = False
    styles: list[tuple[str, str]] | None = None
    color: Any = None

    def __post_init__(self) -> None:
        if len(self.line_names) != len(self.line_vals):
            raise ValueError(f"Benchmark '{self.plot_name}': {len(self.line_vals)} line_vals but "
                             f"{len(self.line_names)} line_names")
        if not self.x_names:
            raise ValueError(f"Benchmark '{self.plot_name}': x_names is empty")


@dataclass
class BenchmarkTable:
    """The results of one Benchmark: ``columns`` then one row per x value."""

    name: str
    columns: list[str]
    rows: list[list[Any]]

    def __str__(self) -> str:
        cells = [self.columns] + [[_fmt(v) for v in r] for r in self.rows]
        widths = [max(len(str(c[i])) for c in cells) for i in range(len(self.columns))]
        lines = ["  ".join(str(c).rjust(w) for c, w in zip(row, widths)) for row in cells]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return f"{self.name}:\n" + "\n".join(lines)

    def to_csv(self) -> str:
        """The table as CSV text."""
        return "\n".join(",".join(str(v) for v in row) for row in [self.columns, *self.rows]) + "\n"

    def to_pandas(self) -> Any:
        """The table as a pandas DataFrame (needs pandas)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("to_pandas() needs pandas: pip install pandas") from None
        return pd.DataFrame(self.rows, columns=self.columns)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.4g}"
    return str(v)


class Mark:
    """A function decorated with :func:`perf_report`; ``.run()`` measures and reports it."""

    def __init__(self, fn: Callable[..., Any], benchmarks: Benchmark | list[Benchmark]):
        self.fn = fn
        self.benchmarks = benchmarks

    def _run_one(self, bench: Benchmark, save_path: str, show_plots: bool, print_data: bool,
                 **kwargs: Any) -> BenchmarkTable:
        columns = list(bench.x_names)
        for name in bench.line_names:
            columns += [name, f"{name}-min", f"{name}-max"]
        rows = []
        for x in bench.x_vals:
            xs = x if isinstance(x, (list, tuple)) else [x] * len(bench.x_names)
            if len(xs) != len(bench.x_names):
                raise ValueError(f"x value {x!r} does not match x_names {bench.x_names}")
            x_args = dict(zip(bench.x_names, xs))
            row: list[Any] = list(xs)
            for line in bench.line_vals:
                ret = self.fn(**x_args, **{bench.line_arg: line}, **bench.args, **kwargs)
                try:
                    mid, lo, hi = ret
                except TypeError:
                    mid, lo, hi = ret, None, None
                row += [mid, lo, hi]
            rows.append(row)
        table = BenchmarkTable(bench.plot_name, columns, rows)
        if save_path or show_plots:
            self._plot(bench, table, save_path, show_plots)
        if save_path:
            with open(os.path.join(save_path, f"{bench.plot_name}.csv"), "w") as f:
                f.write(table.to_csv())
        if print_data:
            shown = BenchmarkTable(table.name, [c for c in columns if not c.endswith(("-min", "-max"))],
                                   [[v for c, v in zip(columns, r) if not c.endswith(("-min", "-max"))]
                                    for r in rows])
            print(shown)
        return table

    def _plot(self, bench: Benchmark, table: BenchmarkTable, save_path: str, show: bool) -> None:
        try:
            from matplotlib.figure import Figure
        except ImportError:
            raise ImportError("plots need matplotlib: pip install matplotlib (or run with show_plots=False and "
                              "save_path='')") from None
        if show:
            import matplotlib.pyplot as plt

            fig, ax = plt.subplots(figsize=(6, 4))
        else:  # no pyplot: leaves the user's matplotlib backend alone
            fig = Figure(figsize=(6, 4))
            ax = fig.add_subplot()
        xs = [r[0] for r in table.rows]
        for i, name in enumerate(bench.line_names):
            col = len(bench.x_names) + 3 * i
            ys = [r[col] for r in table.rows]
            style = bench.styles[i] if bench.styles else None
            kw = {"color": style[0], "linestyle": style[1]} if style else {}
            ax.plot(xs, ys, label=name, marker="o", **kw)
            lo = [r[col + 1] for r in table.rows]
            hi = [r[col + 2] for r in table.rows]
            if all(v is not None for v in lo + hi):
                ax.fill_between(xs, lo, hi, alpha=0.15, **({"color": style[0]} if style else {}))
        ax.legend()
        ax.set_xlabel(bench.xlabel or bench.x_names[0])
        ax.set_ylabel(bench.ylabel)
        ax.set_title(bench.plot_name)
        if bench.x_log:
            ax.set_xscale("log")
        if bench.y_log:
            ax.set_yscale("log")
        if save_path:
            fig.savefig(os.path.join(save_path, f"{bench.plot_name}.png"))
        if show:
            plt.show()
            plt.close(fig)

    def run(self, show_plots: bool = False, print_data: bool = False, save_path: str = "",
            return_df: bool = False, **kwargs: Any) -> Any:
        """Run every benchmark; print tables (``print_data``), save CSV and PNG (``save_path``), show plots.

        Returns the table (a list of tables for several benchmarks) when ``return_df`` is true: a pandas
        DataFrame if pandas is installed, else a :class:`BenchmarkTable`.
        """
        if save_path:
            os.makedirs(save_path, exist_ok=True)
        benches = self.benchmarks if isinstance(self.benchmarks, list) else [self.benchmarks]
        tables = [self._run_one(b, save_path, show_plots, print_data, **kwargs) for b in benches]
        if not return_df:
            return None
        out = []
        for t in tables:
            try:
                out.append(t.to_pandas())
            except ImportError:
                out.append(t)
        return out[0] if len(out) == 1 else out


def perf_report(benchmarks: Benchmark | list[Benchmark]) -> Callable[[Callable[..., Any]], Mark]:
    """Decorator: ``@perf_report(Benchmark(...))`` turns a timing function into a :class:`Mark`."""
    return lambda fn: Mark(fn, benchmarks)


__all__ = ["Benchmark", "BenchmarkTable", "Mark", "assert_close", "do_bench", "perf_report"]
