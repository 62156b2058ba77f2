"""benchmarks/reference_kernels.py: the figures of MLX's steel kernels come out of the quoted source lines (not typed
in), the quoted lines are well-formed, and the evaluator reads the C++ constant expressions they hold."""

from __future__ import annotations

import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import reference_kernels as rk  # noqa: E402

sys.path.remove(str(ROOT / "benchmarks"))


def _ref(name: str) -> rk.Reference:
    return next(r for r in rk.REFERENCES if r.name == name)


def test_c_expressions():
    env = {"BK": 16, "BM": 64, "tgp_padding_a": 8, "transpose_a": 0, "sizeof_T": 2, "a": 3, "b": 5}
    assert rk.c_value("transpose_a ? BK * (BM + tgp_padding_a) : BM * (BK + tgp_padding_a);", env) == 64 * 24
    assert rk.c_value("16 / sizeof(T);", env) == 8
    assert rk.c_value("a > b ? a : b;", env) == 5
    with pytest.raises(ValueError):
        rk.c_value("f(a)", env)


def test_steel_gemm_figures():
    d = rk.derive(_ref("MLX steel GEMM"), 2)
    assert d["config"] == {"BM": 64, "BN": 64, "BK": 16, "WM": 2, "WN": 2}
    assert d["barriers_per_step"] == 2
    assert d["reads_per_thread"] == {"A": {"elements": 8, "bytes": 16}, "B": {"elements": 8, "bytes": 16}}
    assert d["threadgroup_bytes"] == (64 * (16 + 8) + 16 * (64 + 8)) * 2
    assert rk.derive(_ref("MLX steel GEMM"), 4)["threadgroup_bytes"] == (64 * (16 + 4) + 16 * (64 + 4)) * 4


def test_steel_attention_figures():
    d = rk.derive(_ref("MLX steel attention"), 2)
    assert d["config"] == {"BQ": 32, "BK": 32, "BD": 64, "WM": 4, "WN": 1}
    assert d["barriers_per_step"] == 4
    assert d["reads_per_thread"]["K"] == {"elements": 16, "bytes": 32}
    assert d["threadgroup_bytes"] == (32 * (64 + 8) + max((32 + 8) * 64, 32 * (64 + 8))) * 2


def test_barriers_outside_the_loop_are_not_counted():
    ref = _ref("MLX steel GEMM")
    moved = rk.Reference(**{**ref.__dict__, "barriers": (*ref.barriers, rk.Quote(ref.loop.path, 190, rk.BARRIER))})
    assert rk.derive(moved, 2)["barriers_per_step"] == 2


def test_every_reference_cites_a_commit_and_its_quotes():
    for ref in rk.REFERENCES:
        repo, commit = ref.source
        assert "/" in repo and len(commit) == 40
        d = rk.derive(ref, 2)
        assert d["quotes"] and all(":" in q for q in d["quotes"])
        assert all(q.text == q.text.strip() and q.line > 0 for q in (*ref.barriers, *ref.definitions, *ref.notes))
