"""tl.device_print and tl.device_assert in compiled kernels (a device log read by the host) and the interpreter."""

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from enceladus.runtime.devicelog import DeviceAssertionError
from paths import on_path


@enceladus.jit
def print_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.device_print("x: ", x, offs)
    tl.device_print("n = ", n)


@enceladus.jit
def assert_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.device_assert(x < 100, "x must stay below 100", mask=offs < n)
    tl.store(x_ptr + offs, x + 1, mask=offs < n)


def _lines(capsys, marker):
    return [line for line in capsys.readouterr().out.splitlines() if marker in line]


def test_device_print_matches_the_interpreter(capsys):
    x = np.array([0.5, -1.25, 3.0, 7.5], np.float32)
    outputs = {}
    for path in ("interpreter", "cpu"):
        on_path(print_kernel, path)[(2,)](x, 4, BLOCK=4)
        outputs[path] = capsys.readouterr().out.splitlines()
    assert outputs["cpu"] == outputs["interpreter"]
    assert "pid (1, 0, 0) idx (3) x: 7.5 3" in outputs["cpu"]
    assert "pid (0, 0, 0) idx () n = 4" in outputs["cpu"]


@pytest.mark.parametrize("path", ["interpreter", "cpu"])
def test_device_assert(path):
    x = np.arange(300, dtype=np.int32)
    on_path(assert_kernel, path)[(3,)](x, 50, BLOCK=128, debug=True)  # only the first 50 elements are checked
    np.testing.assert_array_equal(x[:50], np.arange(50) + 1)
    x = np.arange(300, dtype=np.int32)
    on_path(assert_kernel, path)[(3,)](x, 300, BLOCK=128)  # outside debug mode it is not checked, as in Triton
    np.testing.assert_array_equal(x, np.arange(300) + 1)
    x = np.arange(300, dtype=np.int32)
    with pytest.raises(AssertionError, match="x must stay below 100") as info:
        on_path(assert_kernel, path)[(3,)](x, 300, BLOCK=128, debug=True)
    assert "program (0, 0, 0)" in str(info.value) or "program (1, 0, 0)" in str(info.value) or path == "interpreter"
    if path == "cpu":
        assert isinstance(info.value, DeviceAssertionError) and "line" in str(info.value)


def test_kernels_that_log_run_synchronously_even_on_tensors():
    x = enceladus.tensor(np.arange(8, dtype=np.int32) * 50)
    with pytest.raises(DeviceAssertionError):
        assert_kernel[(1,)](x, 8, BLOCK=8, debug=True)
