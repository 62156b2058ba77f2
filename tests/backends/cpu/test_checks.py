"""The cpu backend's default access checks: every device and threadgroup access is checked against the
exact extent of its argument, and a violation names kernel, program, thread, argument, element and line."""

import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from enceladus.backends.cpu import CpuBackend, KernelLaunchError
from enceladus.backends.cpu.errors import KernelTimeoutError

SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void read_at(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                    constant int& off [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    out[i] = x[int(i) + off];
}
kernel void write_at(device float* out [[buffer(0)]], constant int& off [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
    out[int(i) + off] = 1.0f;
}
kernel void atomic_at(device atomic_int* c [[buffer(0)]], constant int& off [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) {
    atomic_fetch_add_explicit(c + (int(i) + off), 1, memory_order_relaxed);
}
kernel void vec_copy(device const float4* x [[buffer(0)]], device float4* out [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
    out[i] = x[i] * 2.0f;
}
kernel void vec_cast(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
    *((device float4*)(out + 4 * i)) = *((device const float4*)(x + 4 * i));
}
kernel void tg_overrun(device float* out [[buffer(0)]], constant int& n [[buffer(1)]],
                       uint t [[thread_index_in_threadgroup]]) {
    threadgroup float tile[32];
    tile[t] = float(t);
    out[t] = tile[(int(t) + n) % 64];
}
kernel void tg_param(device float* out [[buffer(0)]], threadgroup float* tile [[threadgroup(0)]],
                     uint t [[thread_index_in_threadgroup]]) {
    tile[t] = float(t);
    out[t] = tile[t];
}
kernel void spin(device atomic_int* flag [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    while (atomic_load_explicit(flag, memory_order_relaxed) == 0) {}
}
kernel void scale(device float* out [[buffer(0)]], constant float& s [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
    out[i] = s;
}
"""


@pytest.fixture(scope="module")
def lib():
    return enceladus.compile_shader(SRC)


@pytest.mark.parametrize("off", [1, 100_000, -1, -100_000])
def test_reads_near_and_far_on_both_sides(lib, off):
    x = np.arange(64, dtype=np.float32)
    out = np.full(64, -1, np.float32)
    first_bad = max(64 - off, 0) if off > 0 else 0  # the first thread whose read leaves x
    with pytest.raises(KernelLaunchError, match=rf"kernel 'read_at', program \(\d+,0,0\), thread {first_bad}: "
                                                rf"out-of-bounds read of 4 bytes through argument 'x' at element "
                                                rf"index {first_bad + off}\b.*'x' has 64 elements"):
        lib.read_at(x, out, off, threads=(64,), threads_per_threadgroup=(64,))
    assert (out[first_bad:] == -1).all()  # the failing thread and every later one did not run
    lib.read_at(x, out, 0, threads=(64,))  # the process is usable
    np.testing.assert_array_equal(out, x)


@pytest.mark.parametrize("off", [64, 1 << 20, -4])
def test_writes_are_checked(lib, off):
    guard = np.zeros(256, np.float32)
    out = guard[64:128]  # neighbours on both sides: a wild write would change them
    with pytest.raises(KernelLaunchError, match=r"kernel 'write_at'.*out-of-bounds access of 4 bytes through "
                                                r"argument 'out'"):
        lib.write_at(out, off, threads=(64,))
    assert (guard[:64] == 0).all() and (guard[128:] == 0).all()


def test_atomics_are_checked(lib):
    c = np.zeros(8, np.int32)
    with pytest.raises(KernelLaunchError, match=r"out-of-bounds atomic of 4 bytes through argument 'c' at element "
                                                r"index 8"):
        lib.atomic_at(c, 1, threads=(8,))
    lib.atomic_at(c, 0, threads=(8,))
    assert c.sum() == 8 + 7  # the first launch added 1 to elements 1..7 before thread 7 failed


def test_vector_accesses_are_checked(lib):
    x = np.arange(32, dtype=np.float32)
    out = np.zeros(32, np.float32)
    with pytest.raises(KernelLaunchError, match=r"out-of-bounds read of 16 bytes through argument 'x' at element "
                                                r"index 32 "):  # elements of the array (float32)
        lib.vec_copy(x, out, threads=(9,))
    with pytest.raises(KernelLaunchError, match=r"kernel 'vec_cast'.*16 bytes through argument 'x'"):
        lib.vec_cast(x[:30], out, threads=(8,))  # the last float4 reaches 2 floats past x[:30]
    lib.vec_cast(x, out, threads=(8,))
    np.testing.assert_array_equal(out, x)


def test_misaligned_vector_access_is_reported(lib):
    buf = np.arange(40, dtype=np.float32)
    x = buf[1:33]  # 4-byte aligned: fine for floats, not for float4
    assert x.ctypes.data % 16 != 0
    with pytest.raises(KernelLaunchError, match=r"misaligned 16-byte read through argument 'x' at element index 0.*"
                                                r"multiple of 16"):
        lib.vec_cast(x, np.zeros(32, np.float32), threads=(8,))


def test_strided_views_only_their_elements(lib):
    base = np.zeros(128, np.float32)
    out = base[::2]  # 64 elements with gaps between them
    lib.write_at(out[:1], 0, threads=(1,))
    assert base[0] == 1 and (base[1:] == 0).all()
    assert (base[1::2] == 0).all()
    with pytest.raises(KernelLaunchError, match=r"write_at.*out-of-bounds access of 4 bytes through argument 'out' "
                                                r"at byte offset 4 from its element 0: the bytes lie between the "
                                                r"elements of the strided view"):
        lib.write_at(out, 0, threads=(64,))  # a kernel that indexes the view as if it were contiguous


def test_writable_stride_zero_view(lib):
    cell = np.zeros(4, np.float32)
    view = np.lib.stride_tricks.as_strided(cell, shape=(1000,), strides=(0,), writeable=True)
    with pytest.raises(KernelLaunchError, match=r"out-of-bounds read of 16 bytes through argument 'x' at element "
                                                r"index 0"):
        lib.vec_cast(view, np.zeros(1000, np.float32), threads=(250,))  # 4,000 bytes through one element
    lib.write_at(view, 0, threads=(1,))  # element 0 is fine
    assert cell[0] == 1 and (cell[1:] == 0).all()
    with pytest.raises(KernelLaunchError, match=r"write_at.*element index 1\b"):
        lib.write_at(view, 0, threads=(1000,))


def test_threadgroup_memory_against_its_declared_size(lib):
    out = np.zeros(32, np.float32)
    lib.tg_overrun(out, 0, threads=(32,), threads_per_threadgroup=(32,))
    with pytest.raises(KernelLaunchError, match=r"tg_overrun.*out-of-bounds access of 4 bytes through threadgroup "
                                                r"variable 'tile' at element index 32.*128 bytes of threadgroup"):
        lib.tg_overrun(out, 1, threads=(32,), threads_per_threadgroup=(32,))
    lib.tg_param(out, threads=(32,), threads_per_threadgroup=(32,), threadgroup_memory={0: 128})
    with pytest.raises(KernelLaunchError, match=r"tg_param.*threadgroup parameter 'tile' at element index 16"):
        lib.tg_param(out, threads=(32,), threads_per_threadgroup=(32,), threadgroup_memory={0: 64})


def test_opt_out_builds_without_checks():
    lib = CpuBackend().compile(SRC, checked=False)
    assert not lib.checked and "cptr" not in lib.cpp
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    lib.function("read_at").launch((1,), (64,), {0: x.ctypes.data, 1: out.ctypes.data,
                                                 2: np.array([0], np.int32).ctypes.data})
    np.testing.assert_array_equal(out, x)


@pytest.mark.parametrize("value, match", [
    (np.array([5.0]), r"'s', constant float&\) is a reference to float but the array has dtype float64"),
    (np.zeros(0, np.float32), r"'s', constant float&\) is a reference to float \(1 element\(s\) of float32\) but "
                              r"the array has 0"),
])
def test_constant_reference_arrays_are_checked(lib, value, match):
    with pytest.raises((TypeError, ValueError), match=match):
        lib.scale(np.zeros(4, np.float32), value, threads=(4,))


def test_constant_reference_checked_in_the_kernel_too():
    fn = CpuBackend().compile(SRC).function("scale")
    out = np.zeros(4, np.float32)
    two = np.zeros(2, np.uint8)
    with pytest.raises(KernelLaunchError, match=r"parameter 's' is a reference to float \(4 bytes\), but the "
                                                r"argument bound to it has 2 bytes"):
        fn.launch((1,), (4,), {0: out.ctypes.data, 1: two.ctypes.data}, buffer_sizes={0: 16, 1: 2})


@enceladus.jit
def shifted_copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    vals = tl.load(x_ptr + offs + 1, mask=offs < n)  # line to report
    tl.store(out_ptr + offs, vals, mask=offs < n)


@enceladus.jit
def atomic_count(c_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(c_ptr + offs * 2, 1)


@enceladus.jit
def vec_copy_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


def test_generated_kernels_name_the_python_line():
    x = np.arange(256, dtype=np.float32)
    out = np.zeros(256, np.float32)
    with pytest.raises(enceladus.LaunchError, match=r"kernel 'shifted_copy', program \(1,0,0\), thread \d+: "
                                                    r"out-of-bounds read of 4 bytes through argument 'x_ptr' at "
                                                    r"element index 256(.|\n)*at line \d+ of .*test_checks.py: vals = "
                                                    r"tl.load\(x_ptr \+ offs \+ 1"):
        shifted_copy[(2,)](x, out, 256, BLOCK=128)
    shifted_copy[(2,)](x, out, 255, BLOCK=128)
    np.testing.assert_array_equal(out[:255], x[1:])
    t = enceladus.tensor(x)
    to = enceladus.zeros(256, np.float32)
    with pytest.raises(enceladus.LaunchError, match="out-of-bounds read"):
        shifted_copy[(2,)](t, to, 256, BLOCK=128)  # queued on the stream: raised at the synchronization
        enceladus.synchronize()


def test_generated_atomics_and_vectors_are_checked():
    c = np.zeros(64, np.int32)
    with pytest.raises(enceladus.LaunchError, match=r"atomic_count.*out-of-bounds atomic of 4 bytes through "
                                                    r"argument 'c_ptr' at element index 64"):
        atomic_count[(1,)](c, BLOCK=64)
    x = np.arange(256, dtype=np.float32)
    with pytest.raises(enceladus.LaunchError, match=r"vec_copy_kernel', program \(0,0,0\), thread 0: out-of-bounds "
                                                    r"read of 16 bytes through argument 'x_ptr' at element index 128 "):
        vec_copy_kernel[(1,)](x[:62], np.zeros(256, np.float32), BLOCK=256, num_warps=1)


@pytest.fixture
def python_handles_sigint():
    """The tests that press Ctrl-C on themselves need Python's own SIGINT handler. A process started in the
    background by a non-interactive shell (`cmd &`, nohup) inherits SIGINT *ignored* (POSIX), and the runtime
    rightly leaves an ignored SIGINT ignored, so there the launch would never be interrupted (this hung full
    `pytest -n 2` runs started that way)."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


def _interrupt_after(seconds: float) -> threading.Timer:
    timer = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    return timer


def test_ctrl_c_stops_a_spinning_kernel_and_the_process_stays_usable(lib, python_handles_sigint):
    lib.spin(np.ones(1, np.int32), threads=(4,))  # warm: the signal must find the kernel running, not a first load
    flag = np.zeros(1, np.int32)
    # A missed SIGINT must fail this test, not hang the test run: after 20 s the flag lets the kernel finish.
    release = threading.Timer(20.0, flag.__setitem__, (0, 1))
    release.start()
    start = time.monotonic()
    _interrupt_after(0.3)
    try:
        with pytest.raises(KeyboardInterrupt, match="kernel 'spin' was interrupted"):
            lib.spin(flag, threads=(4,))
    finally:
        release.cancel()
    assert flag[0] == 0, "the kernel ran on until the test released it: SIGINT did not stop it"
    assert time.monotonic() - start < 10
    out = np.zeros(4, np.float32)
    lib.scale(out, 3.0, threads=(4,))
    assert (out == 3).all()


def test_ctrl_c_stops_a_huge_grid(lib, python_handles_sigint):
    out = np.zeros(1, np.float32)
    lib.write_at(out, 0, threadgroups=(1, 1, 1), threads_per_threadgroup=(1, 1, 1))  # warm (see above)
    start = time.monotonic()
    _interrupt_after(0.3)
    with pytest.raises(KeyboardInterrupt):
        lib.write_at(out, 0, threadgroups=(1, 2**31 - 1, 1), threads_per_threadgroup=(1, 1, 1))
    assert time.monotonic() - start < 10


def test_timeout_names_the_kernel(lib, monkeypatch):
    flag = np.zeros(1, np.int32)
    with pytest.raises(KernelTimeoutError, match=r"kernel 'spin' ran past its timeout of 0.2 s"):
        lib.spin(flag, threads=(2,), timeout=0.2)
    monkeypatch.setenv("ENCELADUS_TIMEOUT", "0.2")
    fresh = enceladus.compile_shader(SRC)
    with pytest.raises(KernelTimeoutError, match="kernel 'spin'"):
        fresh.spin(flag, threads=(2,))


def test_process_exits_after_a_launch_with_a_timeout():
    """A launch with a timeout starts the runtime's watchdog thread; the process must still exit (it hung in exit()
    when the watchdog's condition variable was destroyed while the thread waited on it)."""
    code = (
        "import numpy as np, enceladus\n"
        f"lib = enceladus.compile_shader({SRC!r})\n"
        "flag = np.ones(1, np.int32)\n"
        "lib.spin(flag, threads=(2,), timeout=5.0)\n"
        "print('launched')\n"
    )
    env = {**os.environ, "ENCELADUS_BACKEND": "cpu"}
    try:
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail("the process did not exit after a launch with a timeout (hung at exit)")
    assert res.returncode == 0 and "launched" in res.stdout, res.stderr


@enceladus.jit
def forever(x_ptr, n):
    i = 0
    while tl.load(x_ptr) == 0:
        i += 1
    tl.store(x_ptr + 1, i)


def test_jit_launch_timeout_and_interrupt(python_handles_sigint):
    x = np.zeros(2, np.int32)
    with pytest.raises(KernelTimeoutError, match="kernel 'forever'"):
        forever[(1,)](x, 1, timeout=0.2)
    _interrupt_after(0.3)
    with pytest.raises(KeyboardInterrupt):
        forever[(1,)](x, 1)
    x[0] = 1
    forever[(1,)](x, 1)
    assert x[1] == 0


@pytest.mark.parametrize("grid", [(1, 2**32, 1), (1, 1, -1), (2**32, 1, 1)])
def test_grid_limits_on_every_axis(grid):
    x = np.zeros(2, np.int32)
    with pytest.raises((ValueError, enceladus.LaunchError)):
        forever[grid](x, 1)


def test_barrier_reports_name_the_kernel_lines():
    """A deadlock report of the cpu runtime names MSL lines; the launcher adds the kernel line each comes from
    (the closest mapped MSL line before it: a barrier belongs to the op the compiler emitted it for)."""
    import enceladus.language as tl
    from enceladus.runtime.launch import LineTable

    @enceladus.jit
    def row_sums(x_ptr, out_ptr, N: tl.constexpr):
        x = tl.load(x_ptr + tl.arange(0, N))
        s = tl.sum(x, axis=0)  # the reduction's barriers come from this line
        tl.store(out_ptr, s)

    kernel = row_sums.warmup(np.zeros(256, np.float32), np.zeros(1, np.float32), N=256, grid=(1,))
    msl = kernel.asm["msl"].splitlines()
    barrier = next(i + 1 for i, text in enumerate(msl) if "threadgroup_barrier" in text)
    table = LineTable(kernel)
    message = (f"kernel 'row_sums': threadgroup (0,0,0) deadlocks: threadgroup_barrier at line {barrier} is reached by "
               f"1 of 128 running threads while thread 1 waits at threadgroup_barrier at line {barrier}")
    annotated = table.annotate(message)
    assert annotated.count(f"at MSL line {barrier} (from line ") == 2, annotated
    assert "s = tl.sum(x, axis=0)" in annotated, annotated


MATRIX_TILES = """
#include <metal_stdlib>
using namespace metal;
// an 8x8 tile copied through a simdgroup matrix (x and out have 8 columns); rv.x is a row, rv.y the mode: 0 loads
// the tile of x at that row, 1 the tile of a threadgroup copy of x at that row, 2 stores into out at that row
kernel void tile(device const float* x [[buffer(0)]], device float* out [[buffer(1)]], constant uint2& rv [[buffer(2)]],
                 ushort lane [[thread_index_in_simdgroup]]) {
    threadgroup float t[64];
    simdgroup_float8x8 m;
    const ulong load_row = rv.y == 2 ? 0 : rv.x;
    if (rv.y == 1) {
        for (uint i = lane; i < 64; i += 32) t[i] = x[i];
        simdgroup_barrier(mem_flags::mem_threadgroup);
        simdgroup_load(m, t, 8, ulong2(0, load_row));
    } else {
        simdgroup_load(m, x, 8, ulong2(0, load_row));
    }
    simdgroup_store(m, out, 8, ulong2(0, rv.y == 2 ? rv.x : 0));
}
"""


@pytest.mark.parametrize("row, via, match", [
    (1, 0, r"out-of-bounds read of 4 bytes through argument 'x' at element index 71\b.*'x' has 64 elements"),
    (3, 1, r"out-of-bounds read of 4 bytes through threadgroup variable 't' at element index 87\b"),
    (1, 2, r"out-of-bounds write of 4 bytes through argument 'out' at element index 71\b"),
])
def test_simdgroup_matrix_tiles_are_checked(row, via, match):
    """simdgroup_load and simdgroup_store check the 8x8 tile as one extent (matrix.h's checked overloads); a tile
    that reaches past its memory is reported at its last element, in device and in threadgroup memory."""
    lib = enceladus.compile_shader(MATRIX_TILES)
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    lib.tile(x, out, np.array([0, via], np.uint32), threads=(32,), threads_per_threadgroup=(32,))
    np.testing.assert_array_equal(out, x)  # the tile at row 0 is in bounds
    with pytest.raises(KernelLaunchError, match=r"kernel 'tile'.*" + match):
        lib.tile(x, out, np.array([row, via], np.uint32), threads=(32,), threads_per_threadgroup=(32,))


@pytest.mark.parametrize("shift, index", [(1, -1), (-32, 32), (1 << 20, -(1 << 20))])
def test_threadgroup_array_indices_below_and_past_it(shift, index):
    """A threadgroup array's element index is compared with its size; an index before element 0 or past the end,
    near or far, is reported with the access's element index (checked.h tg_array)."""
    lib = enceladus.compile_shader("""
#include <metal_stdlib>
using namespace metal;
kernel void at(device float* out [[buffer(0)]], constant int& shift [[buffer(1)]], uint t [[thread_index_in_threadgroup]]) {
    threadgroup float tile[32];
    tile[t] = float(t);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[t] = tile[int(t) - shift];
}
""")
    out = np.zeros(32, np.float32)
    lib.at(out, 0, threads=(32,), threads_per_threadgroup=(32,))
    np.testing.assert_array_equal(out, np.arange(32, dtype=np.float32))
    with pytest.raises(KernelLaunchError, match=rf"kernel 'at'.*out-of-bounds access of 4 bytes through threadgroup "
                                                rf"variable 'tile' at element index {index}\b"):
        lib.at(out, shift, threads=(32,), threads_per_threadgroup=(32,))
