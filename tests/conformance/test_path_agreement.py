"""The interpreter and the compiler agree on what they accept and how they refuse: one corpus of kernels, run on
both paths, must give the same values or a CompilationError with the same message (the interpreter's refusal is
also an instance of the TypeError/ValueError its builtins raise)."""

from __future__ import annotations

import numpy as np
import pytest

from enceladus.errors import CompilationError
from paths import ALL_PATHS, cpu_available, on_path

from . import agreement_kernels as ak

PATHS = [p for p in ALL_PATHS if p != "cpu" or cpu_available()]

# kernel, expected: "values" or a fragment of the refusal's message (Triton 3.9's wording where it has one)
CORPUS = [
    (ak.exp_fp16, "Expected dtype ['fp32', 'fp64'] but got fp16"),
    (ak.sqrt_member_bf16, "Expected dtype ['fp32', 'fp64'] but got bf16"),
    (ak.sin_int, "Expected dtype ['fp32', 'fp64'] but got int32"),
    (ak.exp_fp32_of_fp16, "approx"),  # exp: within Apple's bound, not bit-identical
    (ak.bad_expand_dims_axis, "axis"),
    (ak.broadcast_ranks, "values"),
    (ak.descriptor_lists, "values"),
    (ak.atomic_fp16, "values"),
    (ak.atomic_int64, "int64"),
    (ak.int1_and_shifts, "values"),
    (ak.interleave_scalars, "values"),
]


def _outcome(kernel, path):
    x = np.arange(8, dtype=np.float32) * 0.75
    out = {ak.atomic_int64: np.zeros(8, np.int64), ak.atomic_fp16: np.zeros(8, np.float16)}.get(kernel)
    out = np.zeros(8, np.float32) if out is None else out
    try:
        on_path(kernel, path)[(1,)](x, out)
    except CompilationError as e:
        assert e.lineno is not None and e.filename.endswith("agreement_kernels.py"), f"{path}: unlocated: {e}"
        return "refused", e.message
    return "values", out


@pytest.mark.parametrize("kernel,expected", CORPUS, ids=[k.__name__ for k, _ in CORPUS])
def test_same_outcome_on_both_paths(kernel, expected):
    outcomes = {path: _outcome(kernel, path) for path in PATHS}
    kinds = {path: o[0] for path, o in outcomes.items()}
    refused = expected not in ("values", "approx")
    assert set(kinds.values()) == {"refused" if refused else "values"}, outcomes
    first = outcomes[PATHS[0]][1]
    for path in PATHS[1:]:
        if expected == "values":
            np.testing.assert_array_equal(outcomes[path][1], first, err_msg=f"{kernel.__name__} on {path}")
        elif expected == "approx":
            # precise::exp is <= 4 ulp (MSL spec Table 8.1; ENCELADUS_CPU_PERTURB=1 reproduces it), plus the
            # interpreter's own rounding (0.5 ulp); an ulp is at most 2**-23 of the value
            np.testing.assert_allclose(outcomes[path][1], first, rtol=4.5 * 2.0**-23,
                                       err_msg=f"{kernel.__name__} on {path}")
        else:
            assert outcomes[path][1] == first, (path, outcomes[path][1], first)
    if refused:
        assert expected in first


def test_interpreted_refusal_is_still_the_builtin_error_type():
    with pytest.raises(ValueError) as info:  # code written against the interpreter's ValueError keeps working
        on_path(ak.exp_fp16, "interpreter")[(1,)](np.zeros(8, np.float32), np.zeros(8, np.float32))
    assert isinstance(info.value, CompilationError)
    assert isinstance(info.value.__cause__, ValueError)
