"""Pointer casts and integer device addresses (Triton tutorial 08 passes a tensor of data_ptr()s).

On the cpu backend an address is a host address; a pointer made from one is checked against the argument of the
launch whose memory holds it, and one into memory Enceladus does not know is allowed with one warning naming the
kernel line. The interpreter follows the same rule. On Metal the addresses are ``Tensor.device_address()`` values
(gpuAddress), made resident at launch: tests/backends/metal/test_runtime_on_standin.py."""

import warnings

import numpy as np
import pytest

import enceladus
from paths import ALL_PATHS, cpu_available, on_path, path_missing, run_on_all_paths

from . import address_kernels as ak

RNG = np.random.default_rng(8)


def _needs(path):
    if path == "cpu" and not cpu_available():
        path_missing(path, "no C++ compiler")


@pytest.mark.parametrize("path", ALL_PATHS)
def test_addresses_into_unknown_memory_work_with_one_warning(path, monkeypatch):
    _needs(path)
    # the warning comes once per kernel line per process: start from none given (another test of the same
    # kernel line, e.g. the GPU-proxy replay's, may have taken it in this worker)
    from enceladus.runtime import launch as launch_mod
    monkeypatch.setattr(launch_mod, "_WARNED_ADDRESSES", set())
    arrays = [RNG.standard_normal(32).astype(np.float32) for _ in range(3)]  # not arguments of the launch
    addrs = np.array([a.ctypes.data for a in arrays], np.int64)
    out = np.zeros(96, np.float32)
    kernel = on_path(ak.address_gather_kernel, path)
    with pytest.warns(RuntimeWarning, match="memory Enceladus does not know") as record:
        kernel[(3,)](addrs, out, N=32)
    assert any("line 11" in str(w.message) for w in record), [str(w.message) for w in record]  # the kernel line
    np.testing.assert_array_equal(out, np.concatenate(arrays) * 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per kernel line, not per launch
        kernel[(3,)](addrs, out, N=32)


@pytest.mark.parametrize("path", ALL_PATHS)
def test_addresses_into_an_argument(path):
    """The addresses must point into this launch's own array (run_on_all_paths would launch a guarded copy)."""
    _needs(path)
    n = 16
    src = RNG.integers(-8, 8, 4 * n).astype(np.float16)
    s = src.copy()
    addrs = np.array([s.ctypes.data + 2 * n * i for i in range(4)], np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # known memory: no warning
        on_path(ak.address_scatter_kernel, path)[(4,)](addrs, s, N=n)
    want = (src.astype(np.float32).reshape(4, n) + np.arange(4)[:, None]).astype(np.float16).ravel()
    np.testing.assert_array_equal(s, want)


@pytest.mark.parametrize("path", ALL_PATHS)
def test_an_address_past_its_argument_is_an_out_of_bounds_access(path):
    _needs(path)
    src = np.zeros(32, np.float16)
    addrs = np.array([src.ctypes.data + 2 * 16 * i for i in range(3)], np.int64)  # the third block is past the end
    with pytest.raises((IndexError, enceladus.LaunchError), match="out-of-bounds"):
        on_path(ak.address_scatter_kernel, path)[(3,)](addrs, src, N=16)


def test_a_tile_of_addresses_with_null_lanes():
    vals = np.arange(8, dtype=np.int32) * 3

    def make():
        v = vals.copy()
        a = np.array([v.ctypes.data + 4 * i if i % 3 else 0 for i in range(8)], np.int64)
        return a, np.zeros(8, np.int32), v

    want = np.where(np.arange(8) % 3 != 0, vals, -1).astype(np.int32)
    for path in ALL_PATHS:  # the addresses must point into this very launch's arrays, so no guarded copies here
        _needs(path)
        a, out, v = make()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # v is not an argument: unknown memory
            on_path(ak.address_tile_kernel, path)[(1,)](a, out, N=8)
        np.testing.assert_array_equal(out, want, err_msg=path)


def test_pointer_to_pointer_and_to_integer():
    x = RNG.standard_normal(16).astype(np.float32)
    run_on_all_paths(ak.pointer_cast_kernel, (1,),
                     lambda: (x, np.zeros(16, np.int32), np.zeros(16, np.int64), np.zeros(1, np.bool_)),
                     lambda x, b, a, nn: {1: x.view(np.int32), 2: np.arange(16, dtype=np.int64) * 4,
                                          3: np.ones(1, np.bool_)}, constexprs={"N": 16})


@pytest.mark.parametrize("path", ALL_PATHS)
@pytest.mark.parametrize("kind,message", [("int32", "an address is a 64-bit integer"),
                                          ("float", "a pointer converts to int64, uint64 or int1 only")])
def test_pointer_cast_refusals(kind, message, path):
    _needs(path)
    with pytest.raises(enceladus.CompilationError, match=message):
        on_path(ak.bad_address_kernel, path)[(1,)](np.zeros(2, np.int64), KIND=kind)


def test_where_between_pointers_into_two_arguments():
    n = 32
    cond = RNG.integers(0, 2, n).astype(np.int8)
    a = RNG.standard_normal(n).astype(np.float32)
    b = RNG.standard_normal(n).astype(np.float32)
    for first in (0, 1):
        c = cond.copy()
        c[0] = first
        run_on_all_paths(ak.where_pointers_kernel, (1,), lambda c=c: (c, a, b, np.zeros(2 * n, np.float32)),
                         lambda c, a, b, out: {3: np.concatenate([np.where(c != 0, a, b), a if c[0] else b])},
                         constexprs={"N": n})


def test_where_between_addresses_stores_them_back():
    """Triton's test_where[*int32]: random int64 values (most not multiples of 4) as int32 pointers, never
    dereferenced, stored as their addresses."""
    n = 64
    cond = RNG.integers(0, 2, n).astype(np.bool_)
    a = RNG.integers(1, 2**62, n, dtype=np.int64)
    b = RNG.integers(1, 2**62, n, dtype=np.int64)
    assert (a % 4 != 0).any()
    run_on_all_paths(ak.where_addresses_kernel, (1,), lambda: (cond, a, b, np.zeros(n, np.int64)),
                     lambda c, a, b, out: {3: np.where(c, a, b)}, constexprs={"N": n})


@pytest.mark.parametrize("path", ALL_PATHS)
@pytest.mark.parametrize("kind,message", [("types", "two pointers of the same type"),
                                          ("store", "storing pointers needs a pointer to int64")])
def test_where_pointer_refusals(kind, message, path):
    _needs(path)
    with pytest.raises(enceladus.CompilationError, match=message):
        on_path(ak.bad_where_pointers_kernel, path)[(1,)](np.zeros(2, np.float32), np.zeros(2, np.int32),
                                                          np.zeros(2, np.int32), KIND=kind)


def test_tensor_device_address_is_the_host_address_on_the_cpu_backend():
    # the portable spelling of tutorial 08's table: Tensor.device_address() (gpuAddress on Metal; host address here)
    if not cpu_available():
        path_missing("cpu", "no C++ compiler")
    blocks = [enceladus.tensor(RNG.standard_normal(16).astype(np.float32)) for _ in range(3)]
    assert all(b.device_address() == b.data_ptr() for b in blocks)
    assert blocks[0][4:].device_address() == blocks[0].data_ptr() + 16
    table = enceladus.tensor(np.array([b.device_address() for b in blocks], np.int64))
    out = enceladus.zeros(48)
    with warnings.catch_warnings():  # the blocks are not arguments: unchecked memory, warned about or not
        warnings.simplefilter("ignore", RuntimeWarning)
        on_path(ak.address_gather_kernel, "cpu")[(3,)](table, out, N=16)
    np.testing.assert_array_equal(out.numpy(), np.concatenate([b.numpy() for b in blocks]) * 2)


def test_the_interpreter_refuses_an_access_through_a_misaligned_address():
    """A misaligned address may be made into a pointer, selected and stored (above); an access through it is
    refused, naming the address (the interpreter; on the cpu backend it is the host's unaligned access)."""
    other = np.arange(8, dtype=np.int32)  # not an argument: unknown memory
    addr = np.array([other.ctypes.data + 1], np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(Exception, match="not a multiple of 4 bytes"):
            on_path(ak.misaligned_load_kernel, "interpreter")[(1,)](addr, np.zeros(1, np.int32))
