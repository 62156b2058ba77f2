"""libdevice special functions (erfinv, erfcinv, erfcx, normcdf, normcdfinv, tgamma, lgamma, Bessel I0/I1) and
the correctly rounded rsqrt_rn on every path, against float64 references computed here."""

from __future__ import annotations

import math
from decimal import Decimal, getcontext

import numpy as np
import pytest

from paths import run_on_all_paths

from . import libdevice_kernels as lk

RNG = np.random.default_rng(1818)
F32 = np.float32


def _newton_inverse(f, df, target: float, x: float) -> float:
    for _ in range(60):
        step = (f(x) - target) / df(x)
        x -= step
        if abs(step) <= 1e-16 * max(abs(x), 1e-300):
            break
    return x


def _erfcinv(z: float) -> float:
    if z == 0:
        return math.inf
    if z == 2:
        return -math.inf
    if z > 1:
        return -_erfcinv(2 - z)
    # Newton on log(erfc(x)) = log(z), from the asymptotic start
    w = -math.log(z)
    x = math.sqrt(max(w - math.log(math.sqrt(math.pi * max(w, 1e-3))), 1e-3)) if z < 0.5 else (1 - z) * 0.886
    for _ in range(100):
        e = math.erfc(x)
        step = (math.log(e) + w) / (-2 / math.sqrt(math.pi) * math.exp(-x * x) / e)
        x -= step
        if abs(step) < 1e-15 * abs(x) + 1e-300:
            break
    return x


def _erfcx(x: float) -> float:
    if x < 5:
        return math.exp(x * x) * math.erfc(x)
    t = x
    for k in range(80, 0, -1):  # the continued fraction
        t = x + (k / 2) / t
    return 1 / (math.sqrt(math.pi) * t)


def _i1(x: float) -> float:
    t = np.linspace(0, np.pi, 4001)
    w = np.full(t.size, 1.0)
    w[0] = w[-1] = 0.5
    # scaled by exp(-|x|) inside to stay finite, restored after
    v = np.sum(w * np.exp(x * np.cos(t) - abs(x)) * np.cos(t)) * (t[1] - t[0]) / np.pi
    return float(v * math.exp(abs(x))) if abs(x) < 700 else math.inf


def _rsqrt_rn(a: float) -> float:
    getcontext().prec = 60
    exact = 1 / Decimal(a).sqrt()
    c = F32(float(exact))
    for cand in (np.nextafter(c, F32(-np.inf)), np.nextafter(c, F32(np.inf))):
        if abs(Decimal(float(cand)) - exact) < abs(Decimal(float(c)) - exact):
            c = cand
    return float(c)


