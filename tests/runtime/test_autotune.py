"""@enceladus.autotune / Config / heuristics: choice per key, failing configs, hooks, persistence across processes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from enceladus import Config

ROOT = Path(__file__).resolve().parents[2]
FAST = {"warmup": 1, "rep": 3}  # ms budgets: keep tuning quick in tests

CONFIGS = [Config({"BLOCK": 64}, num_warps=2), Config({"BLOCK": 256}, num_warps=4), Config({"BLOCK": 1024}, num_warps=8)]


@enceladus.autotune(configs=CONFIGS, key=["n"], **FAST)
@enceladus.jit
def tuned_scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


@enceladus.autotune(configs=[Config({"BLOCK": 100}), Config({"BLOCK": 128}, num_warps=3), Config({"BLOCK": 128})],
                    key=["n"], **FAST)
@enceladus.jit
def partly_broken(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)


@enceladus.autotune(configs=[Config({"BLOCK": 100}), Config({"BLOCK": 128}, num_warps=3)], key=["n"], **FAST)
@enceladus.jit
def all_broken(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@enceladus.autotune(configs=[Config({"BLOCK": 64}), Config({"BLOCK": 128})], key=["n"], restore_value=["x_ptr"], **FAST)
@enceladus.jit
def add_in_place(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)


@enceladus.heuristics({"BLOCK": lambda args: enceladus.next_power_of_2(args["n"])})
@enceladus.jit
def whole_row(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) - 1, mask=mask)


def grid_for(meta: dict) -> tuple[int]:
    return (enceladus.cdiv(meta["n"], meta["BLOCK"]),)


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ENCELADUS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ENCELADUS_CACHE_AUTOTUNING", raising=False)
    return tmp_path / "cache"


def test_picks_a_config_per_key_and_reuses_it(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("ENCELADUS_PRINT_AUTOTUNING", "1")
    tuned_scale.cache.clear()
    for n in (1000, 5000):
        x = np.arange(n, dtype=np.float32)
        out = np.zeros_like(x)
        tuned_scale[grid_for](x, out, n)
        np.testing.assert_allclose(out, 2 * x)
        assert tuned_scale.best_config in CONFIGS
        assert set(tuned_scale.configs_timings) == set(CONFIGS)
    assert len(tuned_scale.cache) == 2
    printed = capsys.readouterr().out
    assert printed.count("Enceladus autotuning for function tuned_scale") == 2 and "best config selected" in printed
    # same key: no new tuning
    timings = tuned_scale.configs_timings
    x = np.arange(1000, dtype=np.float32)
    tuned_scale[grid_for](x, np.zeros_like(x), 1000)
    assert tuned_scale.configs_timings is timings and len(tuned_scale.cache) == 2
    # argument dtypes are part of the key
    xh = np.arange(1000, dtype=np.float16)
    out = np.zeros_like(xh)
    tuned_scale[grid_for](xh, out, 1000)
    np.testing.assert_allclose(out, 2 * xh)
    assert len(tuned_scale.cache) == 3


def test_config_that_fails_to_compile_is_skipped_with_a_warning() -> None:
    partly_broken.cache.clear()
    x = np.arange(700, dtype=np.float32)
    out = np.zeros_like(x)
    with pytest.warns(UserWarning, match="skipping config") as record:
        partly_broken[grid_for](x, out, 700)
    np.testing.assert_allclose(out, x + 1)
    assert len(record) == 2
    assert partly_broken.best_config == Config({"BLOCK": 128})
    assert partly_broken.configs_timings[Config({"BLOCK": 100})][0] == float("inf")


def test_error_when_no_config_works() -> None:
    x = np.arange(10, dtype=np.float32)
    with pytest.warns(UserWarning), pytest.raises(enceladus.CompilationError, match="every one failed"):
        all_broken[grid_for](x, np.zeros_like(x), 10)


def test_restore_value_keeps_in_place_kernels_correct() -> None:
    add_in_place.cache.clear()
    x = np.arange(500, dtype=np.float32)
    expected = x + 1
    add_in_place[grid_for](x, 500)  # many timing runs, then one real run
    np.testing.assert_allclose(x, expected)


def test_reset_to_zero_config_pre_hook_and_custom_hooks() -> None:
    calls = []
    cfgs = [Config({"BLOCK": 64}, pre_hook=lambda nargs: calls.append(("cfg", nargs["BLOCK"]))), Config({"BLOCK": 128})]

    @enceladus.autotune(configs=cfgs, key=["n"], reset_to_zero=["out_ptr"], **FAST)
    @enceladus.jit
    def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(out_ptr + offs, mask=mask) + tl.load(x_ptr + offs, mask=mask), mask=mask)

    x = np.arange(300, dtype=np.float32)
    out = np.zeros_like(x)
    k[grid_for](x, out, 300)  # accumulates into out: only correct if out was zeroed after the timing runs
    np.testing.assert_allclose(out, x)
    assert ("cfg", 64) in calls

    events = []

    @enceladus.autotune(configs=[Config({"BLOCK": 64}), Config({"BLOCK": 128})], key=["n"], **FAST,
                        pre_hook=lambda nargs, reset_only=False: events.append(("pre", reset_only)),
                        post_hook=lambda nargs, exception: events.append(("post", exception)))
    @enceladus.jit
    def k2(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

    k2[grid_for](x, out, 300)
    assert ("pre", False) in events and ("post", None) in events and events[-1] == ("pre", True)
    cfg = Config({"BLOCK": 64})
    assert cfg.all_kwargs() == {"BLOCK": 64, "num_warps": 4, "num_ctas": 1, "num_stages": 3}
    assert "BLOCK: 64" in str(cfg) and cfg == Config({"BLOCK": 64}) and hash(cfg) == hash(Config({"BLOCK": 64}))
    assert cfg != cfgs[0]  # the pre_hook counts, as in Triton's Config.__eq__


def test_prune_configs_by() -> None:
    seen = {}

    def early(configs, nargs, **kwargs):
        seen["nargs"] = set(nargs)
        return [c for c in configs if c.kwargs["BLOCK"] <= 256]

    def model(**kw):
        return -kw["BLOCK"]  # pretend bigger is faster

    @enceladus.autotune(configs=CONFIGS, key=["n"], prune_configs_by={"early_config_prune": early,
                                                                      "perf_model": model, "top_k": 1}, **FAST)
    @enceladus.jit
    def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

    x = np.arange(300, dtype=np.float32)
    out = np.zeros_like(x)
    k[grid_for](x, out, 300)
    np.testing.assert_array_equal(out, x)
    assert k.best_config.kwargs["BLOCK"] == 256
    assert seen["nargs"] == {"x_ptr", "out_ptr", "n"}


def test_bad_decorator_arguments_are_clear() -> None:
    def body(x_ptr, n, BLOCK: tl.constexpr):
        pass

    fn = enceladus.jit(body)
    with pytest.raises(ValueError, match="autotune key 'm' is not a parameter"):
        enceladus.autotune(configs=[Config({"BLOCK": 1})], key=["m"])(fn)
    with pytest.raises(ValueError, match="sets BLOK"):
        enceladus.autotune(configs=[Config({"BLOK": 1})], key=["n"])(fn)
    with pytest.raises(ValueError, match="heuristics name 'B'"):
        enceladus.heuristics({"B": lambda a: 1})(fn)
    with pytest.raises(TypeError, match="Config"):
        enceladus.autotune(configs=[{"BLOCK": 1}], key=["n"])(fn)
    with pytest.raises(ValueError, match="prune_configs_by"):
        enceladus.autotune(configs=[Config({"BLOCK": 1})], key=["n"], prune_configs_by={"topk": 1})(fn)


def test_conflicting_meta_parameters() -> None:
    x = np.arange(10, dtype=np.float32)
    with pytest.raises(ValueError, match="Conflicting meta-parameters: BLOCK"):
        tuned_scale[(1,)](x, np.zeros_like(x), 10, BLOCK=64)


def test_heuristics() -> None:
    for n in (5, 37, 200):
        x = np.arange(n, dtype=np.float32)
        out = np.zeros_like(x)
        whole_row[(1,)](x, out, n)
        np.testing.assert_allclose(out, x - 1)
    assert whole_row.warmup(x, out, 200).metadata["layouts"][0].shape == (256,)


def test_heuristics_under_autotune() -> None:
    @enceladus.autotune(configs=[Config({}, num_warps=1), Config({}, num_warps=4)], key=["n"], **FAST)
    @enceladus.heuristics({"BLOCK": lambda args: enceladus.next_power_of_2(args["n"])})
    @enceladus.jit
    def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 3, mask=offs < n)

    x = np.arange(100, dtype=np.float32)
    out = np.zeros_like(x)
    k[(1,)](x, out, 100)
    np.testing.assert_allclose(out, 3 * x)
    assert k.base_fn.__name__ == "k" and k.best_config.num_warps in (1, 4)


PERSIST_SCRIPT = textwrap.dedent("""
    import numpy as np, enceladus, enceladus.language as tl
    from enceladus import Config
    calls = []
    def bench(fn, quantiles=None):
        calls.append(1)
        fn()
        return [float(len(calls)), 0.0, 0.0]   # the first config timed "wins"
    @enceladus.autotune(configs=[Config({"BLOCK": 128}), Config({"BLOCK": 512})], key=["n"], do_bench=bench,
                        cache_results=True)
    @enceladus.jit
    def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 2, mask=offs < n)
    x = np.arange(2000, dtype=np.float32); out = np.zeros_like(x)
    k[lambda m: (enceladus.cdiv(m["n"], m["BLOCK"]),)](x, out, x.size)
    np.testing.assert_allclose(out, x + 2)
    print("RESULT", k.best_config.kwargs["BLOCK"], len(calls))
