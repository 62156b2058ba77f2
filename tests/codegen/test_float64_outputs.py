"""float64 arrays as outputs: Apple GPUs have no float64, but a kernel may store into a float64 array values that
float64 holds exactly (floats of 32 bits or fewer, integers of 32 bits or fewer) or rounds as Triton's conversion
does (64-bit integers: to nearest even at 53 bits); the compiler writes the float64 bits in integer arithmetic.
Loading one, updating it atomically or storing a float literal beyond float32 into it is refused on both paths (Triton's tests make such outputs themselves: NumPy 2 promotes an integer array and a Python float to
float64)."""

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from paths import ALL_PATHS, cpu_available, on_path, path_missing, run_on_all_paths


@enceladus.jit
def widen_kernel(x_ptr, z_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@enceladus.jit
def scalar_kernel(z_ptr):
    tl.store(z_ptr, 0.1)
    tl.store(z_ptr + 1, -7)
    tl.store(z_ptr + 2, tl.program_id(0) > 5)
    tl.store(z_ptr + 3, 9007199254740993)  # 2**53 + 1, an int64 literal: rounds to 2**53


@enceladus.jit
def bad_float64_kernel(z_ptr, KIND: tl.constexpr):
    if KIND == "load":
        tl.store(z_ptr, tl.load(z_ptr + 1) + 1)
    elif KIND == "atomic":
        tl.atomic_add(z_ptr, 1.0)
    else:
        tl.store(z_ptr, 1e300)


def _bits_equal(args, expected, path):
    z, want = args[1], expected[1]
    np.testing.assert_array_equal(z.view(np.uint64), want.view(np.uint64), err_msg=path)


F32_SPECIALS = np.array([1.5, -0.0, 0.0, np.inf, -np.inf, np.nan, 3.4e38, -1e-45, 1e-40, 1.17549435e-38,
                         0.1, -2.5e-7, 65504, 1 / 3, 16777217, -1e30], np.float32)
INTS = {np.int8: [-128, 127, 0, -1], np.int16: [-32768, 32767, 255, -3], np.uint16: [65535, 0, 1, 4096],
        np.int32: [-2**31, 2**31 - 1, 16777217, -16777219], np.uint32: [2**32 - 1, 2**31, 16777217, 3],
        # 64 bits: ties to even at 53 bits (2**53 + 1 -> 2**53, 2**53 + 3 -> 2**53 + 4), a carry into the exponent
        np.int64: [-2**63, 2**63 - 1, 2**53 + 1, -(2**53 + 3), 2**54 - 1, 12345678901234567, -1, 2**62 + 2**9],
        np.uint64: [2**64 - 1, 2**63, 2**53 + 1, 2**53 + 3, 2**60 + 2**7, 2**60 + 2**7 + 1, 1, 0]}


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int8", "int16", "uint16", "int32", "uint32",
                                   "int64", "uint64", "bool"])
def test_values_are_widened_exactly_and_masked_lanes_untouched(dtype):
    if dtype == "float32":
        x = F32_SPECIALS
    elif dtype in ("float16", "bfloat16"):
        np_dt = np.float16 if dtype == "float16" else enceladus.language.bfloat16.to_numpy()
        with np.errstate(over="ignore"):  # 3.4e38 and -1e30 become infinities in float16
            x = F32_SPECIALS.astype(np_dt)
    elif dtype == "bool":
        x = np.arange(16) % 3 == 0
    else:
        vals = INTS[getattr(np, dtype)]
        x = np.array((vals * 4)[:16], getattr(np, dtype))
    n = 13  # the last 3 elements of z are masked off: they keep their float64 values

    def reference(x, z, n):
        want = z.copy()
        want[:n] = x[:n].astype(np.float32).astype(np.float64) if dtype == "bfloat16" else x[:n].astype(np.float64)
        return {1: want}

    run_on_all_paths(widen_kernel, (1,), lambda: (x, np.full(16, np.pi), n), reference, check=_bits_equal,
                     constexprs={"BLOCK": 16})


def test_python_scalars_and_booleans():
    run_on_all_paths(scalar_kernel, (1,), lambda: (np.full(5, np.e),),
                     lambda z: {0: np.array([np.float32(0.1), -7.0, 0.0, 2.0**53, np.e])},
                     check=lambda args, exp, path: np.testing.assert_array_equal(args[0], exp[0], err_msg=path))


@pytest.mark.parametrize("path", ALL_PATHS)
@pytest.mark.parametrize("kind,message", [("load", "a float64 array can only be stored to"),
                                          ("atomic", "float64"),
                                          ("literal", "float64")])
def test_other_uses_of_float64_arrays_are_refused(kind, message, path):
    if path == "cpu" and not cpu_available():
        path_missing(path, "no C++ compiler")
    z = np.zeros(4)
    with pytest.raises(enceladus.CompilationError, match=message):
        on_path(bad_float64_kernel, path)[(1,)](z, KIND=kind)
    assert (z == 0).all()
