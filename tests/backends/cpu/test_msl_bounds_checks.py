"""``msl_bounds_checks``: the generated MSL itself checks every device load, store and atomic against the bytes of
the pointer argument it came from, logs a violation to the device log and skips the access (the metal backend's
debug mode). Here the MSL runs on the cpu backend with the cpu backend's own checks turned off
(``ENCELADUS_CHECKS=0``), so every report below comes from the checks compiled into the MSL."""

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from enceladus.runtime.devicelog import DeviceBoundsError
from enceladus.runtime.launch import launch
from paths import needs_cpu

pytestmark = needs_cpu


@pytest.fixture(autouse=True)
def cpu_checks_off(monkeypatch):
    monkeypatch.setenv("ENCELADUS_BACKEND", "cpu")
    monkeypatch.setenv("ENCELADUS_CHECKS", "0")


def run(kernel, signature, constexprs, grid, *args, **options):
    """Compile ``kernel`` with the MSL bounds checks and launch it once on ``args`` (in parameter order)."""
    ck = enceladus.compile(kernel, signature=signature, constexprs=constexprs, msl_bounds_checks=True, **options)
    names = [n for n in kernel.param_names if n not in constexprs]
    launch(ck, grid, dict(zip(names, args)))
    return ck


@enceladus.jit
def shifted_copy(x_ptr, out_ptr, n, shift, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    vals = tl.load(x_ptr + offs + shift, mask=mask, other=-1.0)
    tl.store(out_ptr + offs, vals, mask=mask)


@enceladus.jit
def shifted_store(x_ptr, out_ptr, shift, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs + shift, tl.load(x_ptr + offs))


@enceladus.jit
def atomic_count(c_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(c_ptr + offs * 2, 1)


@enceladus.jit
def vec_copy(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2.0)


COPY_SIG = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "shift": "i32"}


@pytest.mark.parametrize("shift", [1, 100_000, -1, -100_000])
def test_reads_out_of_bounds_are_reported_and_skipped(shift):
    x = np.arange(256, dtype=np.float32)
    out = np.zeros(256, np.float32)
    first = max(256 - shift, 0) if shift > 0 else 0  # the first element whose read leaves x
    element = first + shift
    with pytest.raises(DeviceBoundsError, match=rf"kernel 'shifted_copy', program \(\d,0,0\), thread \d+: "
                                                rf"out-of-bounds read of 4 bytes through argument 'x_ptr' at element "
                                                rf"index {element} \('x_ptr' has 256 elements\); found by the MSL's "
                                                rf"bounds checks(.|\n)*at line \d+ of .*test_msl_bounds_checks.py: "
                                                rf"vals = tl.load\(x_ptr \+ offs \+ shift"):
        run(shifted_copy, COPY_SIG, {"BLOCK": 128}, (2, 1, 1), x, out, 256, shift)
    idx = np.arange(256) + shift
    expected = np.where((idx >= 0) & (idx < 256), x[np.clip(idx, 0, 255)], -1.0)  # skipped reads yield `other`
    np.testing.assert_array_equal(out, expected)


def test_in_bounds_and_masked_off_lanes_are_silent():
    x = np.arange(200, dtype=np.float32)  # 200 elements, 256 lanes: the last 56 are masked off
    out = np.zeros(200, np.float32)
    ck = run(shifted_copy, COPY_SIG, {"BLOCK": 128}, (2, 1, 1), x, out, 200, 0)
    np.testing.assert_array_equal(out, x)
    assert "enc_inb(" in ck.asm["msl"]  # the accesses are checked, and nothing was reported
    out[:] = 0
    run(shifted_copy, COPY_SIG, {"BLOCK": 128}, (2, 1, 1), x, out, 199, 1)  # reads x[1..199]: in bounds
    np.testing.assert_array_equal(out[:199], x[1:])
    assert out[199] == 0


@pytest.mark.parametrize("shift", [3, -2])
def test_writes_out_of_bounds_are_reported_and_skipped(shift):
    x = np.arange(64, dtype=np.float32) + 1
    backing = np.zeros(64 + 16, np.float32)
    out = backing[8:72]  # the 8 elements on each side belong to no argument
    with pytest.raises(DeviceBoundsError, match=rf"out-of-bounds write of 4 bytes through argument 'out_ptr' at "
                                                rf"element index {64 if shift > 0 else -2} \('out_ptr' has 64 elements"
                                                rf"\)(.|\n)*line \d+ .*tl.store\(out_ptr \+ offs \+ shift"):
        run(shifted_store, {"x_ptr": "*fp32", "out_ptr": "*fp32", "shift": "i32"}, {"BLOCK": 64}, (1, 1, 1),
            x, out, shift)
    expected = np.zeros(64, np.float32)
    dst = np.arange(64) + shift
    ok = (dst >= 0) & (dst < 64)
    expected[dst[ok]] = x[ok]
    np.testing.assert_array_equal(out, expected)
    assert not backing[:8].any() and not backing[72:].any()  # the skipped writes left the neighbours untouched


def test_atomics_out_of_bounds_are_reported_and_skipped():
    backing = np.zeros(64 + 128, np.int32)
    c = backing[:64]
    with pytest.raises(DeviceBoundsError, match=r"kernel 'atomic_count', program \(0,0,0\), thread \d+: "
                                                r"out-of-bounds atomic of 4 bytes through argument 'c_ptr' at element "
                                                r"index 64 \('c_ptr' has 64 elements\)(.|\n)*tl.atomic_add"):
        run(atomic_count, {"c_ptr": "*i32"}, {"BLOCK": 64}, (1, 1, 1), c)
    expected = np.zeros(64, np.int32)
    expected[0:64:2] = 1
    np.testing.assert_array_equal(c, expected)
    assert not backing[64:].any()


def test_vector_accesses_are_checked_as_a_whole():
    x = np.arange(256, dtype=np.float32)[:62]  # 16-byte aligned; the run of 4 at element 60 crosses the end
    out = np.zeros(128, np.float32)  # 32 threads of 4 elements each: thread 15 holds elements 60..63
    with pytest.raises(DeviceBoundsError, match=r"kernel 'vec_copy', program \(0,0,0\), thread 15: out-of-bounds "
                                                r"read of 16 bytes through argument 'x_ptr' at element index 60 "
                                                r"\('x_ptr' has 62 elements\)"):
        ck = run(vec_copy, {"x_ptr": "*fp32:16", "out_ptr": "*fp32:16"}, {"BLOCK": 128}, (1, 1, 1), x, out,
                 num_warps=1)
    expected = np.zeros(128, np.float32)
    expected[:60] = x[:60] * 2  # each skipped 16-byte read yields zeros
    np.testing.assert_array_equal(out, expected)
    ck = enceladus.compile(vec_copy, signature={"x_ptr": "*fp32:16", "out_ptr": "*fp32:16"}, constexprs={"BLOCK": 128},
                           num_warps=1, msl_bounds_checks=True)
    assert "16ul" in ck.asm["msl"]  # the check covers the whole vector


def test_option_off_leaves_the_msl_unchanged():
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "shift": "i32"}
    plain = enceladus.compile(shifted_copy, signature=sig, constexprs={"BLOCK": 128})
    checked = enceladus.compile(shifted_copy, signature=sig, constexprs={"BLOCK": 128}, msl_bounds_checks=True)
    assert "enc_inb" not in plain.asm["msl"] and "enc_ext" not in plain.asm["msl"]
    assert [p.name for p in checked.abi.buffer_params] == ["x_ptr", "out_ptr", "__enc_log", "__enc_extents"]
    with pytest.raises(TypeError, match="msl_bounds_checks"):
        enceladus.compile(shifted_copy, signature=sig, constexprs={"BLOCK": 128}, msl_bounds_checks=1)