CASES = {
    # name: (inputs, reference, rtol, atol)
    "erfinv": (np.concatenate([RNG.uniform(-1, 1, 200), [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 0.99999994, -0.9999999,
                                                         1e-20, 0.4999, 2.0, np.nan]]),
               lambda y: (math.copysign(_erfcinv(1 - abs(y)), y) if abs(y) >= 0.5 else _newton_inverse(
                   math.erf, lambda x: 2 / math.sqrt(math.pi) * math.exp(-x * x), y, y)) if abs(y) <= 1 else math.nan,
               2e-6, 1e-30),
    "erfcinv": (np.concatenate([RNG.uniform(0, 2, 200), 10.0 ** RNG.uniform(-44, 0, 100),
                                [0.0, 2.0, 1.0, 1.9999999, 1e-30, 1.4e-45, 3.0, -1.0, np.nan]]),
                lambda z: _erfcinv(z) if 0 <= z <= 2 else math.nan, 2e-6, 1e-30),
    "erfcx": (np.concatenate([RNG.uniform(-9, 60, 300), [0.0, 1.99, 2.0, 2.01, 1e4, 1e30, np.inf, -9.2, np.nan]]),
              lambda x: _erfcx(x) if x == x else x, 2e-6, 0),
    "normcdf": (np.concatenate([RNG.uniform(-37, 8, 300), [0.0, -1.0, -1.01, -13.0, np.inf, -np.inf, np.nan]]),
                lambda x: 0.5 * math.erfc(-x / math.sqrt(2)), 4e-6, 1e-44),
    "normcdfinv": (np.concatenate([RNG.uniform(0, 1, 200), 10.0 ** RNG.uniform(-37, 0, 100),
                                   [0.0, 1.0, 0.5, 0.9999999, 1e-30]]),
                   lambda p: -math.sqrt(2) * _erfcinv(2 * p), 2e-6, 1e-30),
    "tgamma": (np.concatenate([RNG.uniform(-10.5, 35, 300), [0.5, 1.0, 2.0, 3.0, 10.0, 34.9, 35.5, -0.5, -1.5, 1e-30,
                                                             np.inf]]),
               lambda x: math.gamma(x) if x < 35.05 else math.inf, 4e-6, 0),
    "lgamma": (np.concatenate([RNG.uniform(-10.5, 100, 300), [0.5, 1.0, 2.0, 1e30, 1e-30, -0.5, -2.5, 3e38, np.inf]]),
               lambda x: math.lgamma(x) if x != math.inf else math.inf, 3e-6, 2e-6),
    "cyl_bessel_i0": (np.concatenate([RNG.uniform(-90, 90, 200), [0.0, 15.0, 15.01, -15.0, 91.0, 100.0, np.nan]]),
                      lambda x: float(np.i0(x)) if abs(x) < 700 else math.inf, 3e-6, 0),
    "cyl_bessel_i1": (np.concatenate([RNG.uniform(-90, 90, 200), [0.0, 15.0, 15.01, -15.0, 91.0, -100.0, 1e-3]]),
                      lambda x: _i1(x), 3e-6, 1e-30),
    "rsqrt_rn": (np.concatenate([10.0 ** RNG.uniform(-45, 38, 300), RNG.uniform(0.5, 4, 200),
                                 [1.0, 4.0, 0.25, 2.0, 0.0, -0.0, -1.0, np.inf, np.nan, 1.4e-45, 3.4e38]]),
                 lambda a: _rsqrt_rn(a) if 0 < a < math.inf else (math.copysign(math.inf, a) if a == 0 else
                                                                    (0.0 if a == math.inf else math.nan)), 0, 0),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_special_functions(name):
    inputs, ref, rtol, atol = CASES[name]
    x = np.asarray(inputs, F32)
    with np.errstate(all="ignore"):
        want = np.array([ref(float(v)) if v == v else math.nan for v in x], np.float64)
        want32 = want.astype(F32)

    def check(args, expected, path):
        got = np.asarray(args[1])
        if rtol == 0:  # correctly rounded: bit for bit
            same = (got.view(np.uint32) == want32.view(np.uint32)) | (np.isnan(got) & np.isnan(want32))
            assert same.all(), f"{name} on the {path} path: {x[~same][:5]} gave {got[~same][:5]}, want {want32[~same][:5]}"
            return
        np.testing.assert_allclose(got.astype(np.float64), want32.astype(np.float64), rtol=rtol, atol=atol,
                                   err_msg=f"{name} on the {path} path")

    run_on_all_paths(lk.ld1_kernel, (2,), lambda: (x.copy(), np.zeros(x.size, F32), x.size), lambda *a: {1: want32},
                     check=check, constexprs={"OP": name, "BLOCK": 512})


def _j_decimal(n: int, x: float) -> float:
    """J_n(x) from its power series in 80-digit decimal arithmetic (the cancellation costs < 45 digits here)."""
    getcontext().prec = 80
    sign = -1 if n < 0 and n % 2 else 1
    n = abs(n)
    if x == 0:
        return 1.0 if n == 0 else 0.0
    half = Decimal(x) / 2
    term = half ** n / math.factorial(n)
    total, k = term, 0
    q = half * half
    while True:
        k += 1
        term = -term * q / (k * (k + n))
        total += term
        if abs(term) < Decimal(10) ** -40 and k > x:
            break
    return sign * float(total)


def _y_integral(n: int, x: float) -> float:
    """Y_n(x) = (1/pi) int_0^pi sin(x sin t - n t) dt - (1/pi) int_0^inf (e^(nt) + (-1)^n e^(-nt)) e^(-x sinh t) dt."""
    if x == 0:
        return -math.inf
    t = np.linspace(0, np.pi, 40001)
    first = np.trapezoid(np.sin(x * np.sin(t) - n * t), t) / np.pi
    u = np.linspace(0, max(1.0, math.asinh(60 / x) + 2), 200001)
    with np.errstate(all="ignore"):
        f = (np.exp(n * u) + (-1) ** n * np.exp(-n * u)) * np.exp(-x * np.sinh(u))
    return float(first - np.trapezoid(np.nan_to_num(f), u) / np.pi)


BESSEL_X = np.concatenate([RNG.uniform(0, 24, 40), RNG.uniform(25, 100, 20), [1e-5, 5e-5, 1e-4, 2.404826, 3.8317,
                                                                             24.99, 25.01, 0.5]]).astype(F32)


@pytest.mark.parametrize("name", ["j0", "j1", "y0", "y1"])
def test_bessel_functions_of_order_0_and_1(name):
    n, second = int(name[1]), name[0] == "y"
    x = BESSEL_X if second else np.concatenate([BESSEL_X, -BESSEL_X[:10], [0.0]]).astype(F32)
    want = np.array([(_y_integral(n, float(v)) if second else _j_decimal(n, float(v))) for v in x], np.float64)
    # absolute near the zeros (as CUDA's bounds for j0f/y0f are), relative elsewhere
    run_on_all_paths(lk.ld1_kernel, (1,), lambda: (x.copy(), np.zeros(x.size, F32), x.size),
                     lambda *a: {1: want.astype(F32)}, constexprs={"OP": name, "BLOCK": 128}, rtol=3e-6,
                     atol=4e-6 if second else 2e-6)


@pytest.mark.parametrize("name", ["jn", "yn"])
def test_bessel_functions_of_integer_order(name):
    second = name == "yn"
    n = np.array([0, 1, 2, 3, 5, 8, 12, 20, 40, -3, 2, 7, 30, 4, 1, 60], np.int32)
    x = np.array([3.0, 0.7, 10.0, 30.0, 4.5, 26.0, 12.0, 50.0, 45.0, 2.5, 1e-3, 80.0, 10.0, 0.02, 99.0, 70.0], F32)
    if second:  # Y_n grows without bound for n > x: keep to where float32 holds it
        keep = np.abs(n) <= 1.5 * x + 4
        n, x = n[keep], x[keep]
    want = np.array([(_y_integral(int(k), float(v)) if second else _j_decimal(int(k), float(v)))
                     for k, v in zip(n, x)], np.float64)
    run_on_all_paths(lk.ld2_kernel, (1,), lambda: (n.copy(), x.copy(), np.zeros(x.size, F32), x.size),
                     lambda *a: {2: want.astype(F32)}, constexprs={"OP": name, "BLOCK": 16}, rtol=1e-5,
                     atol=4e-6)


def test_bessel_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -1.0], F32)
    want = {"j0": [1, 1, 0, 0, np.nan, _j_decimal(0, -1.0)], "y0": [-np.inf, -np.inf, 0, np.nan, np.nan, np.nan],
            "j1": [0, 0, 0, 0, np.nan, _j_decimal(1, -1.0)], "y1": [-np.inf, -np.inf, 0, np.nan, np.nan, np.nan]}
    for name, w in want.items():
        run_on_all_paths(lk.ld1_kernel, (1,), lambda: (x.copy(), np.zeros(x.size, F32), x.size),
                         lambda *a, w=w: {1: np.array(w, F32)}, constexprs={"OP": name, "BLOCK": 8}, rtol=1e-6,
                         atol=1e-7)


