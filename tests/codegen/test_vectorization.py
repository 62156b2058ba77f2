"""The vector width chosen for each global access (not only the results)."""

import re

import numpy as np
import pytest

import enceladus

from . import vec_kernels as vk


def widths(ck):
    return [(a.kind, a.vector, a.bytes) for a in ck.accesses]


@pytest.mark.parametrize("ty,vec", [("fp32", 4), ("fp16", 8), ("i8", 16), ("i64", 2), ("bf16", 8)])  # BLOCK=2048: 16 elements per thread
def test_aligned_masked_copy_uses_16_byte_accesses(ty, vec):
    ck = enceladus.compile(vk.copy_kernel, signature={"x_ptr": f"*{ty}", "out_ptr": f"*{ty}", "n": "i32"},
                           constexprs={"BLOCK": 2048})
    # without specialization facts nothing is known: scalar accesses
    assert all(a.vector == 1 for a in ck.accesses)
    x = np.zeros(4096, dtype={"fp32": np.float32, "fp16": np.float16, "i8": np.int8, "i64": np.int64,
                              "bf16": np.float16}[ty])
    if ty == "bf16":
        ml_dtypes = pytest.importorskip("ml_dtypes")
        x = np.zeros(4096, dtype=ml_dtypes.bfloat16)
    ck = vk.copy_kernel.warmup(x, np.zeros_like(x), 4096, BLOCK=2048, grid=(2,))
    assert widths(ck) == [("load", vec, 16), ("store", vec, 16)], ck.explain()


def test_small_blocks_spread_elements_over_threads_first():
    # as in Triton, a thread holds at most BLOCK / threads elements: int8 with 1024 elements on 128 threads -> 8 bytes
    x = np.zeros(4096, np.int8)
    ck = vk.copy_kernel.warmup(x, np.zeros_like(x), 4096, BLOCK=1024, grid=(4,))
    assert widths(ck) == [("load", 8, 8), ("store", 8, 8)]


def test_vector_add_layout_matches_triton_blocked_layout():
    x = np.zeros(4096, np.float32)
    ck = vk.copy_kernel.warmup(x, x.copy(), 4096, BLOCK=1024, grid=(4,))
    (layout,) = ck.metadata["layouts"]
    assert (layout.size_per_thread, layout.threads_per_warp, layout.warps_per_cta) == ((4,), (32,), (4,))
    assert layout.elems_per_thread == 8 and ck.abi.threads_per_threadgroup == 128
    msl = ck.asm["msl"]
    # thread t holds elements 4t..4t+3 and 512+4t..512+4t+3
    assert "((int(enc_warp) / 1) % 4) * 128 + ((int(enc_lane) / 1) % 32) * 4" in msl
    assert "((e) / 4) * 512" in msl
    assert msl.count("uint4") >= 2


def test_size_not_divisible_by_16_checks_the_mask_per_run():
    # the mask `offs < n` varies inside a run: each run is one vector where the mask is true throughout and
    # element by element where it is not (the ragged tail); values: test_vector_safety.py
    x = np.zeros(1000, np.float32)
    ck = vk.copy_kernel.warmup(x, x.copy(), 1000, BLOCK=256, grid=(4,))
    assert widths(ck) == [("load", 2, 8), ("store", 2, 8)]
    assert "mask is constant only in runs of 1" in ck.accesses[0].reason
    assert "each run checks it" in ck.accesses[0].reason
    assert ck.asm["msl"].count("enc_all = enc_all &&") == 2


def test_misaligned_pointer_is_scalar():
    base = np.zeros(4097, np.float32)
    x = base[1:]  # 4-byte aligned only
    assert x.ctypes.data % 16 != 0
    ck = vk.copy_unmasked.warmup(x, np.zeros(4096, np.float32), BLOCK=1024, grid=(4,))
    assert widths(ck)[0] == ("load", 1, 4)
    assert widths(ck)[1] == ("store", 4, 16)
    assert "aligned" in ck.accesses[0].reason


def test_offset_start_is_scalar():
    x = np.zeros(4096 + 16, np.float32)
    ck = vk.copy_offset.warmup(x, x.copy(), BLOCK=1024, grid=(4,))
    assert all(a.vector == 1 for a in ck.accesses)