@enceladus.jit
def masked_vec_copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=7.0), mask=mask)


@pytest.mark.parametrize("size, n", [(61, 61), (58, 61)])
def test_masked_vector_runs(size, n):
    """n = 61 is not a multiple of 4: runs where the mask is true throughout are 16-byte accesses, the ragged run
    is element by element; masked-off lanes are never checked, a vector that leaves x is reported as a whole."""
    x = np.arange(128, dtype=np.float32)[:size]
    out = np.zeros(128, np.float32)
    sig = {"x_ptr": "*fp32:16", "out_ptr": "*fp32:16", "n": "i32"}
    if size >= n:
        run(masked_vec_copy, sig, {"BLOCK": 128}, (1, 1, 1), x, out, n, num_warps=1)
        expected = np.zeros(128, np.float32)
        expected[:n] = x[:n]
    else:
        with pytest.raises(DeviceBoundsError, match=r"thread 14: out-of-bounds read of 16 bytes through argument "
                                                    r"'x_ptr' at element index 56 \('x_ptr' has 58 elements\)"):
            run(masked_vec_copy, sig, {"BLOCK": 128}, (1, 1, 1), x, out, n, num_warps=1)
        expected = np.zeros(128, np.float32)
        expected[:56] = x[:56]
        expected[56:60] = 7.0  # the skipped vector read yields `other`
        expected[60] = 7.0  # element 60 (the ragged run, checked element by element) is outside x as well
    np.testing.assert_array_equal(out, expected)


@enceladus.jit
def scalar_ops(c_ptr, out_ptr, i):
    tl.atomic_add(c_ptr + i, 5)  # one atomic per program, on thread 0
    tl.store(out_ptr + i, 7)  # a scalar store: thread 0


@pytest.mark.parametrize("i", [4, -1])
def test_scalar_atomics_and_stores(i):
    backing = np.zeros(16, np.int32)
    c, out = backing[4:8], np.zeros(4, np.int32)
    sig = {"c_ptr": "*i32", "out_ptr": "*i32", "i": "i32"}
    with pytest.raises(DeviceBoundsError, match=rf"kernel 'scalar_ops', program \(0,0,0\), thread 0: out-of-bounds "
                                                rf"atomic of 4 bytes through argument 'c_ptr' at element index {i} "
                                                rf"\('c_ptr' has 4 elements\)(.|\n)*tl.atomic_add\(c_ptr \+ i, 5\)"):
        run(scalar_ops, sig, {}, (1, 1, 1), c, out, i)
    assert not backing.any() and not out.any()  # the atomic and the store (also reported) were skipped
    run(scalar_ops, sig, {}, (2, 1, 1), c, out, 2)
    np.testing.assert_array_equal(c, [0, 0, 10, 0])
    np.testing.assert_array_equal(out, [0, 0, 7, 0])
