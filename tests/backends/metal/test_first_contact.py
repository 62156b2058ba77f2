"""First contact with a Mac (MSL_AUDIT B4, D5, D8 and the probes), checked through the metal backend's host code on
the recording stand-in for libobjc: our decisions and call sequences, not Metal's behaviour."""

from __future__ import annotations

import numpy as np
import pytest

import enceladus
from enceladus.backends.metal import MetalBackend
from enceladus.runtime.backend import use_backend

from .kernels import add_kernel
from .objc_recorder import RecordingObjCRuntime


def test_generated_kernels_state_their_threadgroup_and_simd_builtins():
    msl = add_kernel.warmup(np.zeros(8, np.float32), np.zeros(8, np.float32), np.zeros(8, np.float32), 8,
                            BLOCK=256, grid=(1,)).asm["msl"]
    assert "[[max_total_threads_per_threadgroup(128)]]\nkernel void add_kernel(" in msl
    assert "uint enc_lane [[thread_index_in_simdgroup]]" in msl
    assert "uint enc_warp [[simdgroup_index_in_threadgroup]]" in msl
    assert "% 32u" not in msl
    # both signature parsers (the neutral one and the cpu backend's) accept the attributes
    from enceladus.backends.cpu.signature import parse_kernels as cpu_parse
    from enceladus.compiler.msl_signature import parse_kernels

    for parse in (parse_kernels, cpu_parse):
        attrs = [p.attribute for p in parse(msl)["add_kernel"].params]
        assert "thread_index_in_simdgroup" in attrs and "simdgroup_index_in_threadgroup" in attrs


def test_a_simd_width_other_than_32_is_refused_at_pipeline_creation(cpu):
    rec = RecordingObjCRuntime(cpu_backend=cpu, execution_width=64)
    metal = MetalBackend(runtime=rec, macos=15)
    x = np.arange(8, dtype=np.float32)
    with use_backend(metal), pytest.raises(enceladus.CompilationError, match="threadExecutionWidth") as info:
        add_kernel[(1,)](x, x, np.zeros_like(x), 8, BLOCK=256)
    assert "doctor --probe" in info.value.fix
    # the refused pipeline was released (the probe kernels' pipelines stay cached in the backend)
    assert [o.data["name"] for o in rec.live("MTLComputePipelineState") if o.data["name"] == "add_kernel"] == []
    # a hand-written kernel that does not use the generated lane builtins is not refused
    lib = metal.compile("kernel void k(device float* p [[buffer(0)]], uint i [[thread_position_in_grid]]) "
                        "{ p[i] = 1.0f; }")
    assert lib.function("k").thread_execution_width == 64
    assert rec.violations == []


def test_a_long_loop_of_launches_leaves_nothing_autoreleased_or_retained(metal, recorder):
    # MSL_AUDIT D8: every call after which Metal may autorelease runs inside a pool we push (the stand-in puts an
    # object of its own in the innermost pool after those calls and lists the calls made with no pool)
    host = np.ones(256, np.float32)
    with use_backend(metal):
        x = enceladus.tensor(np.arange(256, dtype=np.float32))
        out = enceladus.zeros(256)
        add_kernel[(1,)](x, x, out, 256, BLOCK=256)  # compile and warm up
        host_out = np.zeros(256, np.float32)
        add_kernel[(1,)](host, host, host_out, 256, BLOCK=256)
        enceladus.synchronize()
        live_before = len(recorder.live())
        retains = recorder.selectors_sent().count("retain")
        releases = recorder.selectors_sent().count("release")
        for i in range(300):  # asynchronous launches (batched command buffers) and synchronous NumPy launches
            add_kernel[(1,)](x, x, out, 256, BLOCK=256)
            if i % 10 == 0:
                add_kernel[(1,)](host, host, host_out, 256, BLOCK=256)
        enceladus.synchronize()
        result = out.numpy()
    assert recorder.unpooled == []
    assert len(recorder.live()) == live_before  # every object made in the loop was released
    sent = recorder.selectors_sent()
    assert sent.count("retain") - retains > 0  # command buffers and encoders were retained ...
    assert sent.count("retain") - retains <= sent.count("release") - releases  # ... and released again
    np.testing.assert_array_equal(result, 2 * np.arange(256, dtype=np.float32))
    np.testing.assert_array_equal(host_out, 2.0)


def test_the_metal_host_path_takes_the_probes_fallbacks_of_a_wrong_twin():
    # the stand-in executes on a cpu twin built with another lane mapping and a matmul2d refusing 8x8 tiles
    from enceladus.backends.cpu import CpuBackend
    from enceladus.runtime import probes

    from .kernels import dot_kernel

    twin = CpuBackend(defines=("ENC_TEST_PERMUTED_FRAGMENT_LANES", "ENC_TEST_MATMUL2D_REJECTS_8X8"))
    rec = RecordingObjCRuntime(cpu_backend=twin, msl_versions=(0x30002, 0x40000), families=(1007, 1010, 5002),
                               device_name="stand-in with a wrong twin", compile_check=True)
    metal = MetalBackend(runtime=rec, macos=26)
    rng = np.random.default_rng(3)
    with use_backend(metal):
        with pytest.warns(RuntimeWarning, match="lane mapping differs"):
            a = rng.integers(-4, 5, (32, 32)).astype(np.float16)
            c = np.zeros((32, 32), np.float32)
            ck = dot_kernel[(1,)](a, a, c, M=32, N=32, K=32, dot_backend="simdgroup")
        np.testing.assert_array_equal(c, a.astype(np.float32) @ a.astype(np.float32))
        assert "simdgroup_store" in ck.asm["msl"]
        a8 = rng.integers(-4, 5, (8, 32)).astype(np.float16)
        b8 = rng.integers(-4, 5, (32, 8)).astype(np.float16)
        c8 = np.zeros((8, 8), np.float32)
        ck = dot_kernel[(1,)](a8, b8, c8, M=8, N=8, K=32, num_warps=1, dot_backend="matmul2d")
        np.testing.assert_array_equal(c8, a8.astype(np.float32) @ b8.astype(np.float32))
        assert "8x8 tiles are not supported" in ck.explain() and not ck.metadata["uses_tensor_ops"]
        text = probes.report(metal)
    assert "MSL chosen: 4.0" in text and "[FAILED] D4     fragment_lanes" in text
    assert "fallback: every tl.dot moves its accumulator fragments" in text
    assert "[ok    ] D5" in text and "[ok    ] D7" in text and "[ok    ] D11" in text
    assert rec.violations == [] and rec.unpooled == []