""")


def test_choice_persists_across_processes_with_cache_results(tmp_path: Path) -> None:
    script = tmp_path / "tune.py"
    script.write_text(PERSIST_SCRIPT)
    env = {**os.environ, "ENCELADUS_CACHE_DIR": str(tmp_path / "shared-cache"), "ENCELADUS_PRINT_AUTOTUNING": "1"}

    def run() -> tuple[list[str], str]:
        res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300,
                             cwd=ROOT)
        assert res.returncode == 0, res.stderr
        return next(ln for ln in res.stdout.splitlines() if ln.startswith("RESULT")).split()[1:], res.stdout

    (block, calls), out1 = run()
    assert block == "128" and calls == "2" and "finished after" in out1
    (block, calls), out2 = run()
    assert block == "128" and calls == "0"  # nothing timed: the choice came from the disk cache
    assert "loaded from the disk cache" in out2
    assert list((tmp_path / "shared-cache" / "autotune").rglob("*.json"))


def test_do_bench_budgets_and_modes() -> None:
    from enceladus.testing import do_bench

    n = []
    ms = do_bench(lambda: n.append(1), warmup=1, rep=2)
    assert ms >= 0 and len(n) > 2
    assert len(do_bench(lambda: None, warmup=0, rep=1, quantiles=[0.5, 0.2, 0.8])) == 3
    assert isinstance(do_bench(lambda: None, rep=1, return_mode="all"), list)
    with pytest.raises(ValueError, match="return_mode"):
        do_bench(lambda: None, return_mode="avg")
