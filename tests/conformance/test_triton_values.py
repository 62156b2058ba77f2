"""Values checked against Triton 3.9's interpreter: tables in data/ were produced with TRITON_INTERPRET=1 (the
script is not part of the repository; each table says what it holds)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from paths import ALL_PATHS, cpu_available, on_path, run_on_all_paths

from . import value_kernels as vk

DATA = os.path.join(os.path.dirname(__file__), "data")
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
PATHS = [p for p in ALL_PATHS if p != "cpu" or cpu_available()]


def _load(name: str) -> dict:
    with open(os.path.join(DATA, name)) as f:
        return json.load(f)


SHIFTS = _load("triton_shifts.json")
EXTREMES = _load("triton_nan_extremes.json")


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("left", INTS)
def test_shifts_match_triton_for_every_signedness_pair(left, path):
    n = 4
    x = np.array(SHIFTS["inputs"][left], dtype=left)
    ys = [np.array(SHIFTS["shifts"], dtype=t) for t in INTS]
    out = np.zeros(16 * n, np.uint64)
    on_path(vk.shifts_kernel, path)[(1,)](x, *ys, out, N=n)
    for i, right in enumerate(INTS):
        for j, op in enumerate([">>", "<<"]):
            rtype, want = SHIFTS["results"][f"{left} {op} {right}"]
            got = out[(2 * i + j) * n:(2 * i + j + 1) * n].astype(np.uint64)
            # the kernel widened the result (of type rtype) to uint64: compare in rtype's bits
            bits = np.iinfo(rtype).bits
            mask = np.uint64((1 << bits) - 1)
            np.testing.assert_array_equal(got & mask, np.array([w % (1 << bits) for w in want], np.uint64),
                                          err_msg=f"{left} {op} {right} on the {path} path")


def test_int1_arithmetic_wraps():
    # Triton 3.9: int1 is a 1-bit integer (True + True == False, True << True == False, -True == True)
    x = np.array([0, 1, 0, 1], np.int32)
    y = np.array([0, 0, 1, 1], np.int32)
    want = np.array([[0, 1, 1, 0], [0, 1, 1, 0], [0, 0, 0, 1], [0, 1, 0, 1], [0, 1, 0, 0], [0, 1, 0, 0], [1, 0, 1, 0]],
                    np.int32).ravel()
    run_on_all_paths(vk.int1_kernel, (1,), lambda: (x, y, np.zeros(28, np.int32)), lambda *a: {2: want},
                     constexprs={"N": 4})


@pytest.mark.parametrize("dtype", ["int32", "uint32", "int64", "uint64"])
def test_umulhi_is_the_unsigned_high_word(dtype):
    bits = np.iinfo(dtype).bits
    signed = dtype.startswith("int")
    a = np.array([-5, 3, -1, 7, 123456789, -2, 1, 0] if signed else [5, 3, 2**bits - 1, 7, 123456789, 2, 1, 0], dtype)
    b = np.array([3, -5, -1, 9, 987654321, -2, 1, 5] if signed else [3, 5, 2**bits - 1, 9, 987654321, 2, 1, 5], dtype)
    u = [int(v) % (1 << bits) for v in a], [int(v) % (1 << bits) for v in b]
    want = np.array([(p * q) >> bits for p, q in zip(*u)], np.uint64 if bits == 64 else np.uint32).view(dtype)
    if signed:
        assert want[0] == 2  # Triton 3.9: umulhi(-5, 3) == 2
    run_on_all_paths(vk.umulhi_kernel, (1,), lambda: (a, b, np.zeros(8, dtype)), lambda *args: {2: want},
                     constexprs={"N": 8})


def test_clamp_propagate_nan():
    x = np.array([np.nan, 2, -3, 0.5, -np.inf, np.inf, -0.0, np.nan], np.float32)
    want_all = np.clip(x, -1, 1)  # NaN stays NaN
    want_none = np.fmin(np.fmax(x, -1), 1)  # NaN gives the lower bound (Triton 3.9)
    run_on_all_paths(vk.clamp_kernel, (1,), lambda: (x, -1.0, 1.0, np.zeros(16, np.float32)),
                     lambda *a: {3: np.concatenate([want_all, want_none])}, constexprs={"N": 8})


def test_argmax_argmin_with_nan_match_triton():
    rows = EXTREMES["rows"]
    x = np.array([[np.nan if v is None else v for v in r["row"]] for r in rows], np.float32)
    want = np.array([[r["argmax"], r["argmin"], r["max"], r["min"], r["argmax"], r["argmin"]] for r in rows],
                    np.float32)
    run_on_all_paths(vk.extremes_kernel, (1,), lambda: (x, np.zeros(x.size // 8 * 6, np.float32)),
                     lambda *a: {1: want.ravel()}, constexprs={"R": len(rows), "N": 8})


def test_all_nan_row():
    # Triton 3.9's interpreter raises here (numpy's "All-NaN slice"); Enceladus returns index 0 and a NaN value
    x = np.full((2, 8), np.nan, np.float32)
    x[1] = np.arange(8)
    want = np.array([[0, 0, np.nan, np.nan, 0, 0], [7, 0, 7, 0, 7, 0]], np.float32)
    run_on_all_paths(vk.extremes_kernel, (1,), lambda: (x, np.zeros(12, np.float32)), lambda *a: {1: want.ravel()},
                     constexprs={"R": 2, "N": 8})


def test_interleave_of_scalars():
    run_on_all_paths(vk.interleave_scalars_kernel, (1,), lambda: (np.array([5, 0, 0], np.int32),),
                     lambda o: {0: np.array([5, 5, 6], np.int32)})
