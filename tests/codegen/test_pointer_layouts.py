"""Tiles of pointers that change layout move as offsets from their pointer argument."""

import warnings

import numpy as np
import pytest

from enceladus.errors import CompilationError
from paths import cpu_available, on_path, path_missing, run_on_all_paths

from . import pointer_kernels as pk


@pytest.mark.parametrize("n,m,d", [(32, 16, 16), (16, 32, 32)])
def test_loaded_tile_feeds_a_dot_and_a_transposed_dot(n, m, d):
    steps = 3
    rng = np.random.default_rng(1)
    q = (rng.standard_normal((steps * m, d)) * 0.5).astype(np.float16)
    k = (rng.standard_normal((n, d)) * 0.5).astype(np.float16)

    def reference(q, k, out, steps):
        acc = np.zeros((n, d), np.float32)
        for i in range(steps):
            qi = q[i * m:(i + 1) * m].astype(np.float32)
            s = (k.astype(np.float32) @ qi.T).astype(np.float16).astype(np.float32)
            acc += s @ qi
        return {2: acc}

    run_on_all_paths(pk.two_dots_through_advancing_pointers, (1,), lambda: (q, k, np.zeros((n, d), np.float32), steps),
                     reference, constexprs={"N": n, "M": m, "D": d}, rtol=1e-3, atol=1e-3)
    if not cpu_available():
        path_missing("cpu", "no C++ compiler")
    # debug mode: the offsets read back from threadgroup memory go through the race detector's proxies, and
    # the instrumented build must accept them (a failed build would only warn: an error here)
    args = (q, k, np.zeros((n, d), np.float32), steps)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        on_path(pk.two_dots_through_advancing_pointers, "cpu")[(1,)](*args, N=n, M=m, D=d, debug=True)
    np.testing.assert_allclose(args[2], reference(*args)[2], rtol=1e-3, atol=1e-3)


def test_reshape_flip_and_cat_of_pointer_tiles():
    x = np.arange(64, dtype=np.float32)
    want = np.concatenate([x.reshape(8, 8)[:, ::-1].ravel(), 2 * x, x[32:], x[:32]])
    run_on_all_paths(pk.reshape_flip_pointers, (1,), lambda: (x, np.zeros(192, np.float32)), lambda x, o: {1: want})


def test_pointer_tiles_of_two_arguments_cannot_move_between_threads():
    x = np.zeros(32, np.float32)
    with pytest.raises(CompilationError) as info:
        on_path(pk.cat_pointers_of_two_arguments, "cpu")[(1,)](x, x.copy(), np.zeros(64, np.float32))
    err = info.value
    assert err.filename.endswith("pointer_kernels.py") and err.lineno is not None
    assert "tl.cat(" in err.source_line
    assert "tile of pointers" in err.message and "offsets" in err.fix
