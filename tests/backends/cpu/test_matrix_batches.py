"""simdgroup_matrix on the cpu backend without a rendezvous per operation (matrix.h): deferred multiplies are
computed per batch, loads and stores are checked through the SIMD group's log. Each kernel checks against NumPy;
the divergent ones must fail with a message that names the operation and its line."""

from __future__ import annotations

import numpy as np
import pytest

from enceladus.backends.cpu import CpuBackend, KernelLaunchError

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"
RNG = np.random.default_rng(25)


def lane_layout() -> tuple[np.ndarray, np.ndarray]:
    """Row and first column of each lane's two elements (the layout matrix.h documents)."""
    lane = np.arange(32)
    row = 4 * ((lane >> 4) & 1) + 2 * ((lane >> 2) & 1) + ((lane >> 1) & 1)
    col = 4 * ((lane >> 3) & 1) + 2 * (lane & 1)
    return row, col


CHAIN = HEADER + """
// acc = A_0 B_0 + A_1 B_1 + ... over `steps` 8x8 tiles (more multiplies than one batch holds), then one lane
// alone reads the result (thread_elements is per lane: the others do not wait with it), all lanes store it.
kernel void chain(device const T* a [[buffer(0)]], device const T* b [[buffer(1)]], device float* out [[buffer(2)]],
                  device float* lane3 [[buffer(3)]], constant uint& steps [[buffer(4)]],
                  ushort lane [[thread_index_in_simdgroup]]) {
    simdgroup_matrix<D, 8, 8> acc = make_filled_simdgroup_matrix<D, 8, 8>(D(0));
    for (uint s = 0; s < steps; ++s) {
        simdgroup_matrix<T, 8, 8> ma, mb;
        simdgroup_load(ma, a + 64 * s);
        simdgroup_load(mb, b + 64 * s);
        simdgroup_multiply_accumulate(acc, ma, mb, acc);
    }
    if (lane == 3) lane3[0] = float(acc.thread_elements()[1]);
    simdgroup_matrix<D, 8, 8> copy = acc;
    vec<D, 2> e = copy.thread_elements();
    out[2 * lane] = float(e.x);
    out[2 * lane + 1] = float(e.y);
}
"""


@pytest.mark.parametrize("steps", [1, 5, 300])
def test_long_chain_of_multiplies_and_a_single_lane_read(backend: CpuBackend, run, steps: int) -> None:
    a = RNG.integers(-2, 3, (steps, 8, 8)).astype(np.float32)
    b = RNG.integers(-2, 3, (steps, 8, 8)).astype(np.float32)
    out, lane3 = np.zeros(64, np.float32), np.zeros(1, np.float32)
    lib = backend.compile("#define T float\n#define D float\n" + CHAIN)
    run(lib, "chain", (1, 1, 1), (32, 1, 1), a, b, out, lane3, np.array([steps], np.uint32))
    ref = np.einsum("sij,sjk->ik", a, b)  # small integers: exact in float
    row, col = lane_layout()
    np.testing.assert_array_equal(out[0::2], ref[row, col])
    np.testing.assert_array_equal(out[1::2], ref[row, col + 1])
    assert lane3[0] == ref[row[3], col[3] + 1]


def test_half_accumulator_rounds_after_every_multiply(backend: CpuBackend, run) -> None:
    steps = 40
    a = RNG.standard_normal((steps, 8, 8)).astype(np.float16)
    b = RNG.standard_normal((steps, 8, 8)).astype(np.float16)
    out, lane3 = np.zeros(64, np.float32), np.zeros(1, np.float32)
    lib = backend.compile("#define T half\n#define D half\n" + CHAIN)
    run(lib, "chain", (1, 1, 1), (32, 1, 1), a, b, out, lane3, np.array([steps], np.uint32))
    acc = np.zeros((8, 8), np.float16)
    for s in range(steps):  # float products summed in k order, + C, rounded once to half per multiply
        prod = np.zeros((8, 8), np.float32)
        for q in range(8):
            prod = prod + a[s][:, q:q + 1].astype(np.float32) * b[s][q:q + 1, :].astype(np.float32)
        acc = (prod + acc.astype(np.float32)).astype(np.float16)
    row, col = lane_layout()
    np.testing.assert_array_equal(out[0::2], acc[row, col].astype(np.float32))
    np.testing.assert_array_equal(out[1::2], acc[row, col + 1].astype(np.float32))


