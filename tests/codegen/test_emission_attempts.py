"""Threadgroup arrays for data movements: one per movement while they fit in 32 KB, else movements outside loops
reuse earlier arrays, else one pool (driver.py, codegen_msl/movement.py ``smem``). The first emission goes on
reusing arrays from the request that overflows when no earlier request could have reused one: it then writes what
an emission that reuses from the start writes, and the MSL is emitted once (flash attention overflowed at its last
conversion and was emitted twice). An emission that could have reused an array earlier (where separate arrays still
fitted) has diverged from that one: the reuse attempt is then made in full, as before.

Each kernel runs on every path against NumPy; the MSL is compared with the one an emission that reuses arrays from
its first request writes."""

from __future__ import annotations

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from enceladus.compiler.codegen_msl import MSLEmitter
from paths import run_on_all_paths


@enceladus.jit
def two_conversions_kernel(X, Y, Z, W, N: tl.constexpr):
    """Two [N, N] fp32 conversions outside loops: 2 x 16,640 bytes (padded rows) for N = 64, over 32 KB; the
    second reuses the first's array."""
    r = tl.arange(0, N)
    offs = r[:, None] * N + r[None, :]
    x = tl.load(X + offs)
    tl.store(Y + offs, x + tl.trans(x))
    z = tl.load(Z + offs)
    tl.store(W + offs, z + tl.trans(z))


@enceladus.jit
def diverging_kernel(A, B, X, Z, OUT, M: tl.constexpr, N: tl.constexpr):
    """[M, M] conversions of A then B (the second could reuse the first's array while separate arrays still fit),
    then two [N, N] ones that do not fit separately: the reuse attempt is made in full."""
    m = tl.arange(0, M)
    small = m[:, None] * M + m[None, :]
    a = tl.load(A + small)
    tl.store(A + small, a + tl.trans(a))
    b = tl.load(B + small)
    tl.store(B + small, b + tl.trans(b))
    r = tl.arange(0, N)
    offs = r[:, None] * N + r[None, :]
    x = tl.load(X + offs)
    z = tl.load(Z + offs)
    tl.store(OUT + offs, (x + tl.trans(x)) * 2 + (z + tl.trans(z)))


def _emissions(monkeypatch):
    """Count the emitter's emissions; the list of the ``reuse`` flag each one ended with."""
    seen = []
    original = MSLEmitter.generate

    def generate(self):
        try:
            return original(self)
        finally:
            seen.append("pooled" if self.pooled else self.reuse)

    monkeypatch.setattr(MSLEmitter, "generate", generate)
    return seen


def _reusing_from_the_start(monkeypatch):
    """Make every emission that is not pooled reuse arrays from its first request (the old second attempt)."""
    original = MSLEmitter.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        if not self.pooled:
            self.reuse = True

    monkeypatch.setattr(MSLEmitter, "__init__", init)


SIG = {"X": "*fp32", "Y": "*fp32", "Z": "*fp32", "W": "*fp32"}


def test_overflow_at_a_reusable_request_is_emitted_once(monkeypatch):
    seen = _emissions(monkeypatch)
    ck = enceladus.compile(two_conversions_kernel, SIG, {"N": 64})
    assert seen == [True]  # one emission, reusing from the request that overflowed
    assert ck.metadata["threadgroup_memory"] == 64 * 65 * 4
    assert any("reuses enc_smem" in n for n in ck.metadata["notes"]), ck.metadata["notes"]
    monkeypatch.undo()
    _reusing_from_the_start(monkeypatch)
    again = enceladus.compile(two_conversions_kernel, SIG, {"N": 64})
    assert again.asm["msl"] == ck.asm["msl"] and again.metadata == ck.metadata


def test_arrays_that_fit_are_separate_and_emitted_once(monkeypatch):
    seen = _emissions(monkeypatch)
    ck = enceladus.compile(two_conversions_kernel, SIG, {"N": 32})  # 2 x 4,224 bytes
    assert seen == [False]
    assert ck.metadata["threadgroup_memory"] == 2 * 32 * 33 * 4
    assert not any("reuses" in n for n in ck.metadata["notes"])


def test_an_emission_that_diverged_is_made_again_with_reuse(monkeypatch):
    sig = {"A": "*fp32", "B": "*fp32", "X": "*fp32", "Z": "*fp32", "OUT": "*fp32"}
    seen = _emissions(monkeypatch)
    ck = enceladus.compile(diverging_kernel, sig, {"M": 16, "N": 64})
    assert seen == [False, True]  # separate arrays overflow after a request that could have reused one
    assert ck.metadata["threadgroup_memory"] <= 32768
    monkeypatch.undo()
    _reusing_from_the_start(monkeypatch)
    again = enceladus.compile(diverging_kernel, sig, {"M": 16, "N": 64})
    assert again.asm["msl"] == ck.asm["msl"]


@pytest.mark.parametrize("n", [32, 64])
def test_two_conversions_on_every_path(n):
    rng = np.random.default_rng(n)
    x = rng.integers(-50, 50, (n, n)).astype(np.float32)
    z = rng.integers(-50, 50, (n, n)).astype(np.float32)
    make = lambda: (x.copy(), np.zeros_like(x), z.copy(), np.zeros_like(z))  # noqa: E731
    run_on_all_paths(two_conversions_kernel, (1,), make, lambda *a: {1: x + x.T, 3: z + z.T}, constexprs={"N": n},
                     rtol=0, atol=0)


def test_diverging_kernel_on_every_path():
    rng = np.random.default_rng(3)
    m, n = 16, 64
    a = rng.integers(-50, 50, (m, m)).astype(np.float32)
    b = rng.integers(-50, 50, (m, m)).astype(np.float32)
    x = rng.integers(-50, 50, (n, n)).astype(np.float32)
    z = rng.integers(-50, 50, (n, n)).astype(np.float32)
    make = lambda: (a.copy(), b.copy(), x.copy(), z.copy(), np.zeros_like(x))  # noqa: E731
    run_on_all_paths(diverging_kernel, (1,), make,
                     lambda *args: {0: a + a.T, 1: b + b.T, 4: (x + x.T) * 2 + (z + z.T)},
                     constexprs={"M": m, "N": n}, rtol=0, atol=0)

