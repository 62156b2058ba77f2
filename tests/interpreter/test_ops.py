"""Reductions, scans, shape ops, dot, sort, gather, histogram, atomics and random numbers vs NumPy.

The compiler does not support these yet, so they run on the interpreter path only.
"""

import numpy as np
import pytest

from paths import on_path, run_on_all_paths

from .kernels_ops import (
    atomic_kernel,
    custom_reduce_kernel,
    dot_dtype_kernel,
    full_sum_kernel,
    histogram_kernel,
    matmul_kernel,
    rand_kernel,
    reduce_kernel,
    scan_kernel,
    shape_kernel,
    softmax_kernel,
    sort_gather_kernel,
)

RNG = np.random.default_rng(11)
INTERP = ("interpreter",)


def softmax_ref(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_softmax() -> None:
    x = RNG.standard_normal((37, 100)).astype(np.float32)
    run_on_all_paths(softmax_kernel, (37,), lambda: (np.zeros_like(x), x, 100, 100, 100), lambda out, x, *a: {
        0: softmax_ref(x)}, constexprs={"BLOCK": 128}, paths=INTERP)


@pytest.mark.parametrize(("M", "N", "K"), [(64, 48, 40), (33, 17, 70)])
def test_matmul(M, N, K) -> None:
    a = RNG.standard_normal((M, K)).astype(np.float32)
    b = RNG.standard_normal((K, N)).astype(np.float32)
    grid = (-(-M // 16), -(-N // 16))
    run_on_all_paths(matmul_kernel, grid, lambda: (a, b, np.zeros((M, N), np.float32), M, N, K, K, 1, N, 1, N, 1),
                     lambda a, b, *r: {2: a @ b}, constexprs={"BM": 16, "BN": 16, "BK": 16}, paths=INTERP,
                     rtol=1e-4, atol=1e-4)


def test_dot_dtypes() -> None:
    a = RNG.standard_normal((16, 32)).astype(np.float16)
    b = RNG.standard_normal((32, 16)).astype(np.float16)
    c = np.zeros((16, 16), np.float32)
    on_path(dot_dtype_kernel, "interpreter")[(1,)](a, b, c, M=16, N=16, K=32)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-5, atol=1e-5)
    ai = RNG.integers(-128, 127, (16, 32)).astype(np.int8)
    bi = RNG.integers(-128, 127, (32, 16)).astype(np.int8)
    ci = np.zeros((16, 16), np.int32)
    on_path(dot_dtype_kernel, "interpreter")[(1,)](ai, bi, ci, M=16, N=16, K=32)
    np.testing.assert_array_equal(ci, ai.astype(np.int32) @ bi.astype(np.int32))
    with pytest.raises(TypeError, match="same dtype"):
        on_path(dot_dtype_kernel, "interpreter")[(1,)](a, b.astype(np.float32), c, M=16, N=16, K=32)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize(("op", "dt"), [("sum", np.float32), ("sum", np.int8), ("max", np.float32),
                                        ("min", np.int32), ("argmax", np.float32), ("xor", np.uint32),
                                        ("member", np.float32)])
def test_reductions(op, dt, axis) -> None:
    R, C, P = 8, 16, 3
    if np.issubdtype(dt, np.integer):
        x = RNG.integers(-100 if dt != np.uint32 else 0, 100, (P, R, C)).astype(dt)
    else:
        x = RNG.standard_normal((P, R, C)).astype(dt)
    n = C if axis == 0 else R
    ref = {"sum": lambda v: v.sum(axis=axis + 1, dtype=np.int32 if dt == np.int8 else dt),
           "member": lambda v: v.sum(axis=axis + 1), "max": lambda v: v.max(axis=axis + 1),
           "min": lambda v: v.min(axis=axis + 1), "argmax": lambda v: v.argmax(axis=axis + 1).astype(np.int32),
           "xor": lambda v: np.bitwise_xor.reduce(v, axis=axis + 1)}[op](x)
    out = np.zeros((P, n), ref.dtype)
    idx = np.zeros((P, n), np.int32)
    on_path(reduce_kernel, "interpreter")[(P,)](x, out, idx, OP=op, AXIS=axis, R=R, C=C)
    np.testing.assert_allclose(out, ref, rtol=1e-5)
    if op == "max":
        np.testing.assert_array_equal(idx, x.argmax(axis=axis + 1))


def test_sum_of_everything_and_ties() -> None:
    x = RNG.standard_normal((4, 64)).astype(np.float32)
    out = np.zeros(4, np.float32)
    on_path(full_sum_kernel, "interpreter")[(4,)](x, out, BLOCK=64)
    np.testing.assert_allclose(out, x.sum(axis=1), rtol=1e-5)


def test_custom_reduce_keeps_order() -> None:
    x = RNG.standard_normal((3, 32)).astype(np.float32)
    x[1, 5] = x[1, 20] = 10.0  # a tie: the first index wins
    x[:, :3] = 0
    out, idx, first = np.zeros(3, np.float32), np.zeros(3, np.int32), np.zeros(3, np.float32)
    on_path(custom_reduce_kernel, "interpreter")[(3,)](x, out, idx, first, BLOCK=32)
    np.testing.assert_array_equal(out, x.max(axis=1))
    np.testing.assert_array_equal(idx, x.argmax(axis=1))
    np.testing.assert_array_equal(first, x[:, 3])


def test_scans() -> None:
    x = RNG.integers(-9, 9, (2, 32)).astype(np.int32)
    out, rev, custom = (np.zeros_like(x) for _ in range(3))
    on_path(scan_kernel, "interpreter")[(2,)](x, out, rev, custom, BLOCK=32)
    np.testing.assert_array_equal(out, np.cumsum(x, axis=1))
    np.testing.assert_array_equal(rev, np.cumsum(x[:, ::-1], axis=1)[:, ::-1])
    np.testing.assert_array_equal(custom, np.cumsum(x, axis=1))


def test_shape_ops() -> None:
    M, N = 8, 16
    x = RNG.standard_normal((M, N)).astype(np.float32)
    t, r, s, f = np.zeros((N, M), np.float32), np.zeros(M * N, np.float32), np.zeros_like(x), np.zeros_like(x)
    j = np.zeros((M, N, 2), np.float32)
    on_path(shape_kernel, "interpreter")[(1,)](x, t, r, j, s, f, M=M, N=N)
    np.testing.assert_array_equal(t, x.T)
    np.testing.assert_array_equal(r, x.ravel())
    np.testing.assert_array_equal(j, np.stack([x, x * 2], axis=-1))
    np.testing.assert_array_equal(s, x * 3)
    np.testing.assert_array_equal(f, x[:, ::-1])


def test_sort_and_gather() -> None:
    x = RNG.standard_normal(32).astype(np.float32)
    idx = RNG.integers(0, 32, 32).astype(np.int32)
    sorted_, gathered = np.zeros_like(x), np.zeros_like(x)
    on_path(sort_gather_kernel, "interpreter")[(1,)](x, idx, sorted_, gathered, BLOCK=32)
    np.testing.assert_array_equal(sorted_, np.sort(x)[::-1])
    np.testing.assert_array_equal(gathered, x[idx])


def test_histogram() -> None:
    x = RNG.integers(0, 8, (3, 64)).astype(np.int32)
    out = np.zeros((3, 8), np.int32)
    on_path(histogram_kernel, "interpreter")[(3,)](x, out, BLOCK=64, BINS=8)
    np.testing.assert_array_equal(out, np.stack([np.bincount(r, minlength=8) for r in x]))


def test_atomics_see_each_other() -> None:
    x = RNG.integers(0, 4, (5, 32)).astype(np.int32)
    counts = np.zeros(4, np.int32)
    old = np.full(6, -1, np.int32)
    on_path(atomic_kernel, "interpreter")[(5,)](x, counts, old, BLOCK=32, BINS=4)
    np.testing.assert_array_equal(counts, np.bincount(x.ravel(), minlength=4))  # duplicates within a tile add up
    assert old[0] == 4
    np.testing.assert_array_equal(old[1:], [-1, 0, 1, 2, 3])  # programs run in order; old values returned


def _philox_ref(seed: int, offsets: np.ndarray) -> np.ndarray:
    """A plain-Python Philox-4x32-10 (Salmon et al.), keyed and counted as Triton does."""
    out = []
    for off in offsets.tolist():
        c = [off & 0xFFFFFFFF, 0, 0, 0]
        k = [seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF]
        for _ in range(10):
            p0, p2 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
            c = [(p2 >> 32) ^ c[1] ^ k[0], p2 & 0xFFFFFFFF, (p0 >> 32) ^ c[3] ^ k[1], p0 & 0xFFFFFFFF]
            k = [(k[0] + 0x9E3779B9) & 0xFFFFFFFF, (k[1] + 0xBB67AE85) & 0xFFFFFFFF]
        out.append(c[0])
    return np.array(out, np.uint32)


def test_random_is_philox_and_independent_of_blocking() -> None:
    n = 300
    ints = np.zeros(n, np.uint32)
    on_path(rand_kernel, "interpreter")[(3,)](ints, 1234, n, KIND="randint", BLOCK=128)
    np.testing.assert_array_equal(ints, _philox_ref(1234, np.arange(n)))
    a, b = np.zeros(n, np.float32), np.zeros(n, np.float32)
    on_path(rand_kernel, "interpreter")[(3,)](a, 42, n, KIND="rand", BLOCK=128)
    on_path(rand_kernel, "interpreter")[(10,)](b, 42, n, KIND="rand", BLOCK=32)
    np.testing.assert_array_equal(a, b)
    assert a.min() >= 0 and a.max() < 1 and abs(a.mean() - 0.5) < 0.05
    g = np.zeros(4096, np.float32)
    on_path(rand_kernel, "interpreter")[(4,)](g, 7, 4096, KIND="randn", BLOCK=1024)
    assert abs(g.mean()) < 0.06 and abs(g.std() - 1) < 0.06


_TRITON_RAND = ("import torch, triton, triton.language as tl\n"
                "@triton.jit\n"
                "def k(o, s, N: tl.constexpr):\n"
                "    offs = tl.arange(0, N)\n"
                "    tl.store(o + offs, tl.rand(s, offs))\n"
                "o = torch.zeros(64)\n"
                "k[(1,)](o, 99, N=64)\n"
                "print(','.join(repr(float(v)) for v in o))\n")


def _triton_python() -> str | None:
    """The Python that has upstream Triton and torch: $ENCELADUS_TRITON_PYTHON (e.g. a separate venv), else
    this one if it has both; None when neither does."""
    import importlib.util
    import os
    import sys

    explicit = os.environ.get("ENCELADUS_TRITON_PYTHON")
    if explicit:
        return explicit
    if importlib.util.find_spec("triton") is None or importlib.util.find_spec("torch") is None:
        return None
    return sys.executable


def _upstream_rand(python: str) -> np.ndarray:
    """tl.rand(99, arange(64)) from upstream Triton's interpreter. Upstream failing to run is a test failure,
    not a skip: a broken cross-check must not look like a passing one."""
    import os
    import subprocess

    env = dict(os.environ, TRITON_INTERPRET="1")
    res = subprocess.run([python, "-c", _TRITON_RAND], capture_output=True, text=True, env=env, timeout=300)
    if res.returncode != 0:
        pytest.fail(f"upstream Triton's interpreter ({python}) failed, so nothing was cross-checked:\n"
                    f"{res.stderr.strip()[-600:]}")
    return np.array([float(v) for v in res.stdout.strip().split(",")], np.float32)


def test_random_matches_triton_when_installed() -> None:
    """Cross-check against upstream Triton's own interpreter (the `bench` extra, or a venv named by
    ENCELADUS_TRITON_PYTHON). Fixed values from Triton 3.9.0 are checked on every run by
    tests/codegen/test_random_known_answers.py."""
    python = _triton_python()
    if python is None:
        pytest.skip("upstream triton and torch are not installed (pip install -e '.[bench]', or set "
                    "ENCELADUS_TRITON_PYTHON to a Python that has them)")
    theirs = _upstream_rand(python)
    ours = np.zeros(64, np.float32)
    on_path(rand_kernel, "interpreter")[(1,)](ours, 99, 64, KIND="rand", BLOCK=64)
    np.testing.assert_array_equal(ours, theirs)


def test_an_upstream_failure_fails_the_cross_check(tmp_path) -> None:
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\necho 'ImportError: triton is broken' >&2\nexit 1\n")
    broken.chmod(0o755)
    with pytest.raises(pytest.fail.Exception, match="failed, so nothing was cross-checked"):
        _upstream_rand(str(broken))