LANES_DIFFER = HEADER + """
// Operands the 32 lanes deposit in different places: lanes that change their fragment of A after a multiply
// used it (they deposit it again, and from then on their slots differ from the other lanes'), and a lane
// whose C is a value while the other lanes' C is the pending result of the previous multiply. Several
// threadgroups and two SIMD groups: a SIMD group's batch starts empty in every threadgroup.
kernel void differ(device const T* a [[buffer(0)]], device const T* b [[buffer(1)]], device float* out [[buffer(2)]],
                   ushort lane [[thread_index_in_simdgroup]], ushort sg [[simdgroup_index_in_threadgroup]],
                   uint tg [[threadgroup_position_in_grid]]) {
    const uint m = 2 * tg + sg;
    simdgroup_matrix<T, 8, 8> ma, mb;
    simdgroup_load(ma, a + 64 * m);
    simdgroup_load(mb, b + 64 * m);
    simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    simdgroup_multiply_accumulate(acc, ma, mb, acc);
    if (lane % 3 == 1) ma.thread_elements()[0] = T(lane % 5);
    simdgroup_multiply_accumulate(acc, ma, mb, acc);
    simdgroup_multiply_accumulate(acc, mb, ma, acc);
    vec<float, 2>& r = acc.thread_elements();  // every lane waits for the result (a single lane cannot yet)
    if (lane == 2) r[1] += 1.0f;
    simdgroup_multiply_accumulate(acc, mb, mb, acc);
    // lane 0 alone waits for the result (the runtime resumes it first, so the others have not gone further than
    // the next multiply): its C is then a value, the other lanes' the pending result
    if (lane == 0) acc.thread_elements()[1] += 1.0f;
    simdgroup_matrix<T, 8, 8> mc = ma;
    simdgroup_multiply_accumulate(acc, mc, mb, acc);
    vec<float, 2> e = acc.thread_elements();
    out[64 * m + 2 * lane] = e.x;
    out[64 * m + 2 * lane + 1] = e.y;
}
"""


@pytest.mark.parametrize("dtype", ["float", "half"])
def test_lanes_with_operands_in_different_places(backend: CpuBackend, run, dtype: str) -> None:
    groups = 3
    np_t = np.float32 if dtype == "float" else np.float16
    a = RNG.integers(-2, 3, (2 * groups, 8, 8)).astype(np_t)
    b = RNG.integers(-2, 3, (2 * groups, 8, 8)).astype(np_t)
    out = np.zeros((2 * groups, 64), np.float32)
    run(backend.compile(f"#define T {dtype}\n" + LANES_DIFFER), "differ", (groups, 1, 1), (64, 1, 1), a, b, out)
    row, col = lane_layout()
    lanes = np.arange(32)
    for m in range(2 * groups):  # small integers: every product and sum is exact in float
        A, B = a[m].astype(np.float32), b[m].astype(np.float32)
        A1 = A.copy()
        changed = lanes % 3 == 1
        A1[row[changed], col[changed]] = lanes[changed] % 5
        acc = A @ B
        acc = A1 @ B + acc
        acc = B @ A1 + acc
        acc[row[2], col[2] + 1] += 1
        acc = B @ B + acc
        acc[row[0], col[0] + 1] += 1
        acc = A1 @ B + acc
        np.testing.assert_array_equal(out[m][0::2], acc[row, col])
        np.testing.assert_array_equal(out[m][1::2], acc[row, col + 1])


MANY_LOADS = HEADER + """
// More loads and stores than the SIMD group's log holds between two stops, in uniform control flow.
kernel void many(device const float* x [[buffer(0)]], device float* y [[buffer(1)]], constant uint& n [[buffer(2)]]) {
    for (uint s = 0; s < n; ++s) {
        simdgroup_float8x8 m;
        simdgroup_load(m, x + 64 * s);
        simdgroup_store(m, y + 64 * s, 8, ulong2(0), true);
    }
}
"""


def test_more_loads_and_stores_than_the_log_holds(backend: CpuBackend, run) -> None:
    n = 300
    x = RNG.standard_normal((n, 8, 8)).astype(np.float32)
    y = np.zeros_like(x)
    run(backend.compile(MANY_LOADS), "many", (1, 1, 1), (64, 1, 1), x, y, np.array([n], np.uint32))
    np.testing.assert_array_equal(y, x.transpose(0, 2, 1))


DIVERGENT_MMA = HEADER + """
kernel void bad(device float* x [[buffer(0)]], ushort lane [[thread_index_in_simdgroup]]) {
    simdgroup_float8x8 a = make_filled_simdgroup_matrix<float, 8, 8>(1.0f), d;
    if (lane < 16) simdgroup_multiply(d, a, a);
    x[lane] = 0.0f;
}
"""

DIVERGENT_READ = HEADER + """
kernel void bad_read(device float* x [[buffer(0)]], ushort lane [[thread_index_in_simdgroup]]) {
    simdgroup_float8x8 a = make_filled_simdgroup_matrix<float, 8, 8>(1.0f), d;
    if (lane < 16) {
        simdgroup_multiply(d, a, a);
        x[lane] = d.thread_elements()[0];
    }
}
"""

