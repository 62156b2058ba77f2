"""The launch fast path's compiled pieces: the key function and the packer of a launch plan.

``fastpath.key_function`` builds the fast key without a loop and ``fastpath.packer`` packs a launch straight from
the arguments; both are compiled from text once per pattern of arguments. These tests pin that they compute what
the general code computes, and that what they cannot handle (strided Tensors, scalars out of range, unusual
argument kinds) still takes the general path with the same result or error.
"""

import numpy as np
import pytest

import enceladus
from enceladus.runtime.fastpath import SlowPath, arg_key, key_function, positional_key

from . import launch_kernels as lk


def _cases() -> list[tuple]:
    t = enceladus.tensor(np.ones(8, np.float32))
    view = enceladus.tensor(np.ones((4, 8), np.float16))[:, :4]
    arr = np.ones(4, np.int32)
    return [
        (t, view, arr),
        (0, 1, 16, 17, -5, 2**31 - 1, -(2**31), 2**31, -(2**31) - 1, 2**63 - 1, 2**63, 2**64 - 1),
        (2.0, 2, True, 1, False, 0, None, 1.0),
    ]


@pytest.mark.parametrize("case", range(3))
def test_key_function_is_the_key_of_every_argument(case):
    args = _cases()[case]
    cflags = (False,) * len(args)
    assert key_function(cflags)(args) == tuple(arg_key(a) for a in args)
    assert key_function(cflags)(args) == tuple(positional_key(args, cflags))
    assert key_function(cflags) is key_function(cflags)  # compiled once per pattern


def test_key_function_tells_equal_values_of_other_types_apart():
    f = key_function((False,))
    assert len({f((2,)), f((2.0,)), f((True,))}) == 3
    assert f((1,)) != f((True,)) and f((16,)) != f((17,))
    c = key_function((True,))  # a constexpr position: (class, value)
    assert c((64,)) == ((int, 64),) and c((64,)) != c((64.0,))


def test_key_function_refuses_what_only_the_slow_path_handles():
    f = key_function((False,))
    for bad in ([1, 2], 2**64, -(2**63) - 1, object()):
        with pytest.raises(SlowPath):
            f((bad,))
    assert key_function(())(()) == ()


def _plan(kernel):
    (plan,) = kernel._fast.values()
    return plan


def test_plan_packs_the_bytes_the_launcher_packs():
    k = enceladus.jit(lk.scale_kernel.fn)
    x = enceladus.tensor(np.arange(64, dtype=np.float32))
    out = enceladus.zeros(64)
    k[(2,)](x, out, 64, 3.0, BLOCK=32)  # records the plan
    k[(2,)](x, out, 64, 3.0, BLOCK=32)  # its first use compiles the packer
    plan = _plan(k)
    assert callable(plan.pack)
    args = (x, out, 64, 3.0)
    launcher = plan.launcher
    grid3, gsize = (2, 1, 1), (2 * launcher.tptg, 1, 1)
    arrays = [args[i] for i in plan.buffer_index]
    expected = launcher.packet(grid3, [a._address for a in arrays], [args[i] for i in plan.scalar_index],
                               [a._extent for a in arrays])
    assert plan.pack(args, grid3, gsize) == expected
    np.testing.assert_array_equal(out.numpy(), 3 * np.arange(64, dtype=np.float32))


def test_strided_tensor_on_a_recorded_plan_keeps_its_layout_checked():
    """A strided view has the fast key of a contiguous Tensor of its dtype; its extent (shape and strides) does
    not fit the compiled packer, so the launch packs through the launcher: still correct, still checked."""
    k = enceladus.jit(lk.scale_kernel.fn)
    base_np = np.arange(8 * 32, dtype=np.float32).reshape(8, 32)
    flat = enceladus.tensor(base_np[0, :16].copy())
    view = enceladus.tensor(base_np)[:, :16]  # rows of 16 out of 32: between the rows is not the view's
    out = enceladus.zeros(16)
    k[(1,)](flat, out, 16, 2.0, BLOCK=16)
    k[(1,)](flat, out, 16, 2.0, BLOCK=16)
    np.testing.assert_array_equal(out.numpy(), 2 * base_np[0, :16])
    out2 = enceladus.zeros(16)
    k[(1,)](view, out2, 16, 3.0, BLOCK=16)  # the same plan: the first row only
    assert len(k._fast) == 1
    np.testing.assert_array_equal(out2.numpy(), 3 * base_np[0, :16])
    k[(1,)](view, enceladus.zeros(32), 32, 3.0, BLOCK=32)  # reads past the first row: between the rows
    with pytest.raises(enceladus.LaunchError, match="between the elements of the strided view"):
        enceladus.synchronize()


def test_scalar_out_of_range_on_a_recorded_plan_names_the_argument():
    k = enceladus.jit(lk.scale_kernel.fn)
    x = enceladus.tensor(np.ones(16, np.float32))
    out = enceladus.zeros(16)
    k[(1,)](x, out, 16, 2.0, BLOCK=16)
    k[(1,)](x, out, 16, 2.0, BLOCK=16)
    with pytest.raises(OverflowError, match="'alpha' = 1e\\+39 is outside the range of fp32"):
        k[(1,)](x, out, 16, 1e39, BLOCK=16)
    enceladus.synchronize()
    np.testing.assert_array_equal(out.numpy(), np.full(16, 2, np.float32))
