"""Run-time probes with fallbacks (MSL_AUDIT D1/D2/D4 ...): each probe is shown to detect what it checks by a cpu
twin deliberately built wrong, which then takes the fallback and still computes the right answer."""

from __future__ import annotations

import numpy as np
import pytest

from enceladus.backends.cpu import CpuBackend
from enceladus.runtime import probes
from enceladus.runtime.backend import use_backend

from .probe_kernels import dot_kernel

RNG = np.random.default_rng(7)


def _operands(m, n, k):
    a = RNG.integers(-4, 5, (m, k)).astype(np.float16)
    b = RNG.integers(-4, 5, (k, n)).astype(np.float16)
    return a, b, a.astype(np.float32) @ b.astype(np.float32)


def _twin(*defines, probe=True) -> CpuBackend:
    backend = CpuBackend(defines=defines)
    backend.probe_on_compile = probe
    return backend


def test_the_right_twin_passes_the_probes():
    p = probes.for_backend(_twin())
    assert p.fragment_lanes().status == "ok"
    assert p.shuffle_xor_floats().status == "ok" and p.fp_pragma().status == "ok"
    assert p.pooled_atomics().status == "ok" and p.denormals().status == "ok"
    assert p.constraints() == ()


def test_a_permuted_lane_mapping_is_detected_and_dot_falls_back_to_simdgroup_store():
    wrong = _twin("ENC_TEST_PERMUTED_FRAGMENT_LANES")
    a, b, want = _operands(32, 32, 32)
    with use_backend(wrong), pytest.warns(RuntimeWarning, match="simdgroup_store"):
        result = probes.for_backend(wrong).fragment_lanes()
    assert result.status == "failed" and "lane 0 element 0" in result.detail
    c = np.zeros((32, 32), np.float32)
    with use_backend(wrong):
        ck = dot_kernel[(1,)](a, b, c, M=32, N=32, K=32)
    np.testing.assert_array_equal(c, want)  # the fallback's answer is right
    assert "simdgroup_store" in ck.asm["msl"] and "thread_elements" not in ck.asm["msl"]
    assert "lane probe" in ck.explain()
    # without the probe, the same wrong twin runs the thread_elements() code: the answer is wrong
    # (K=16: another specialization, so the launch fast path cannot reuse the kernel compiled for the probed twin)
    unprobed = _twin("ENC_TEST_PERMUTED_FRAGMENT_LANES", probe=False)
    a, b, want = _operands(32, 32, 16)
    c[:] = 0
    with use_backend(unprobed):
        ck = dot_kernel[(1,)](a, b, c, M=32, N=32, K=16)
    assert "thread_elements" in ck.asm["msl"] and not np.array_equal(c, want)


def test_a_matmul2d_that_rejects_a_tile_shape_falls_back_with_the_reason_in_explain():
    wrong = _twin("ENC_TEST_MATMUL2D_REJECTS_8X8")
    a, b, want = _operands(8, 8, 32)
    c = np.zeros((8, 8), np.float32)
    with use_backend(wrong):
        ck = dot_kernel[(1,)](a, b, c, M=8, N=8, K=32, num_warps=1, dot_backend="matmul2d")
    np.testing.assert_array_equal(c, want)
    assert ck.metadata["dot_backend"] == "matmul2d" and not ck.metadata["uses_tensor_ops"]
    assert "refused a 8x8x32 fp16 tile when probed" in ck.explain()
    assert "8x8 tiles are not supported" in ck.explain()
    # a tile the twin accepts stays on matmul2d
    a, b, want = _operands(16, 16, 32)
    c = np.zeros((16, 16), np.float32)
    with use_backend(wrong):
        ck = dot_kernel[(1,)](a, b, c, M=16, N=16, K=32, num_warps=1, dot_backend="matmul2d")
    np.testing.assert_array_equal(c, want)
    assert ck.metadata["uses_tensor_ops"]
    assert any(r.name.startswith("matmul2d 16x16x32") and r.ok for r in
               (probes.ProbeResult(**v) for v in probes.for_backend(wrong).results.values()))


def test_probe_results_are_cached_per_device_identity():
    wrong = _twin("ENC_TEST_PERMUTED_FRAGMENT_LANES")
    with pytest.warns(RuntimeWarning):
        probes.for_backend(wrong).fragment_lanes()
    again = probes.DeviceProbes(_twin("ENC_TEST_PERMUTED_FRAGMENT_LANES"))  # a new process would read this
    assert again.results["fragment_lanes"]["status"] == "failed"
    assert "fragment_lanes" not in probes.DeviceProbes(_twin("OTHER_IDENTITY")).results


def test_doctor_probe_prints_a_pasteable_report(capsys):
    from enceladus.cli import main

    assert main(["doctor", "--probe", "--no-run"]) == 0
    out = capsys.readouterr().out
    assert "=== Enceladus device probe report" in out and "not Apple hardware" in out
    for item in ("D4", "D3", "D9", "D10", "D6"):
        assert f"] {item}" in out
    assert "5 of 5 probes passed" in out