MISMATCHED_LOADS = HEADER + """
kernel void bad_loads(device float* x [[buffer(0)]], ushort lane [[thread_index_in_simdgroup]]) {
    simdgroup_float8x8 m;
    if (lane < 16) simdgroup_load(m, x);
    else simdgroup_load(m, x + 64);
    x[lane] = 0.0f;
}
"""


@pytest.mark.parametrize(
    "src, name, pattern",
    [
        (DIVERGENT_MMA, "bad", r"kernel 'bad': simdgroup_multiply_accumulate \(line 6\) executed by lanes 0x0000ffff"
                               r".*but not by lanes 0xffff0000.*uniform control flow"),
        (DIVERGENT_READ, "bad_read", r"kernel 'bad_read'.*simdgroup_multiply_accumulate \(line 7\).*uniform control flow"),
        (MISMATCHED_LOADS, "bad_loads", r"lane 16 executes simdgroup_load \(line 7\) where lanes 0x0000ffff of its "
                                        r"SIMD group executed simdgroup_load \(line 6\).*uniform control flow"),
    ],
)
def test_divergent_simdgroup_matrix_operations_fail(backend: CpuBackend, run, src: str, name: str,
                                                    pattern: str) -> None:
    with pytest.raises(KernelLaunchError, match=pattern):
        run(backend.compile(src), name, (1, 1, 1), (32, 1, 1), np.zeros(128, np.float32))


GROUP_LOOP = HEADER + """
// No barrier or SIMD-group call: a threadgroup runs as one loop inside the kernel library.
kernel void builtins(device uint4* out [[buffer(0)]], device float* x [[buffer(1)]],
                     uint3 tpig [[thread_position_in_grid]], uint3 tpitg [[thread_position_in_threadgroup]],
                     uint tiitg [[thread_index_in_threadgroup]], ushort lane [[thread_index_in_simdgroup]],
                     ushort sg [[simdgroup_index_in_threadgroup]], uint3 grid [[threads_per_grid]]) {
    uint i = tpig.x + grid.x * (tpig.y + grid.y * tpig.z);
    out[i] = uint4(tpitg.x + 100 * tpitg.y + 10000 * tpitg.z, tiitg, lane, sg);
    x[i] += 1.0f;
}
"""


def test_group_loop_gives_every_thread_its_builtins(backend: CpuBackend, run) -> None:
    groups, tptg = (3, 2, 2), (8, 5, 3)
    gx, gy, gz = (g * t for g, t in zip(groups, tptg))
    out = np.zeros((gz, gy, gx, 4), np.uint32)
    x = np.zeros((gz, gy, gx), np.float32)
    run(backend.compile(GROUP_LOOP), "builtins", groups, tptg, out, x)
    z, y, xx = np.meshgrid(np.arange(gz), np.arange(gy), np.arange(gx), indexing="ij")
    px, py, pz = xx % tptg[0], y % tptg[1], z % tptg[2]
    tiitg = px + tptg[0] * (py + tptg[1] * pz)
    np.testing.assert_array_equal(out[..., 0], px + 100 * py + 10000 * pz)
    np.testing.assert_array_equal(out[..., 1], tiitg)
    np.testing.assert_array_equal(out[..., 2], tiitg % 32)
    np.testing.assert_array_equal(out[..., 3], tiitg // 32)
    np.testing.assert_array_equal(x, 1.0)


OOB = HEADER + """
kernel void oob(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    x[i == 37 ? 1000 : i] = 1.0f;
}
"""


def test_group_loop_reports_the_failing_thread(backend: CpuBackend, run) -> None:
    x = np.zeros(128, np.float32)
    with pytest.raises(KernelLaunchError, match=r"program \(0,0,0\), thread 37\b"):
        run(backend.compile(OOB), "oob", (2, 1, 1), (64, 1, 1), x, buffer_sizes={0: x.nbytes})


def test_fiber_launchers_look_up_the_simd_group_state_once() -> None:
    """A file that uses simdgroup_matrix: each fiber launcher looks up its SIMD group's state (matrix.h sgm_get)
    before the kernel, so the compiler merges every lookup inlined into the kernel with that one (in loops too);
    other files, and kernels that run as one loop per threadgroup, do not look it up."""
    from enceladus.backends.cpu.signature import parse_kernels
    from enceladus.backends.cpu.translate import translation_unit

    lookup = "::metal::__enc::sgm_get();"
    matrix = CHAIN.replace("T", "half").replace("D", "float")
    cpp = translation_unit(matrix, parse_kernels(matrix))
    launcher = cpp[cpp.index("void enceladus_thread_chain("):]
    assert launcher.count(lookup) == 1 and launcher.index(lookup) < launcher.index("  chain(")
    barrier = HEADER + """kernel void b(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    threadgroup_barrier(mem_flags::mem_threadgroup);
    x[i] = 1.0f;
}"""
    plain = HEADER + "kernel void p(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = 1; }"
    for src in (barrier, plain):
        assert lookup not in translation_unit(src, parse_kernels(src))