def test_lgamma_keeps_its_relative_accuracy_where_it_vanishes():
    """lgamma is 0 at x = 1 and x = 2: there its value is a small number, and log(tgamma(x)) would carry
    tgamma's absolute error into it (relative errors of 1 and more next to 2, when computed that way). The
    series for lgamma(2 + z) keeps the error relative to the value: within 2e-6 (about 17 ulp; 20 ulp under
    ENCELADUS_CPU_PERTURB=1, Apple's worst errors for precise::log and precise::exp), and exact zeros exact."""
    steps = 2.0 ** -np.arange(1, 23)
    x = np.concatenate([1 + steps, 1 - steps / 2, 2 + 2 * steps, 2 - steps, RNG.uniform(0.5, 2.5, 200),
                        [1.0, 2.0, 1.4616321]]).astype(F32)
    want = np.array([math.lgamma(float(v)) for v in x])

    def check(args, expected, path):
        got = np.asarray(args[1]).astype(np.float64)
        exact_zero = want == 0
        assert (got[exact_zero] == 0).all(), f"lgamma on the {path} path: {got[exact_zero]} at x = 1 and 2, want 0"
        rel = np.abs(got - want)[~exact_zero] / np.abs(want[~exact_zero])
        worst = int(np.argmax(rel))
        assert rel[worst] <= 2e-6, (f"lgamma on the {path} path: relative error {rel[worst]:.2e} at "
                                    f"x = {x[~exact_zero][worst]!r}")

    run_on_all_paths(lk.ld1_kernel, (1,), lambda: (x.copy(), np.zeros(x.size, F32), x.size), lambda *a: {1: want},
                     check=check, constexprs={"OP": "lgamma", "BLOCK": 512})
