"""The fuzz comparison's tolerance (harness.tolerance) is tight enough to see a wrong output: a negated,
halved or zeroed output fails for every float type and every combination of features, while the
last-bit differences the tolerance is meant to absorb pass."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from .harness import OP_ULPS, Mismatch, compare, np_dtype, tolerance, ulp

FEATURES = sorted(f for f in OP_ULPS if f != "exact")
EVERY_COMBINATION = [list(c) for r in range(len(FEATURES) + 1) for c in itertools.combinations(FEATURES, r)]


def _output(dtype: str) -> np.ndarray:
    rng = np.random.default_rng(1)
    # values of several magnitudes (as the fuzz inputs: mostly in [-4, 4], a few large, a few exact zeros)
    w = np.concatenate([rng.uniform(-4, 4, 60), rng.uniform(-300, 300, 3), [0.0, 1.0, -2.0]])
    return w.astype(np.float32).astype(np_dtype(dtype))


@pytest.mark.parametrize("dtype,floats", [("float32", []), ("float16", []), ("bfloat16", []),
                                          ("float32", ["float16"]), ("float32", ["bfloat16"])])
@pytest.mark.parametrize("wrong", ["negated", "halved", "zeroed"])
def test_a_wrong_output_fails_with_every_feature_set(dtype, floats, wrong):
    want = _output(dtype)
    got = {"negated": -want, "halved": want / 2, "zeroed": np.zeros_like(want)}[wrong].astype(want.dtype)
    for features in EVERY_COMBINATION:
        with pytest.raises(Mismatch, match="differ by more than"):
            compare(f"{wrong} {dtype}", got, want, dtype, features, floats)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_the_differences_it_is_meant_to_absorb_pass(dtype):
    want = _output(dtype)
    unit, ulps, scale_ulps = tolerance(dtype, [])
    assert (unit, ulps, scale_ulps) == (dtype, 1, 0)
    one_ulp = (want.astype(np.float64) + ulp(want, dtype)).astype(want.dtype)
    compare("1 ulp", one_ulp, want, dtype, [])
    two_ulp = (want.astype(np.float64) + 2 * ulp(want, dtype)).astype(want.dtype)
    with pytest.raises(Mismatch):  # programs of correctly rounded operations only: 1 ulp, not 2
        compare("2 ulp", two_ulp, want, dtype, [])
    # a reduction: an absolute error of a few ulps of the scale on a small (cancelled) element
    unit, ulps, scale_ulps = tolerance(dtype, ["float_reduction"])
    scale = float(np.max(np.abs(want.astype(np.float64))))
    got = want.astype(np.float64)
    got[0] = 0.0 + 4 * float(ulp(scale, dtype))
    want2 = want.copy()
    want2[0] = 0
    compare("cancelled sum", got.astype(want.dtype), want2, dtype, ["float_reduction"])
    with pytest.raises(Mismatch):
        compare("cancelled sum", got.astype(want.dtype), want2, dtype, [])


def test_tolerance_is_measured_in_the_least_precise_float_type():
    assert tolerance("float32", ["transcendental"], ["float16"]) == ("float16", 1 + 4, 5)
    assert tolerance("float32", ["float_reduction", "loop"], ["float32"]) == ("float32", 21, 21)
    assert tolerance("bfloat16", ["div"]) == ("bfloat16", 4, 0)
    np.testing.assert_array_equal(ulp(np.array([1.0, 1.5, 2.0, -3.0]), "float16"), [2**-10, 2**-10, 2**-9, 2**-9])
    assert float(ulp(0.0, "float32")) == 2.0**-149 and float(ulp(1.0, "bfloat16")) == 2.0**-7