def test_strided_load_is_scalar_contiguous_store_is_vector():
    x = np.zeros(4096, np.float32)
    ck = vk.copy_strided.warmup(x, x.copy(), 3, BLOCK=1024, grid=(1,))
    assert widths(ck) == [("load", 1, 4), ("store", 4, 16)]
    assert "contiguous in runs of 1" in ck.accesses[0].reason


def test_2d_tile_vectorizes_along_rows():
    x = np.zeros((64, 64), np.float32)
    ck = vk.copy_2d.warmup(x, x.copy(), 64, BLOCK_M=64, BLOCK_N=64, grid=(1,))
    assert widths(ck) == [("load", 4, 16), ("store", 4, 16)]
    (layout,) = ck.metadata["layouts"]
    assert layout.size_per_thread == (1, 4) and layout.threads_per_warp == (2, 16)
    # a row stride that is not a multiple of 16 elements breaks alignment: scalar loads
    ck = vk.copy_2d.warmup(x, x.copy(), 63, BLOCK_M=64, BLOCK_N=64, grid=(1,))
    assert widths(ck) == [("load", 1, 4), ("store", 1, 4)]


def test_hint_enables_vectorization():
    x = np.zeros(4096, np.float32)
    ck = vk.copy_hinted.warmup(x, x.copy(), 7, BLOCK=512, grid=(1,))  # 7: not known divisible
    assert widths(ck) == [("load", 4, 16), ("store", 4, 16)]
    out = np.zeros(4096, np.float32)
    src = np.arange(4096, dtype=np.float32)
    vk.copy_hinted[(1,)](src, out, 32, BLOCK=512)
    np.testing.assert_array_equal(out[32:544], src[32:544])
    assert not out[:32].any() and not out[544:].any()


def test_small_tile_is_replicated_and_stored_once():
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(16, np.float32)
    ck = vk.copy_unmasked.warmup(x, out, BLOCK=16, grid=(1,))
    (layout,) = ck.metadata["layouts"]
    assert layout.replicated == (True,)
    assert re.search(r"if \(L0_b0 < 16\)", ck.asm["msl"])
    vk.copy_unmasked[(1,)](x, out, BLOCK=16)
    np.testing.assert_array_equal(out, x)


@pytest.mark.parametrize("n", [16, 17, 1000, 4096])
def test_vectorized_kernels_compute_correctly(n):
    x = np.random.default_rng(0).standard_normal(n).astype(np.float16)
    out = np.zeros_like(x)
    vk.copy_kernel[(enceladus.cdiv(n, 512),)](x, out, n, BLOCK=512)
    np.testing.assert_array_equal(out, x)


def test_compile_accepts_alignment_hints_in_the_signature():
    ck = enceladus.compile(vk.copy_kernel, signature="*fp32:16, *fp32:16, i32:16", constexprs={"BLOCK": 1024})
    assert widths(ck) == [("load", 4, 16), ("store", 4, 16)]
    sig = {"x_ptr": "*fp32:16", "out_ptr": "*fp32", "n": "i32"}
    ck = enceladus.compile(vk.copy_kernel, signature=sig, constexprs={"BLOCK": 1024})
    assert sig["x_ptr"] == "*fp32:16"  # the caller's dict is left alone
    # n not divisible: the mask varies inside a run, so the aligned load checks it per run; the store's pointer
    # is only 4-byte aligned, so it stays scalar
    assert widths(ck) == [("load", 4, 16), ("store", 1, 4)]
    with pytest.raises(TypeError, match="only specialization hint"):
        enceladus.compile(vk.copy_kernel, signature="*fp32:8, *fp32, i32", constexprs={"BLOCK": 1024})


def test_loops_keep_alignment_of_induction_variables_and_carried_pointers():
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).parent.parent.parent / "examples" / "05_layer_norm.py"
    spec = importlib.util.spec_from_file_location("layer_norm_example", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    x = np.zeros((4, 1024), np.float32)
    w = np.zeros(1024, np.float32)
    ck = mod.layer_norm_fwd.warmup(x, x.copy(), w, w.copy(), np.zeros(4, np.float32), np.zeros(4, np.float32), 1024,
                                   1024, 1e-5, BLOCK_SIZE=1024, num_warps=4)
    tile_accesses = [a for a in ck.accesses if a.shape]
    assert tile_accesses and all(a.vector == 4 for a in tile_accesses), [str(a) for a in tile_accesses]
