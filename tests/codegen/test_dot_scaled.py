"""tl.dot_scaled (OCP MX operands: mxfp4 e2m1 packed two per byte, mxfp8 e4m3/e5m2, bf16/fp16, with e8m0 scales
per 32 elements along K) on every path vs a NumPy reference written from the MX definitions (fp8 decoded by
ml_dtypes, e2m1 from its bit fields, scales 2**(s - 127) in float64)."""

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from enceladus import CompilationError
from enceladus.runtime.jit import JITFunction
from paths import run_on_all_paths

ml_dtypes = pytest.importorskip("ml_dtypes")
CODE = {"e2m1": np.uint8, "e4m3": np.uint8, "e5m2": np.uint8, "bf16": np.uint16, "fp16": np.uint16}


def e2m1_value(code: np.ndarray) -> np.ndarray:
    """OCP E2M1: sign bit 3, two exponent bits (bias 1), one mantissa bit; exponent 0 is subnormal (0 or 0.5)."""
    s, e, m = (code >> 3) & 1, (code >> 1) & 3, code & 1
    mag = np.where(e == 0, m * 0.5, (1 + m / 2) * 2.0 ** (e.astype(np.int64) - 1))
    return np.where(s == 1, -mag, mag)


def decode(codes: np.ndarray, fmt: str, packed_axis: int | None) -> np.ndarray:
    if fmt == "e2m1":
        lo, hi = e2m1_value(codes & 0xF), e2m1_value(codes >> 4)
        out = np.stack([lo, hi], axis=packed_axis + 1 if packed_axis >= 0 else -1)
        shape = list(codes.shape)
        shape[packed_axis] *= 2
        return out.reshape(shape)
    np_t = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2, "bf16": ml_dtypes.bfloat16,
            "fp16": np.float16}[fmt]
    return codes.view(np_t).astype(np.float64)


def scales(e: np.ndarray) -> np.ndarray:
    return np.where(e == 255, np.nan, 2.0 ** (e.astype(np.float64) - 127))


def random_codes(rng: np.random.Generator, fmt: str, shape: tuple[int, ...]) -> np.ndarray:
    if fmt in ("e2m1", "e4m3", "e5m2"):
        c = rng.integers(0, 256, shape).astype(np.uint8)
        if fmt == "e4m3":
            c[(c & 0x7F) == 0x7F] = 0x3A  # no NaN codes: the reference must be finite
        if fmt == "e5m2":
            c[(c & 0x7C) == 0x7C] = 0x3A
        return c
    np_t = ml_dtypes.bfloat16 if fmt == "bf16" else np.float16
    return rng.standard_normal(shape).astype(np_t).view(np.uint16)


