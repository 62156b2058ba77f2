"""fp8 storage types (tl.float8e4nv, float8e5, float8e4b15, float8e4b8, float8e5b16) on every path vs NumPy:
casts from and to float16/bfloat16/integers and between fp8 formats, literals and tl.where, tl.dot on fp8
operands (exact upcast to float16), the array types kernels take (ml_dtypes, tagged uint8, torch float8), and
the refusals (fp8 arithmetic: Apple GPUs have no fp8 units; rounding modes Triton does not have).

The expected codes come from the independent model that makes tests/conformance/data/fp8_table.csv."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from enceladus import CompilationError
from enceladus.runtime.jit import JITFunction
from paths import run_on_all_paths

_spec = importlib.util.spec_from_file_location(
    "make_fp8_table", Path(__file__).parents[1] / "conformance" / "data" / "make_fp8_table.py")
MODEL = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(MODEL)

TYPES = {"float8e4nv": tl.float8e4nv, "float8e5": tl.float8e5, "float8e4b15": tl.float8e4b15,
         "float8e4b8": tl.float8e4b8, "float8e5b16": tl.float8e5b16}
RNG = np.random.default_rng(18)


def model_encode(name: str, x: np.ndarray, rounding: str = "rtne") -> np.ndarray:
    bits = x.astype(np.float32).view(np.uint32)
    return np.array([MODEL.encode(MODEL.FORMATS[name], int(b), rounding) for b in bits.ravel()],
                    np.uint8).reshape(x.shape)


def model_decode(name: str, codes: np.ndarray) -> np.ndarray:
    out = []
    for c in codes.ravel():
        v = MODEL.FORMATS[name].decode(int(c))
        out.append(float(v))
    return np.array(out, np.float32).reshape(codes.shape)


def specials(dtype) -> np.ndarray:
    """Random values over the fp8 ranges plus zeros, infinities, NaN and overflow, as ``dtype``."""
    x = RNG.choice([-1, 1], 200) * 2.0 ** RNG.uniform(-20, 15.9, 200)
    x = np.concatenate([x, [0.0, -0.0, np.inf, -np.inf, np.nan, 1.75, 1.8, 448.0, 500.0, 57344.0, 60000.0]])
    return np.resize(x, 256).astype(dtype)


@enceladus.jit
def convert(x_ptr, out_ptr, DST: tl.constexpr, B: tl.constexpr):
    offs = tl.arange(0, B)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs).to(DST))


@pytest.mark.parametrize("name", sorted(TYPES))
@pytest.mark.parametrize("src", ["float16", "bfloat16"])
def test_half_types_to_fp8_and_back(src, name):
    """float16/bfloat16 -> fp8 is the float32 rule on the (exact) float32 value; fp8 -> float16/bfloat16 is exact."""
    ty = TYPES[name]
    np_src = np.float16 if src == "float16" else tl.bfloat16.to_numpy()
    x = specials(np_src)
    want = model_encode(name, x.astype(np.float32))
    run_on_all_paths(convert, (1,), lambda: (x.copy(), np.zeros(256, np.uint8).view(ty.to_numpy())),
                     lambda x, out: {1: want}, constexprs={"DST": ty, "B": 256})
    codes = np.arange(256, dtype=np.uint8)
    back = model_decode(name, codes).astype(np_src)
    run_on_all_paths(convert, (1,), lambda: (codes.view(ty.to_numpy()).copy(), np.zeros(256, np_src)),
                     lambda c, out: {1: back}, constexprs={"DST": tl.float16 if src == "float16" else tl.bfloat16,
                                                             "B": 256}, rtol=0, atol=0)


@pytest.mark.parametrize("name", sorted(TYPES))
def test_fp8_to_integers_and_other_fp8_formats(name):
    ty = TYPES[name]
    codes = np.arange(256, dtype=np.uint8)
    values = model_decode(name, codes)
    finite = np.isfinite(values)
    ints = np.where(finite, np.trunc(np.nan_to_num(values)), 0).astype(np.int32)

    def check_ints(args, expected, path):
        np.testing.assert_array_equal(args[1][finite], ints[finite], err_msg=f"{name} -> int32 on {path}")

    run_on_all_paths(convert, (1,), lambda: (codes.view(ty.to_numpy()).copy(), np.zeros(256, np.int32)),
                     lambda c, out: {}, check=check_ints, constexprs={"DST": tl.int32, "B": 256})
    for other in sorted(TYPES):
        if other == name:
            continue
        want = model_encode(other, values)  # exact to float32, then the float32 rule
        run_on_all_paths(convert, (1,), lambda o=other: (codes.view(ty.to_numpy()).copy(),
                                                         np.zeros(256, np.uint8).view(TYPES[o].to_numpy())),
                         lambda c, out, w=want: {1: w}, constexprs={"DST": TYPES[other], "B": 256})


@enceladus.jit
def fp8_literals(x_ptr, out_ptr, full_ptr, DST: tl.constexpr, B: tl.constexpr):
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs)  # fp8 codes
    y = tl.where(offs % 2 == 0, x, 1.5)  # the literal takes x's fp8 type
    y = tl.where(offs < 4, 0.3, y)
    tl.store(out_ptr + offs, y)
    tl.store(full_ptr + offs, tl.full((B,), -2.75, DST))


@pytest.mark.parametrize("name", sorted(TYPES))
def test_literals_where_and_full_in_fp8(name):
    ty = TYPES[name]
    codes = RNG.integers(0, 256, 32).astype(np.uint8)
    offs = np.arange(32)
    lit = {v: model_encode(name, np.array([v], np.float32))[0] for v in (1.5, 0.3, -2.75)}
    want = np.where(offs < 4, lit[0.3], np.where(offs % 2 == 0, codes, lit[1.5])).astype(np.uint8)
    run_on_all_paths(fp8_literals, (1,), lambda: (codes.view(ty.to_numpy()).copy(),
                                                  np.zeros(32, np.uint8).view(ty.to_numpy()),
                                                  np.zeros(32, np.uint8).view(ty.to_numpy())),
                     lambda x, out, full: {1: want, 2: np.full(32, lit[-2.75], np.uint8)},
                     constexprs={"DST": ty, "B": 32})


@enceladus.jit
def fp8_dot(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, F16: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    if F16:
        c = tl.dot(a, b, out_dtype=tl.float16)
    else:
        c = tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


@pytest.mark.parametrize("a_name,b_name", [("float8e5", "float8e5"), ("float8e4nv", "float8e4nv"),
                                           ("float8e5", "float8e4nv"), ("float8e4b15", "float8e4b8"),
                                           ("float8e5b16", "float8e4b15")])
def test_dot_on_fp8_operands(a_name, b_name):
    M, N, K = 32, 16, 64
    rng = np.random.default_rng(7)
    a = model_encode(a_name, rng.standard_normal((M, K)).astype(np.float32))
    b = model_encode(b_name, rng.standard_normal((K, N)).astype(np.float32) * 0.5)
    av, bv = model_decode(a_name, a).astype(np.float64), model_decode(b_name, b).astype(np.float64)
    ref = av @ bv
    bound = K * 2.0 ** -23 * (np.abs(av) @ np.abs(bv)).max()  # fp32 accumulation error bound, any order
    run_on_all_paths(fp8_dot, (1,), lambda: (a.view(TYPES[a_name].to_numpy()).copy(),
                                             b.view(TYPES[b_name].to_numpy()).copy(), np.zeros((M, N), np.float32)),
                     lambda a, b, c: {2: ref.astype(np.float32)}, constexprs={"M": M, "N": N, "K": K, "F16": False},
                     rtol=0, atol=bound)
    if a_name == b_name == "float8e5":
        run_on_all_paths(fp8_dot, (1,), lambda: (a.view(tl.float8e5.to_numpy()).copy(),
                                                 b.view(tl.float8e5.to_numpy()).copy(), np.zeros((M, N), np.float16)),
                         lambda a, b, c: {2: ref.astype(np.float16)}, rtol=2e-3, atol=2e-2,
                         constexprs={"M": M, "N": N, "K": K, "F16": True})


@enceladus.jit
def copy_kernel(x_ptr, out_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs).to(tl.float32))


def test_ml_dtypes_arrays_and_tagged_uint8_are_typed_fp8():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.array([1.0, -2.5, 448.0, 0.015625], np.float32)
    for np_t, name in [(ml_dtypes.float8_e4m3fn, "float8e4nv"), (ml_dtypes.float8_e5m2, "float8e5"),
                       (ml_dtypes.float8_e4m3fnuz, "float8e4b8"), (ml_dtypes.float8_e5m2fnuz, "float8e5b16")]:
        arr = x.astype(np_t)
        want = arr.astype(np.float32)
        run_on_all_paths(copy_kernel, (1,), lambda a=arr: (a.copy(), np.zeros(4, np.float32)),
                         lambda a, out, w=want: {1: w}, constexprs={"B": 4})
        tagged = arr.view(np.uint8).view(TYPES[name].to_numpy())
        run_on_all_paths(copy_kernel, (1,), lambda t=tagged: (t.copy(), np.zeros(4, np.float32)),
                         lambda a, out, w=want: {1: w}, constexprs={"B": 4})
    # float8e4b15 has no library type: its codes are uint8 tagged with tl.float8e4b15.to_numpy()
    codes = np.array([0x78, 0x7F, 0xF4, 0x01], np.uint8)
    want = model_decode("float8e4b15", codes)
    run_on_all_paths(copy_kernel, (1,), lambda: (codes.view(tl.float8e4b15.to_numpy()).copy(),
                                                 np.zeros(4, np.float32)),
                     lambda a, out: {1: want}, constexprs={"B": 4})
    assert list(want) == [1.0, 1.875, -0.75, 2.0 ** -17]


def test_torch_float8_tensors_are_accepted():
    torch = pytest.importorskip("torch", reason="torch is not installed: the torch float8 argument path is untested")
    x = torch.tensor([1.0, -2.5, 448.0, 0.015625, 3.0, -0.0, 6.0, 0.5])
    for tdt in (torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fnuz, torch.float8_e5m2fnuz):
        t = x.to(tdt)
        out = torch.zeros(8)
        for path in ("interpreter", "cpu"):
            out.zero_()
            JITFunction(copy_kernel.fn, interpret=(path == "interpreter"))[(1,)](t, out, B=8)
            np.testing.assert_array_equal(out.numpy(), t.to(torch.float32).numpy(), err_msg=f"{tdt} on {path}")


@enceladus.jit
def fp8_add(x_ptr, out_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x + x)


@enceladus.jit
def fp8_rtz(x_ptr, out_ptr, DST: tl.constexpr, B: tl.constexpr):
    offs = tl.arange(0, B)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs).to(DST, fp_downcast_rounding="rtz"))


@enceladus.jit
def fp8_abs(x_ptr, out_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    tl.store(out_ptr + offs, tl.abs(tl.load(x_ptr + offs)))


@pytest.mark.parametrize("name", sorted(TYPES))
def test_abs_of_every_fp8_code(name):
    # tl.abs on fp8 clears the sign bit (a bit operation, as Triton's; no fp8 arithmetic is needed): every code's
    # decoded value must be the absolute value of the input's decoded value, NaN staying NaN (the fnuz formats'
    # only NaN, 0x80, would become +0 by clearing its sign bit)
    ty = TYPES[name]
    codes = np.arange(256, dtype=np.uint8)

    def check(args, expected, path):
        got = model_decode(name, args[1].view(np.uint8))
        np.testing.assert_array_equal(got, np.abs(model_decode(name, codes)), err_msg=f"{name} on {path}")
        assert not np.signbit(got[~np.isnan(got)]).any(), f"{name} on {path}: a negative zero survived"

    run_on_all_paths(fp8_abs, (1,), lambda: (codes.view(ty.to_numpy()).copy(), np.zeros(256, np.uint8).view(ty.to_numpy())),
                     lambda x, out: {}, check=check, constexprs={"B": 256})


def test_fp8_arithmetic_is_refused_with_the_fix_on_both_paths():
    x = np.zeros(8, np.uint8).view(tl.float8e5.to_numpy())
    with pytest.raises(CompilationError) as info:
        fp8_add[(1,)](x, x.copy(), B=8)
    assert "Apple GPUs have no fp8 arithmetic" in info.value.message and "x.to(tl.float16)" in info.value.fix
    assert info.value.lineno is not None
    with pytest.raises(TypeError, match="Apple GPUs have no fp8 arithmetic.*x.to\\(tl.float16\\)"):
        JITFunction(fp8_add.fn, interpret=True)[(1,)](x, x.copy(), B=8)


def test_rtz_exists_only_where_triton_has_it():
    x = np.array([1.2, -3.3, 1e6, np.inf], np.float32)
    want = model_encode("float8e5", x, "rtz")
    run_on_all_paths(fp8_rtz, (1,), lambda: (x.copy(), np.zeros(4, np.uint8).view(tl.float8e5.to_numpy())),
                     lambda x, out: {1: want}, constexprs={"DST": tl.float8e5, "B": 4})
    out = np.zeros(4, np.uint8).view(tl.float8e4nv.to_numpy())
    with pytest.raises(CompilationError) as info:
        fp8_rtz[(1,)](x, out, DST=tl.float8e4nv, B=4)
    assert "fp_downcast_rounding='rtz' to tl.float8e4nv does not exist in Triton" in info.value.message
    with pytest.raises(ValueError, match="'rtz' to tl.float8e4nv does not exist in Triton"):
        JITFunction(fp8_rtz.fn, interpret=True)[(1,)](x, out, DST=tl.float8e4nv, B=4)


@enceladus.jit
def fp8_mixed(a_ptr, b_ptr, h_ptr, f_ptr, out_h_ptr, out_f_ptr, out_ab_ptr, store_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    a = tl.load(a_ptr + offs)  # float8e5
    b = tl.load(b_ptr + offs)  # float8e4nv
    tl.store(out_h_ptr + offs, a + tl.load(h_ptr + offs))  # fp8 with fp16: computed in fp16, as in Triton
    tl.store(out_f_ptr + offs, a * tl.load(f_ptr + offs))  # fp8 with fp32: computed in fp32
    tl.store(out_ab_ptr + offs, a - b)  # two different fp8 formats meet in fp16
    tl.store(store_ptr + offs, tl.load(f_ptr + offs))  # an fp32 tile stored through a float8e5 pointer: converted


def test_fp8_mixed_with_wider_types_and_implicit_store_conversion():
    B = 64
    a = model_encode("float8e5", RNG.standard_normal(B).astype(np.float32) * 4)
    bb = model_encode("float8e4nv", RNG.standard_normal(B).astype(np.float32))
    h = RNG.standard_normal(B).astype(np.float16)
    f = (RNG.standard_normal(B) * 100).astype(np.float32)
    av, bv = model_decode("float8e5", a), model_decode("float8e4nv", bb)
    want = {4: (av.astype(np.float16) + h), 5: av * f, 6: (av.astype(np.float16) - bv.astype(np.float16)),
            7: model_encode("float8e5", f)}
    e5, e4 = tl.float8e5.to_numpy(), tl.float8e4nv.to_numpy()
    run_on_all_paths(fp8_mixed, (1,), lambda: (a.view(e5).copy(), bb.view(e4).copy(), h.copy(), f.copy(),
                                               np.zeros(B, np.float16), np.zeros(B, np.float32),
                                               np.zeros(B, np.float16), np.zeros(B, np.uint8).view(e5)),
                     lambda *args: want, constexprs={"B": B}, rtol=1e-3, atol=1e-3)


@enceladus.jit
def fp8_bits(x_ptr, bits_ptr, back_ptr, n, DST: tl.constexpr, B: tl.constexpr):
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs, mask=offs < n, other=-1.5)  # masked lanes take the literal, in x's fp8 type
    tl.store(bits_ptr + offs, x.to(tl.uint8, bitcast=True))
    tl.store(back_ptr + offs, (x.to(tl.int8, bitcast=True) ^ -128).to(DST, bitcast=True))  # sign flipped in the bits


@pytest.mark.parametrize("name", sorted(TYPES))
def test_fp8_bitcasts_and_the_other_of_a_masked_load(name):
    ty = TYPES[name]
    codes = RNG.integers(0, 256, 32).astype(np.uint8)
    n = 20
    other = model_encode(name, np.array([-1.5], np.float32))[0]
    want = np.where(np.arange(32) < n, codes, other).astype(np.uint8)
    run_on_all_paths(fp8_bits, (1,), lambda: (codes.view(ty.to_numpy()).copy(), np.zeros(32, np.uint8),
                                              np.zeros(32, np.uint8).view(ty.to_numpy()), n),
                     lambda *args: {1: want, 2: want ^ 0x80}, constexprs={"DST": ty, "B": 32})


@enceladus.jit
def fp8_plus_int(x_ptr, i_ptr, out_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.load(i_ptr + offs))


def test_fp8_with_an_integer_tile_is_refused_as_in_triton():
    x = np.zeros(8, np.uint8).view(tl.float8e4nv.to_numpy())
    i = np.zeros(8, np.int32)
    with pytest.raises(CompilationError) as info:
        fp8_plus_int[(1,)](x, i, np.zeros(8, np.float32), B=8)
    assert "unexpected type fp8e4nv and int32" in info.value.message and "x.to(tl.float16)" in info.value.fix
    with pytest.raises(TypeError, match="unexpected type fp8e4nv and int32.*x.to\\(tl.float16\\)"):
        JITFunction(fp8_plus_int.fn, interpret=True)[(1,)](x, i, np.zeros(8, np.float32), B=8)


def test_triton_spellings_of_the_fp8_types():
    from enceladus.triton.internal_testing import str_to_triton_dtype

    for spelling, ty in [("float8e4nv", tl.float8e4nv), ("float8_e4m3fn", tl.float8e4nv), ("float8_e5m2", tl.float8e5),
                         ("float8e4b15", tl.float8e4b15), ("float8_e4m3fnuz", tl.float8e4b8),
                         ("float8_e5m2fnuz", tl.float8e5b16), ("fp8e5b16", tl.float8e5b16)]:
        assert str_to_triton_dtype(spelling) == ty, spelling


@enceladus.jit
def fp8_moves(x_ptr, out_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + r[:, None] * B + r[None, :])  # [B, B] fp8 codes
    y = tl.trans(x)
    y = tl.flip(y, 0)
    a, b = tl.split(tl.reshape(y, (B, B // 2, 2)))
    z = tl.interleave(b, a)  # the pairs swapped
    z = tl.ravel(tl.expand_dims(z, 0))
    w = tl.cat(z, z, can_reorder=False)
    tl.store(out_ptr + tl.arange(0, 2 * B * B), w)


def test_fp8_tiles_move_like_their_codes():
    B = 8
    codes = RNG.integers(0, 256, (B, B)).astype(np.uint8)
    y = codes.T[::-1]
    z = y.reshape(B, B // 2, 2)[:, :, ::-1].reshape(-1)
    want = np.concatenate([z, z])
    for name in ("float8e5", "float8e4b15"):
        ty = TYPES[name]
        run_on_all_paths(fp8_moves, (1,), lambda t=ty: (codes.view(t.to_numpy()).copy(),
                                                        np.zeros(2 * B * B, np.uint8).view(t.to_numpy())),
                         lambda *args: {1: want}, constexprs={"B": B})
