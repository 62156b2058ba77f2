"""Tile accesses of proven extent are checked once per tile on the checked cpu backend, with the same reports.

When the compiler proves that every pointer of a 1-D tile access is ``base + uniform scalars + arange(0, n)``
(``metadata["tile_checks"]``), the checked build tests that extent once per tile (bounds and alignment) and
runs the access on raw pointers; when the test fails (a tail block, a bad offset, a misaligned or strided
argument) every access is checked as before, so the same violations are reported with the same element
index and line, and masked-off lanes are never reported.
"""

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from enceladus.backends.cpu import CpuBackend, KernelLaunchError
from enceladus.runtime.backend import get_backend
from paths import needs_cpu, run_on_all_paths

pytestmark = needs_cpu


@enceladus.jit
def shifted_add(x_ptr, y_ptr, out_ptr, n, shift, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs + shift, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@enceladus.jit
def row_scale(X, Y, stride, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    X += row * stride
    Y += row * stride
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        tl.store(Y + cols, tl.load(X + cols, mask=cols < N, other=0.0) * 2.0, mask=cols < N)


@enceladus.jit
def center_rows(X, Y, N, BLOCK: tl.constexpr):
    # a reduction (barriers, placed after emission) between the tile accesses
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(X + row * N + cols, mask=cols < N, other=0.0)
    mean = tl.sum(x, axis=0) / N
    x2 = tl.load(X + row * N + cols, mask=cols < N, other=0.0)
    tl.store(Y + row * N + cols, x2 - mean, mask=cols < N)


def _cpp(kernel) -> str:
    return get_backend().compile(kernel.asm["msl"], offset_checks=kernel.metadata["offset_checks"],
                                 tile_checks=kernel.metadata["tile_checks"]).cpp


def test_affine_tile_accesses_are_listed_and_checked_once_per_tile():
    x = np.arange(1024, dtype=np.float32)
    k = shifted_add.warmup(x, x, x, 1024, 1, BLOCK=256, grid=(4,))
    entries = k.metadata["tile_checks"]
    assert len(entries) == 3  # two loads and the store
    # 256 elements each; y and out in 8-byte vectors (2 elements per thread), x (shifted by 1) per element
    assert sorted(e[2:4] for e in entries) == [[256, 4], [256, 8], [256, 8]]
    assert {e[1].split(" + ")[0].lstrip("(") for e in entries} == {"x_ptr", "y_ptr", "out_ptr"}
    msl = k.asm["msl"].split("\n")
    for line, _, _, _, exprs in entries:
        assert any(p in msl[line - 1] for p in exprs)
    assert _cpp(k).count("::metal::__enc::tile_in_bounds(") == 3
    # the row loop of layer norm: a scalar pointer moved by row * stride, the loop variable and an arange
    k2 = row_scale.warmup(np.zeros((4, 100), np.float32), np.zeros((4, 100), np.float32), 100, 100, BLOCK=64,
                          grid=(4,))
    assert len(k2.metadata["tile_checks"]) == 2 and all(e[2] == 64 for e in k2.metadata["tile_checks"])
    # each entry names the line of its access, also after barriers were placed between them
    a = np.zeros((4, 100), np.float32)
    k3 = center_rows.warmup(a, a, 100, BLOCK=128, grid=(4,))
    msl = k3.asm["msl"].split("\n")
    assert len(k3.metadata["tile_checks"]) == 3 and "threadgroup_barrier" in k3.asm["msl"]
    for line, _, _, _, exprs in k3.metadata["tile_checks"]:
        assert any(p in msl[line - 1] for p in exprs), msl[line - 1]
    assert _cpp(k3).count("::metal::__enc::tile_in_bounds(") == 3


def test_tail_blocks_and_shifted_tiles_compute_the_reference():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(1000).astype(np.float32)
    y = rng.standard_normal(1000).astype(np.float32)
    run_on_all_paths(shifted_add, (4,), make_args=lambda: (x.copy(), y.copy(), np.zeros_like(x), 1000, 0),
                     reference=lambda x, y, out, n, s: {2: x + y}, constexprs={"BLOCK": 256})
    run_on_all_paths(shifted_add, (4,), make_args=lambda: (x.copy(), y.copy(), np.zeros_like(x), 999, 1),
                     reference=lambda x, y, out, n, s: {2: np.append(x[1:] + y[:999], 0).astype(np.float32)},
                     constexprs={"BLOCK": 256})
    a = rng.standard_normal((5, 100)).astype(np.float32)
    run_on_all_paths(row_scale, (5,), make_args=lambda: (a.copy(), np.zeros_like(a), 100, 100),
                     reference=lambda X, Y, s, n: {1: X * 2}, constexprs={"BLOCK": 64})
    run_on_all_paths(center_rows, (5,), make_args=lambda: (a.copy(), np.zeros_like(a), 100),
                     reference=lambda X, Y, n: {1: X - X.mean(axis=1, keepdims=True)}, constexprs={"BLOCK": 128},
                     rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shift, index", [(1, 1024), (5000, 5000), (-1, -1), (-3000, -3000)])
def test_a_tile_partly_out_of_bounds_is_reported_at_its_first_bad_element(shift, index):
    x = np.arange(1024, dtype=np.float32)
    y = np.zeros(1024, np.float32)
    out = np.full(1024, 7.0, np.float32)
    program = 3 if shift == 1 else 0
    with pytest.raises(enceladus.LaunchError, match=rf"kernel 'shifted_add', program \({program},0,0\), thread \d+: "
                                                    rf"out-of-bounds read of (4|16) bytes through argument 'x_ptr' at "
                                                    rf"element index {index} (.|\n)*test_tile_checks.py: x = "
                                                    r"tl.load\(x_ptr \+ offs \+ shift"):
        shifted_add[(4,)](x, y, out, 1024, shift, BLOCK=256)


def test_masked_off_lanes_of_a_failing_tile_are_not_reported():
    # the tile of program 3 reaches past the end; its lanes past n are masked off: no report, exact results
    x = np.arange(1000, dtype=np.float32)
    out = np.zeros(1000, np.float32)
    shifted_add[(4,)](x, np.ones(1000, np.float32), out, 1000, 0, BLOCK=256)
    np.testing.assert_array_equal(out, x + 1)
    shifted_add[(4,)](x, np.ones(1000, np.float32), out, 999, 1, BLOCK=256)
    np.testing.assert_array_equal(out[:999], x[1:] + 1)


def test_strided_rows_take_the_element_path():
    base = np.arange(8 * 200, dtype=np.float32).reshape(8, 200)
    y = np.zeros((8, 200), np.float32)
    row_scale[(8,)](base, y, 200, 100, BLOCK=64)  # the first 100 columns of each row of 200
    np.testing.assert_array_equal(y[:, :100], base[:, :100] * 2)
    np.testing.assert_array_equal(y[:, 100:], 0)
    with pytest.raises(enceladus.LaunchError, match=r"row_scale', program \(7,0,0\).*out-of-bounds read of 4 bytes "
                                                    r"through argument 'X' at element index 1600 "):
        row_scale[(8,)](base, y, 200, 201, BLOCK=64)  # row 7 reads one element past the array


MSL = """
#include <metal_stdlib>
using namespace metal;
kernel void copy4(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                  constant int& start [[buffer(2)]], uint t [[thread_position_in_grid]]) {
    const int o = start + 4 * int(t);
    *((device float4*)(out + 4 * int(t))) = *((device const float4*)(x + o));
}
"""


def test_the_translation_keeps_alignment_and_bounds_exact():
    # a hand-listed tile check on a raw MSL kernel (the translation is the same for generated ones): the extent
    # test fails for a misaligned start or a start past the end, and the per-access check reports it
    entry = [[7, "(x + (long(start)))", 32, 16, ["(x + o)"]]]
    lib = CpuBackend().compile(MSL, tile_checks=entry)
    assert "tile_in_bounds((x + (long(start))), 32, 16)" in lib.cpp
    fn = lib.function("copy4")
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(32, np.float32)
    start = np.array([8], np.int32)
    fn.launch((1, 1, 1), (8, 1, 1), buffers={0: x.ctypes.data, 1: out.ctypes.data, 2: start.ctypes.data}, buffer_sizes={0: x.nbytes, 1: out.nbytes, 2: 4})
    np.testing.assert_array_equal(out, x[8:40])
    start[0] = 2
    with pytest.raises(KernelLaunchError, match=r"misaligned 16-byte read"):
        fn.launch((1, 1, 1), (8, 1, 1), buffers={0: x.ctypes.data, 1: out.ctypes.data, 2: start.ctypes.data}, buffer_sizes={0: x.nbytes, 1: out.nbytes, 2: 4})
    start[0] = 36
    with pytest.raises(KernelLaunchError, match=r"out-of-bounds read of 16 bytes through argument 'x' at element "
                                                r"index 16 \(byte offset 256\)"):
        fn.launch((1, 1, 1), (8, 1, 1), buffers={0: x.ctypes.data, 1: out.ctypes.data, 2: start.ctypes.data}, buffer_sizes={0: x.nbytes, 1: out.nbytes, 2: 4})
    with pytest.raises(ValueError, match="does not match MSL line 6"):
        CpuBackend().compile(MSL, tile_checks=[[6, "(x + 0)", 32, 16, ["(x + o)"]]])
    with pytest.raises(ValueError, match="does not match MSL line 7"):  # an alignment that is not a power of 2
        CpuBackend().compile(MSL, tile_checks=[[7, "(x + 0)", 32, 12, ["(x + o)"]]])
    with pytest.raises(ValueError, match=r"malformed tile check .*expected \[msl_line, start, n, align"):
        CpuBackend().compile(MSL, tile_checks=[[7, "(x + 0)", 32]])



LOWEST_FAILING = """
import re
import numpy as np
import enceladus
import enceladus.language as tl

@enceladus.jit
def late_first(x_ptr, out_ptr, spins, shift, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for _ in range(spins * (pid == 0)):  # program 0 reaches its bad read last
        acc += 1.0
    tl.store(out_ptr + offs, tl.load(x_ptr + offs + shift) + acc)

x, out = np.arange(1 << 14, dtype=np.float32), np.zeros(1 << 14, np.float32)
for _ in range(10):
    try:
        late_first[(64,)](x, out, 100000, -100000, BLOCK=256)
    except enceladus.LaunchError as e:
        print(re.search(r"program \\((\\d+),0,0\\), thread (\\d+): .* element index (-?\\d+)", str(e)).groups())
"""


def test_the_lowest_failing_program_is_reported_whichever_thread_fails_first(tmp_path):
    """Every program of the launch reads out of bounds, program 0 last in time, and eight pool threads run them
    side by side: the report names program 0 at its first element, as a sequential run would, at every launch. It
    used to name the program of whichever thread failed first, which depended on how the programs were shared
    among the threads (test_a_tile_partly_out_of_bounds_is_reported_at_its_first_bad_element saw program 1)."""
    import os
    import subprocess
    import sys

    script = tmp_path / "lowest.py"
    script.write_text(LOWEST_FAILING)
    env = {**os.environ, "ENCELADUS_CPU_THREADS": "8"}
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    reports = res.stdout.split("\n")[:-1]
    assert reports == ["('0', '0', '-100000')"] * 10