@enceladus.jit
def dot_scaled_kernel(a_ptr, sa_ptr, b_ptr, sb_ptr, acc_ptr, c_ptr, AR: tl.constexpr, AC: tl.constexpr,
                      BR: tl.constexpr, BC: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                      A_FMT: tl.constexpr, B_FMT: tl.constexpr, A_PACK: tl.constexpr, B_PACK: tl.constexpr,
                      SCALED: tl.constexpr, ACC: tl.constexpr):
    ar, ac = tl.arange(0, AR), tl.arange(0, AC)
    br, bc = tl.arange(0, BR), tl.arange(0, BC)
    a = tl.load(a_ptr + ar[:, None] * AC + ac[None, :])
    b = tl.load(b_ptr + br[:, None] * BC + bc[None, :])
    rm, rn, rs = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K // 32)
    if SCALED:
        sa = tl.load(sa_ptr + rm[:, None] * (K // 32) + rs[None, :])
        sb = tl.load(sb_ptr + rn[:, None] * (K // 32) + rs[None, :])
    else:
        sa = None
        sb = None
    if ACC:
        acc = tl.load(acc_ptr + rm[:, None] * N + rn[None, :])
        c = tl.dot_scaled(a, sa, A_FMT, b, sb, B_FMT, acc, lhs_k_pack=A_PACK, rhs_k_pack=B_PACK)
    else:
        c = tl.dot_scaled(a, sa, A_FMT, b, sb, B_FMT, lhs_k_pack=A_PACK, rhs_k_pack=B_PACK)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


CASES = [  # (lhs format, rhs format, lhs_k_pack, rhs_k_pack, scaled, acc)
    ("e2m1", "e2m1", True, True, True, False),
    ("e2m1", "e4m3", True, True, True, True),
    ("e4m3", "e2m1", True, True, True, False),
    ("e5m2", "e5m2", True, True, True, False),
    ("e4m3", "e5m2", True, True, True, True),
    ("e2m1", "e2m1", False, False, True, False),  # packed along M and N
    ("e2m1", "bf16", True, True, True, False),
    ("fp16", "e4m3", True, True, True, False),
    ("bf16", "bf16", True, True, False, True),
    ("e4m3", "e4m3", True, True, False, False),
]


@pytest.mark.parametrize("a_fmt,b_fmt,a_pack,b_pack,scaled,with_acc", CASES)
def test_dot_scaled_matches_numpy(a_fmt, b_fmt, a_pack, b_pack, scaled, with_acc):
    M, N, K = 32, 16, 64
    a_shape = (M, K // 2) if a_fmt == "e2m1" and a_pack else (M // 2, K) if a_fmt == "e2m1" else (M, K)
    b_shape = (K // 2, N) if b_fmt == "e2m1" and b_pack else (K, N // 2) if b_fmt == "e2m1" else (K, N)
    rng = np.random.default_rng(1818)  # per test: the data must not depend on which tests ran before
    a, b = random_codes(rng, a_fmt, a_shape), random_codes(rng, b_fmt, b_shape)
    sa = rng.integers(118, 136, (M, K // 32)).astype(np.uint8)
    sb = rng.integers(118, 136, (N, K // 32)).astype(np.uint8)
    sa[0, 0], sb[1, 1] = 0, 140  # 2**-127 (a float32 subnormal scale) and 2**13
    acc = rng.standard_normal((M, N)).astype(np.float32)

    av = decode(a, a_fmt, 1 if a_pack else 0)
    bv = decode(b, b_fmt, 0 if b_pack else 1)
    if scaled:
        av = av * np.repeat(scales(sa), 32, axis=1)
        bv = bv * np.repeat(scales(sb), 32, axis=1).T
    ref = av @ bv + (acc if with_acc else 0)
    tol = 1e-5 * max(1.0, float(np.abs(ref).max()))

    def make_args():
        return (a.copy(), sa.copy(), b.copy(), sb.copy(), acc.copy(), np.zeros((M, N), np.float32))

    run_on_all_paths(dot_scaled_kernel, (1,), make_args, lambda *args: {5: ref.astype(np.float32)},
                     rtol=1e-5, atol=tol,
                     constexprs={"AR": a_shape[0], "AC": a_shape[1], "BR": b_shape[0], "BC": b_shape[1], "M": M,
                                 "N": N, "K": K, "A_FMT": a_fmt, "B_FMT": b_fmt, "A_PACK": a_pack, "B_PACK": b_pack,
                                 "SCALED": scaled, "ACC": with_acc})


@pytest.mark.parametrize("a_fmt,b_fmt,a_pack,b_pack", [("fp16", "e2m1", True, True), ("e2m1", "e2m1", True, False),
                                                   ("e4m3", "e2m1", True, True)])
def test_large_dot_scaled_fits_in_threadgroup_memory(a_fmt, b_fmt, a_pack, b_pack):
    """Triton's test_scaled_dot 64x128x128 with an e2m1 operand: the e2m1 unpacking and the scale expansion gather
    from the packed bytes (1 byte per element in threadgroup memory) instead of reshaping the unpacked float32 tile
    (64 KB, over Metal's 32 KB)."""
    M, N, K = 64, 128, 128
    a_shape = (M, K // 2) if a_fmt == "e2m1" and a_pack else (M, K)
    b_shape = (K // 2, N) if b_fmt == "e2m1" and b_pack else (K, N // 2)
    rng = np.random.default_rng(64)
    a, b = random_codes(rng, a_fmt, a_shape), random_codes(rng, b_fmt, b_shape)
    sa = rng.integers(120, 134, (M, K // 32)).astype(np.uint8)
    sb = rng.integers(120, 134, (N, K // 32)).astype(np.uint8)
    av = decode(a, a_fmt, 1 if a_pack else 0) * np.repeat(scales(sa), 32, axis=1)
    bv = decode(b, b_fmt, 0 if b_pack else 1) * np.repeat(scales(sb), 32, axis=1).T
    ref = av @ bv
    consts = {"AR": a_shape[0], "AC": a_shape[1], "BR": b_shape[0], "BC": b_shape[1], "M": M, "N": N, "K": K,
              "A_FMT": a_fmt, "B_FMT": b_fmt, "A_PACK": a_pack, "B_PACK": b_pack, "SCALED": True, "ACC": False}

    def make_args():
        return (a.copy(), sa.copy(), b.copy(), sb.copy(), np.zeros((M, N), np.float32), np.zeros((M, N), np.float32))

    ck = dot_scaled_kernel.warmup(*make_args(), grid=(1,), num_warps=4, **consts)
    assert ck.metadata.shared <= 32768, ck.metadata.shared
    run_on_all_paths(dot_scaled_kernel, (1,), make_args, lambda *args: {5: ref.astype(np.float32)}, rtol=1e-5,
                     atol=1e-5 * float(np.abs(ref).max()), constexprs=consts, num_warps=4)


@enceladus.jit
def mxfp8_typed(a_ptr, b_ptr, s_ptr, c_ptr, M: tl.constexpr, K: tl.constexpr):
    rm, rk = tl.arange(0, M), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])  # tl.float8e4nv tiles, as Triton's fp8 operands
    b = tl.load(b_ptr + rk[:, None] * M + rm[None, :])
    s = tl.load(s_ptr + rm[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    tl.store(c_ptr + rm[:, None] * M + rm[None, :], tl.dot_scaled(a, s, "e4m3", b, s, "e4m3"))


def test_fp8_typed_operands_and_the_nan_scale():
    M, K = 16, 64
    rng = np.random.default_rng(18)
    a, b = random_codes(rng, "e4m3", (M, K)), random_codes(rng, "e4m3", (K, M))
    s = np.full((M, K // 32), 127, np.uint8)
    s[3, 1] = 255  # e8m0 NaN: row 3 of the lhs and column 3 of the rhs become NaN
    av = decode(a, "e4m3", None) * np.repeat(scales(s), 32, axis=1)
    bv = decode(b, "e4m3", None) * np.repeat(scales(s), 32, axis=1).T
    ref = (av @ bv).astype(np.float32)
    assert np.isnan(ref[3]).all() and np.isnan(ref[:, 3]).all()
    fp8 = tl.float8e4nv.to_numpy()
    run_on_all_paths(mxfp8_typed, (1,), lambda: (a.view(fp8).copy(), b.view(fp8).copy(), s.copy(),
                                                 np.zeros((M, M), np.float32)),
                     lambda *args: {3: ref}, constexprs={"M": M, "K": K}, atol=1e-5 * np.nanmax(np.abs(ref)))


@enceladus.jit
def bad_dot_scaled(a_ptr, c_ptr, FMT: tl.constexpr, SCALE_COLS: tl.constexpr):
    r = tl.arange(0, 32)
    a = tl.load(a_ptr + r[:, None] * 32 + r[None, :])
    s = tl.load(a_ptr + r[:, None] * SCALE_COLS + tl.arange(0, SCALE_COLS)[None, :])
    tl.store(c_ptr + r[:, None] * 32 + r[None, :], tl.dot_scaled(a, s, FMT, a, s, "e4m3"))


@pytest.mark.parametrize("fmt,cols,compiled,interpreted", [
    ("e3m2", 1, "'e3m2' is not an MX format", "Invalid float format"),
    ("e4m3", 2, "lhs_scale must have shape [32, 1]", "lhs_scale must be a tensor of shape [32, 1]"),
])
def test_bad_formats_and_scale_shapes_are_located_errors(fmt, cols, compiled, interpreted):
    a = np.zeros((32, 32), np.uint8)
    c = np.zeros((32, 32), np.float32)
    with pytest.raises(CompilationError) as info:
        bad_dot_scaled[(1,)](a, c, FMT=fmt, SCALE_COLS=cols)
    assert compiled in info.value.message and info.value.lineno is not None and info.value.fix
    with pytest.raises((ValueError, TypeError), match=interpreted.replace("[", r"\[").replace("]", r"\]")):
        JITFunction(bad_dot_scaled.fn, interpret=True)[(1,)](a, c, FMT=fmt, SCALE_COLS=cols)


@enceladus.jit
def batched_dot_scaled(a_ptr, sa_ptr, b_ptr, sb_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
                       K: tl.constexpr):
    rb, rm, rn = tl.arange(0, B), tl.arange(0, M), tl.arange(0, N)
    rk2, rk, rs = tl.arange(0, K // 2), tl.arange(0, K), tl.arange(0, K // 32)
    a = tl.load(a_ptr + rb[:, None, None] * (M * K // 2) + rm[None, :, None] * (K // 2) + rk2[None, None, :])
    b = tl.load(b_ptr + rb[:, None, None] * (K * N) + rk[None, :, None] * N + rn[None, None, :])
    sa = tl.load(sa_ptr + rb[:, None, None] * (M * K // 32) + rm[None, :, None] * (K // 32) + rs[None, None, :])
    sb = tl.load(sb_ptr + rb[:, None, None] * (N * K // 32) + rn[None, :, None] * (K // 32) + rs[None, None, :])
    c = tl.dot_scaled(a, sa, "e2m1", b, sb, "e5m2")
    tl.store(c_ptr + rb[:, None, None] * (M * N) + rm[None, :, None] * N + rn[None, None, :], c)


def test_batched_dot_scaled():
    Bt, M, N, K = 2, 16, 16, 64
    rng = np.random.default_rng(3)
    a, b = random_codes(rng, "e2m1", (Bt, M, K // 2)), random_codes(rng, "e5m2", (Bt, K, N))
    sa = rng.integers(120, 134, (Bt, M, K // 32)).astype(np.uint8)
    sb = rng.integers(120, 134, (Bt, N, K // 32)).astype(np.uint8)
    av = decode(a, "e2m1", 2) * np.repeat(scales(sa), 32, axis=2)
    bv = decode(b, "e5m2", None) * np.swapaxes(np.repeat(scales(sb), 32, axis=2), 1, 2)
    ref = av @ bv
    run_on_all_paths(batched_dot_scaled, (1,), lambda: (a.copy(), sa.copy(), b.copy(), sb.copy(),
                                                        np.zeros((Bt, M, N), np.float32)),
                     lambda *args: {4: ref.astype(np.float32)}, constexprs={"B": Bt, "M": M, "N": N, "K": K},
                     rtol=1e-5, atol=1e-5 * np.abs(ref).max())
