"""Tile atomics onto consecutive addresses are done with consecutive lanes on consecutive elements (one element,
or one 32-bit word of 16-bit elements, per lane per SIMD-group instruction) when that costs no conversion through
threadgroup memory: Metal has only scalar atomics, so in the default 16-bytes-per-lane layout one SIMD group's
atomic instruction would spread over 512 bytes instead of 128 (compiler/passes/layouts.py,
lane_contiguous_atomics). The MSL shows the layout; every kernel runs on every path against NumPy."""

import re

import numpy as np
import pytest

from paths import run_on_all_paths

from . import atomic_kernels as ak

RNG = np.random.default_rng(23)


def _layouts(msl: str) -> list[str]:
    return re.findall(r"// L\d+ = (blocked<[^>]*>)", msl)


def _values(dtype, n):
    if np.dtype(dtype).kind == "f":
        return RNG.integers(-40, 40, n).astype(dtype) / 4
    return RNG.integers(0, 1 << 20, n).astype(dtype)


@pytest.mark.parametrize("kind,dtype,spt", [("add", np.float32, 1), ("add", np.int32, 1), ("add_acq_rel", np.float32, 1),
                                            ("max", np.float32, 1), ("or", np.uint32, 1), ("xchg", np.int32, 1),
                                            ("add", np.float16, 2), ("max", np.float16, 2)])
def test_atomics_on_consecutive_addresses_are_lane_contiguous(kind, dtype, spt):
    n, block = 3000, 1024  # the last program masked
    x, out = _values(dtype, n), _values(dtype, n)
    ck = ak.accumulate_kernel.warmup(x, out, n, BLOCK=block, KIND=kind, grid=(3,))
    layouts = _layouts(ck.asm["msl"])
    # every tile in one layout: lanes on consecutive elements (16-bit: on consecutive 32-bit words), the load
    # done in it too, no conversion
    assert layouts == [f"blocked<shape=[1024], spt=[{spt}], tpw=[32], wpc=[4], order=[0]>"], layouts
    assert "threadgroup " not in ck.asm["msl"].split("kernel void")[1]

    def reference(x, out, n):
        if kind == "add":
            return {1: (out + x * dtype(2)).astype(dtype)}
        if kind == "add_acq_rel":
            return {1: (out + x).astype(dtype)}
        if kind == "max":
            return {1: np.maximum(out, x)}
        return {1: out | x} if kind == "or" else {1: x}

    run_on_all_paths(ak.accumulate_kernel, (3,), lambda: (x.copy(), out.copy(), n), reference,
                     constexprs={"BLOCK": block, "KIND": kind}, rtol=0, atol=0)


def test_2d_atomics_walk_the_contiguous_rows():
    m, n, bm = 50, 64, 16
    x, out = _values(np.float32, m * n), _values(np.float32, m * n)
    ck = ak.accumulate_2d_kernel.warmup(x, out, m, N=n, BM=bm, grid=(4,))
    assert _layouts(ck.asm["msl"]) == ["blocked<shape=[16, 64], spt=[1, 1], tpw=[1, 32], wpc=[2, 2], order=[1, 0]>"]
    run_on_all_paths(ak.accumulate_2d_kernel, (4,), lambda: (x.copy(), out.copy(), m),
                     lambda x, out, m: {1: out + x}, constexprs={"N": n, "BM": bm}, rtol=0, atol=0)


@pytest.mark.parametrize("kind", ["histogram", "stored_too", "old_values_used"])
def test_other_atomics_keep_the_default_layout(kind):
    block = 512
    x = RNG.integers(0, 1 << 20, block).astype(np.int32)
    out = RNG.integers(0, 1 << 20, block).astype(np.int32)
    ck = ak.accumulate_kept_kernel.warmup(x, out, np.zeros(block, np.int32), BLOCK=block, KIND=kind, grid=(1,))
    assert all("spt=[4]" in lay for lay in _layouts(ck.asm["msl"])), _layouts(ck.asm["msl"])
    assert "threadgroup " not in ck.asm["msl"].split("kernel void")[1] or kind == "old_values_used"

    def reference(x, out, aux):
        if kind == "histogram":
            want = out.copy()
            np.add.at(want, x & 15, 1)
            return {1: want}
        return {1: out + x, 2: x if kind == "stored_too" else out}

    run_on_all_paths(ak.accumulate_kept_kernel, (1,), lambda: (x.copy(), out.copy(), np.zeros(block, np.int32)),
                     reference, constexprs={"BLOCK": block, "KIND": kind}, rtol=0, atol=0)


def test_the_default_layout_is_kept_where_it_already_has_one_element_per_lane():
    x = np.zeros(128, np.float32)
    ck = ak.accumulate_kernel.warmup(x, x.copy(), 128, BLOCK=128, KIND="add", grid=(1,))
    assert _layouts(ck.asm["msl"]) == ["blocked<shape=[128], spt=[1], tpw=[32], wpc=[4], order=[0]>"]
