"""Philox against references outside this project: known-answer vectors and statistical bounds.

Sources of the expected values:
- ``PHILOX_KAT``: the philox4x32-10 known-answer vectors of Random123 (Salmon et al., "Parallel random
  numbers: as easy as 1, 2, 3", SC 2011; file ``kat_vectors`` of the Random123 distribution).
  Triton 3.9.0's ``tl.philox`` (interpreter, TRITON_INTERPRET=1, /work/ext/tvenv) gives the same words.
- ``TRITON_*``: ``tl.randint``, ``tl.rand``, ``tl.randn``, ``tl.randint4x`` at offsets 0..7, computed with
  Triton 3.9.0's interpreter (TRITON_INTERPRET=1) on 2026-12-02.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from paths import assert_close, run_on_all_paths

from . import random_kernels as rk

# (key k0, k1), (counter c0..c3) -> four output words
PHILOX_KAT = [
    ((0x00000000, 0x00000000), (0x00000000, 0x00000000, 0x00000000, 0x00000000),
     (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF),
     (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0xA4093822, 0x299F31D0), (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]

TRITON_RANDINT = {
    0: [0x6627E8D5, 0xF8E4CCA4, 0x04FAA329, 0xC990EF29, 0xEF3DC354, 0x734893FB, 0xB6AF4BF8, 0xA8B31D31],
    1234: [0x2090B348, 0x9EEEDE35, 0x3FC9C8D8, 0xB6269A3E, 0x14A762D7, 0xCA2921C9, 0xFD0CA21E, 0xB30E22AD],
    2**40 + 7: [0x33F7DEF9, 0x5E025D46, 0x4BFF9D26, 0x8A50E7D9, 0x63B101F0, 0x6D4F3261, 0x525F641F, 0x0D9A1E08],
}
TRITON_RAND = {
    0: ["0x1.989fa2p-1", "0x1.c6ccd4p-5", "0x1.3ea8c8p-5", "0x1.b37884p-2", "0x1.0c23c8p-3", "0x1.cd224ep-1",
        "0x1.2542cep-1", "0x1.5d338ap-1"],
    1234: ["0x1.048598p-2", "0x1.844486p-1", "0x1.fe4e44p-2", "0x1.276596p-1", "0x1.4a762cp-3", "0x1.aeb6f0p-2",
           "0x1.79aeeep-6", "0x1.33c774p-1"],
    2**40 + 7: ["0x1.9fbef6p-2", "0x1.780974p-1", "0x1.2ffe72p-1", "0x1.d6bc5ep-1", "0x1.8ec406p-1",
                "0x1.b53cc8p-1", "0x1.497d8ep-1", "0x1.b343bep-4"],
}
TRITON_RANDN = {
    0: [0.046551529318094254, -0.3883614242076874, -1.6379519701004028, 0.6315314769744873, -1.5319279432296753,
        0.42992979288101196, -0.7929391860961914, 0.7527517676353455],
    1234: [-0.44222745299339294, 0.11843180656433105, 1.157851219177246, -0.19024240970611572, 0.9828140735626221,
           -1.0670596361160278, -1.3068912029266357, 0.6667479872703552],
    2**40 + 7: [1.1494414806365967, 0.7271011471748352, 0.14179378747940063, 0.332893967628479, -0.66903156042099,
                -0.5170877575874329, 0.5017963647842407, -1.297311544418335],
}
# randint4x(seed, offsets 0 and 1): four words per offset
TRITON_RANDINT4X = {
    0: [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8, 0xF8E4CCA4, 0x5CB200DB, 0xB1A574EB, 0x097EFF67],
    1234: [0x2090B348, 0xDA7CF0AB, 0x4401906F, 0xCBCA470E, 0x9EEEDE35, 0x1CBE137C, 0xFA277093, 0x147EDD50],
    2**40 + 7: [0x33F7DEF9, 0xF4EF4E99, 0x0B7C2523, 0x9DAECF53, 0x5E025D46, 0x87EA6941, 0x3D5EF410, 0x7613C893],
}


def _i32(word: int) -> int:
    """A uint32 word as the int32 with the same bits (scalar kernel arguments are int32)."""
    return word - 2**32 if word >= 2**31 else word


@pytest.mark.parametrize("key,counter,want", PHILOX_KAT, ids=["zeros", "ones", "pi"])
def test_philox4x32_10_known_answers(key, counter, want):
    seed = key[0] | key[1] << 32
    seed = seed - 2**64 if seed >= 2**63 else seed  # the same 64 bits as an int64 argument
    run_on_all_paths(rk.philox_kernel, (1,), lambda: [np.zeros(4, np.uint32), seed, *map(_i32, counter)],
                     lambda *a: {0: np.array(want, np.uint32)})


def _bits_exact_randn_close(args, want, path):
    """randint and rand bit-exact; randn within 2e-6 (log, cos and sqrt of the C library and NumPy)."""
    assert_close(args[0], want[0], what=f"randint on the {path} path")
    np.testing.assert_array_equal(args[1], want[1], err_msg=f"rand on the {path} path")
    assert_close(args[2], want[2], rtol=2e-6, atol=2e-7, what=f"randn on the {path} path")


@pytest.mark.parametrize("seed", sorted(TRITON_RAND))
def test_randint_rand_randn_match_triton(seed):
    n = 8
    run_on_all_paths(rk.random_kernel, (1,),
                     lambda: [np.zeros(n, np.uint32), np.zeros(n, np.float32), np.zeros(n, np.float32), seed, n],
                     lambda *a: {0: np.array(TRITON_RANDINT[seed], np.uint32),
                                 1: np.array([float.fromhex(h) for h in TRITON_RAND[seed]], np.float32),
                                 2: np.array(TRITON_RANDN[seed], np.float32)},
                     constexprs={"BLOCK": 8}, check=_bits_exact_randn_close)
    run_on_all_paths(rk.randint4x_kernel, (1,), lambda: [np.zeros(8, np.uint32), seed],
                     lambda *a: {0: np.array(TRITON_RANDINT4X[seed], np.uint32)}, constexprs={"BLOCK": 2})


def _normal_cdf(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def test_distributions_within_statistical_bounds():
    """2^15 draws per path: moments, Kolmogorov-Smirnov distance and bit balance within bounds that a
    correct generator exceeds with probability < 1e-6 (so the test is deterministic in practice: fixed seed)."""
    n = 1 << 15
    res = run_on_all_paths(rk.random_kernel, (n // 1024,),
                           lambda: [np.zeros(n, np.uint32), np.zeros(n, np.float32), np.zeros(n, np.float32), 7, n],
                           lambda *a: {}, check=lambda *a: None, constexprs={"BLOCK": 1024})
    ks_bound = 2.7 / math.sqrt(n)  # P(D_n > 2.7/sqrt(n)) ~ 2 exp(-2 * 2.7^2) ~ 1e-6
    for path, (ints, u, z, _, _) in res.items():
        u64, z64 = u.astype(np.float64), z.astype(np.float64)
        assert u.min() >= 0 and u.max() < 1, path
        sigma = math.sqrt(1 / 12 / n)
        assert abs(u64.mean() - 0.5) < 5 * sigma, (path, u64.mean())
        assert abs(u64.var() - 1 / 12) < 5 * math.sqrt(1 / 180 / n), (path, u64.var())
        d_u = np.max(np.abs(np.sort(u64) - (np.arange(n) + 0.5) / n))
        assert d_u < ks_bound, (path, "uniform KS", d_u)
        assert abs(z64.mean()) < 5 / math.sqrt(n) and abs(z64.var() - 1) < 5 * math.sqrt(2 / n), path
        d_z = np.max(np.abs(_normal_cdf(np.sort(z64)) - (np.arange(n) + 0.5) / n))
        assert d_z < ks_bound, (path, "normal KS", d_z)
        bits = (ints[:, None] >> np.arange(32, dtype=np.uint32)) & 1
        assert np.all(np.abs(bits.mean(axis=0) - 0.5) < 5 * 0.5 / math.sqrt(n)), (path, bits.mean(axis=0))
        assert len(np.unique(ints)) > n - 5, path  # 2^15 draws from 2^32: ~0.1 collisions expected
