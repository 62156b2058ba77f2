"""The bad-launch corpus: launches that must fail with a clear error and leave every array untouched.

test_launch.py covers the first cases of each kind (missing/extra/duplicate arguments, a float or negative
grid entry, a grid of 4 dims or over 2**32 on axis 0, float64/complex64/object arrays, a 1-D negative
stride, a read-only output, a misaligned float32 array); these extend each kind.
"""

from __future__ import annotations

import numpy as np
import pytest

import enceladus
from enceladus import CompilationError

from . import launch_kernels as lk

k = lk.scale_kernel


@pytest.fixture
def arrays():
    x = np.arange(16, dtype=np.float32)
    out = np.full(16, 7, np.float32)
    return x, out


def untouched(x, out):
    np.testing.assert_array_equal(x, np.arange(16, dtype=np.float32))
    assert (out == 7).all(), "a failed launch wrote to the output"


BAD = {
    # arguments
    "no arguments": (lambda x, o: k[(1,)](), TypeError, "missing argument 'x_ptr'"),
    "missing a middle argument by keyword": (lambda x, o: k[(1,)](x, out_ptr=o, alpha=1.0), TypeError,
                                             "missing argument 'n'"),
    "constexpr given twice": (lambda x, o: k[(1,)](x, o, 16, 1.0, 128, BLOCK=128), TypeError,
                              "multiple values for argument 'BLOCK'"),
    "launch option typo": (lambda x, o: k[(1,)](x, o, 16, 1.0, num_warp=4), TypeError,
                           "unexpected keyword argument 'num_warp'.*launch options: num_warps"),
    "grid passed as a keyword": (lambda x, o: k[(1,)](x, o, 16, 1.0, grid_size=(1,)), TypeError,
                                 "unexpected keyword argument 'grid_size'"),
    # grids
    "empty grid": (lambda x, o: k[()](x, o, 16, 1.0), TypeError, "1 to 3 ints"),
    "None grid": (lambda x, o: k[None](x, o, 16, 1.0), TypeError, "got None"),
    "string grid": (lambda x, o: k["4"](x, o, 16, 1.0), TypeError, "got '4'"),
    "bool grid entry": (lambda x, o: k[(True,)](x, o, 16, 1.0), TypeError, r"grid\[0\] must be an int, got bool"),
    "negative grid on axis 1": (lambda x, o: k[(1, -2)](x, o, 16, 1.0), ValueError, r"grid\[1\] = -2 is negative"),
    "negative grid on axis 2": (lambda x, o: k[(1, 1, -1)](x, o, 16, 1.0), ValueError, r"grid\[2\] = -1"),
    "grid over Metal's limit on axis 1": (lambda x, o: k[(1, 2**32)](x, o, 16, 1.0), ValueError,
                                          r"grid\[1\] = 4294967296 exceeds Metal's limit"),
    "grid over Metal's limit on axis 2": (lambda x, o: k[(1, 1, 2**40)](x, o, 16, 1.0), ValueError,
                                          "exceeds Metal's limit of 4294967295"),
    "callable grid returning a negative": (lambda x, o: k[lambda m: (-1,)](x, o, 16, 1.0), ValueError,
                                           "negative"),
    "callable grid returning a float": (lambda x, o: k[lambda m: 2.0](x, o, 16, 1.0), TypeError, "got 2.0"),
    "callable grid returning numpy float": (lambda x, o: k[lambda m: (np.float32(2),)](x, o, 16, 1.0),
                                            TypeError, r"grid\[0\] must be an int, got float32"),
    # array dtypes
    "float64 input (loaded)": (lambda x, o: k[(1,)](x.astype(np.float64), o, 16, 1.0), enceladus.CompilationError,
                               "a float64 array can only be stored to"),
    "complex128 input": (lambda x, o: k[(1,)](x.astype(np.complex128), o, 16, 1.0), TypeError,
                         "argument 'x_ptr'.*complex128.*Supported"),
    "long double": (lambda x, o: k[(1,)](x.astype(np.longdouble), o, 16, 1.0), TypeError,
                    f"{np.dtype(np.longdouble).name} cannot be passed"),
    "datetime64": (lambda x, o: k[(1,)](np.zeros(16, "datetime64[s]"), o, 16, 1.0), TypeError, "datetime64"),
    "structured dtype": (lambda x, o: k[(1,)](np.zeros(16, [("a", "f4")]), o, 16, 1.0), TypeError,
                         "cannot be passed to a kernel"),
    "python list for a pointer": (lambda x, o: k[(1,)](list(x), o, 16, 1.0), TypeError,
                                  "argument 'x_ptr' has type list"),
    "complex scalar": (lambda x, o: k[(1,)](x, o, 16, 1j), TypeError, "argument 'alpha' has type complex"),
    # layouts
    "2-D negative stride": (lambda x, o: k[(1,)](x.reshape(4, 4)[::-1], o, 16, 1.0), ValueError,
                            "negative strides"),
    "np.flip view": (lambda x, o: k[(1,)](np.flip(x), o, 16, 1.0), ValueError, "ascontiguousarray"),
    "float32 two bytes off": (lambda x, o: k[(1,)](np.zeros(66, np.uint8)[2:].view(np.float32), o, 16, 1.0),
                              ValueError, "not aligned to its element size"),
    "misaligned output": (lambda x, o: k[(1,)](x, np.zeros(65, np.uint8)[1:].view(np.float32), 16, 1.0),
                          ValueError, "argument 'out_ptr' is not aligned"),
    "broadcast (zero-stride) output": (lambda x, o: k[(1,)](x, np.broadcast_to(np.float32(7), (16,)), 16, 1.0),
                                       ValueError, "read-only array.*stores through it"),
    "output over immutable bytes": (lambda x, o: k[(1,)](x, np.frombuffer(bytes(64), np.float32), 16, 1.0),
                                    ValueError, "argument 'out_ptr' is a read-only array"),
    # constexprs and options
    "constexpr positionally as a string": (lambda x, o: k[(1,)](x, o, 16, 1.0, "128"), CompilationError,
                                           "got str"),
    "constexpr positionally as an array": (lambda x, o: k[(1,)](x, o, 16, 1.0, np.zeros(3)), CompilationError,
                                           "got ndarray"),
    "constexpr None": (lambda x, o: k[(1,)](x, o, 16, 1.0, None), CompilationError, "got NoneType"),
    "constexpr not a power of two": (lambda x, o: k[(1,)](x, o, 16, 1.0, 100), CompilationError,
                                     "not a power of two"),
    "num_warps not a power of two": (lambda x, o: k[(1,)](x, o, 16, 1.0, num_warps=3), CompilationError,
                                     "num_warps=3 is not supported"),
    "num_warps as a string": (lambda x, o: k[(1,)](x, o, 16, 1.0, num_warps="4"), CompilationError,
                              "num_warps='4' is not supported"),
    "num_warps too large": (lambda x, o: k[(1,)](x, o, 16, 1.0, num_warps=64), CompilationError,
                            "num_warps=64"),
    "float where a pointer is used": (lambda x, o: k[(1,)](1.0, o, 16, 1.0), CompilationError, "tl.load"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_launch_is_refused_and_arrays_untouched(arrays, name):
    call, exc, match = BAD[name]
    x, out = arrays
    with pytest.raises(exc, match=match):
        call(x, out)
    untouched(x, out)


def test_refusal_leaves_the_kernel_usable(arrays):
    x, out = arrays
    with pytest.raises(ValueError):
        k[(1, -1)](x, out, 16, 1.0)
    k[(1,)](x, out, 16, 2.0)
    np.testing.assert_array_equal(out, 2 * x)


@pytest.mark.parametrize("grid", [(0,), (1, 0), (1, 1, 0), (0, 0, 0), lambda m: (0,)])
def test_empty_grids_launch_nothing(arrays, grid):
    x, out = arrays
    k[grid](x, out, 16, 2.0)
    untouched(x, out)


def test_constexpr_float_and_int_are_different_specializations(arrays):
    """BLOCK=128.0 is refused (tl.arange needs an int) whether or not BLOCK=128 was launched before."""
    x, out = arrays
    fresh = enceladus.jit(lk.scale_kernel.fn)
    with pytest.raises(CompilationError, match="constexpr integer, got 128.0"):
        fresh[(1,)](x, out, 16, 1.0, 128.0)
    fresh[(1,)](x, out.copy(), 16, 1.0, 128)
    with pytest.raises(CompilationError, match="constexpr integer, got 128.0"):
        fresh[(1,)](x, out, 16, 1.0, 128.0)
    untouched(x, out)


# --- arrays on the wrong device (torch) -----------------------------------------------------------------

def test_torch_meta_tensor_is_refused(arrays):
    torch = pytest.importorskip("torch")
    x, out = arrays
    with pytest.raises(ValueError, match="torch tensor on device 'meta'.*x.cpu\\(\\)"):
        k[(1,)](torch.empty(16, device="meta"), out, 16, 1.0)
    untouched(x, out)


def test_torch_cuda_tensor_is_refused(arrays):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device on this machine (torch.cuda.is_available() is False)")
    x, out = arrays
    with pytest.raises(ValueError, match="device 'cuda"):
        k[(1,)](torch.zeros(16, device="cuda"), out, 16, 1.0)
    untouched(x, out)


@pytest.mark.parametrize("make, exc, match", [
    (lambda t: t.zeros(16, dtype=t.float64), enceladus.CompilationError, "float64 array can only be stored to"),
    (lambda t: t.zeros(16, dtype=t.complex64), TypeError, "complex64"),
])
def test_torch_dtypes_are_refused(arrays, make, exc, match):
    torch = pytest.importorskip("torch")
    x, out = arrays
    with pytest.raises(exc, match=match):
        k[(1,)](make(torch), out, 16, 1.0)
    untouched(x, out)


def test_torch_output_on_meta_leaves_input_untouched(arrays):
    torch = pytest.importorskip("torch")
    x, out = arrays
    with pytest.raises(ValueError, match="argument 'out_ptr' is a torch tensor on device 'meta'"):
        k[(1,)](x, torch.empty(16, device="meta"), 16, 1.0)
    untouched(x, out)


def test_torch_sparse_tensor_error_names_the_argument(arrays):
    torch = pytest.importorskip("torch")
    x, out = arrays
    with pytest.raises(TypeError, match="argument 'x_ptr'"):
        k[(1,)](torch.zeros(16).to_sparse(), out, 16, 1.0)
    untouched(x, out)


def test_a_none_grid_is_refused_by_a_kernel_whose_launch_plan_is_new(arrays):
    """A launch plan is recorded by a slow-path launch; before its first fast launch it remembered no grid, which
    it wrote as None, so a following `k[None](...)` took the remembered 3-D grid (None) and failed with
    "argument of type 'NoneType' is not iterable" instead of the grid message (seen when test_cache.py ran first)."""
    x, out = arrays
    kernel = enceladus.jit(lk.scale_kernel.fn)  # a fresh kernel: no plan yet
    kernel[(1,)](x, out, 16, 2.0)  # slow path: records the plan
    np.testing.assert_array_equal(out, 2 * x)
    out[:] = 7
    with pytest.raises(TypeError, match="got None"):
        kernel[None](x, out, 16, 1.0)
    untouched(x, out)
