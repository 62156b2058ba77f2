"""fp32 division by a shared divisor (compiler/passes/reciprocal_division.py): one reciprocal per divisor value a
thread holds, then a multiply, guarded so that the result is within 1.5 ulp of the exact quotient and every special
value and overflowing quotient gets IEEE's exact answer (the proof: docs/floating_point.md, "Division").

Every kernel runs on every path against a float64 quotient; the interpreter divides exactly. The MSL tests count
the divisions a thread performs.
"""

import math
import re

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from paths import needs_cpu, run_on_all_paths

pytestmark = needs_cpu

FLT_MAX = float(np.finfo(np.float32).max)


@enceladus.jit
def div_rows(X, D, Y, N, BM: tl.constexpr, BN: tl.constexpr):
    """Y = X / D[:, None]: one divisor per row."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(X + rm[:, None] * N + rn[None, :])
    d = tl.load(D + rm)
    tl.store(Y + rm[:, None] * N + rn[None, :], x / d[:, None])


@enceladus.jit
def div_cols(X, D, Y, N, BM: tl.constexpr, BN: tl.constexpr):
    """Y = X / D[None, :]: one divisor per column."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(X + rm[:, None] * N + rn[None, :])
    d = tl.load(D + rn)
    tl.store(Y + rm[:, None] * N + rn[None, :], x / d[None, :])


@enceladus.jit
def div_scalar(X, D, Y, BLOCK: tl.constexpr):
    """Y = X / D[program]: one scalar divisor per program."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    d = tl.load(D + pid)
    tl.store(Y + offs, tl.load(X + offs) / d)


@enceladus.jit
def softmax_row(X, Y, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(X + row * N + cols, mask=cols < N, other=-float("inf"))
    num = tl.exp(x - tl.max(x, 0))
    tl.store(Y + row * N + cols, num / tl.sum(num, 0), mask=cols < N)


@enceladus.jit
def div_exact(X, D, Y, N, HOW: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    """The forms that must stay IEEE division: tl.div_rn, tl.math.div_rn, tl.fdiv(..., ieee_rounding=True)."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(X + rm[:, None] * N + rn[None, :])
    d = tl.load(D + rm)[:, None]
    if HOW == "div_rn":
        q = tl.div_rn(x, d)
    elif HOW == "math.div_rn":
        q = tl.math.div_rn(x, d)
    else:
        q = tl.fdiv(x, d, ieee_rounding=True)
    tl.store(Y + rm[:, None] * N + rn[None, :], q)


# --- the bound -----------------------------------------------------------------------------------------------
def ulps(q: np.ndarray, x: np.ndarray, d: np.ndarray) -> np.ndarray:
    """|q - x/d| in ulps of the exact quotient x/d, with the smaller gap at a power of two (the strictest
    reading); float64's quotient is within 2^-53 of the exact one, far below what is measured here."""
    z = x.astype(np.float64) / d.astype(np.float64)
    out = np.zeros(z.shape)
    for i, (qi, zi) in enumerate(zip(q.ravel().astype(np.float64), z.ravel())):
        mant, e = math.frexp(abs(zi))
        k = e - 1  # 2^k <= |z| < 2^(k+1)
        ulp = 2.0 ** (max(k, -126) - 23)
        if mant == 0.5 and k > -126:
            ulp /= 2  # at a power of two, the gap below
        out.flat[i] = abs(qi - zi) / ulp
    return out


def ieee(x: np.ndarray, d: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return (x.astype(np.float32) / d.astype(np.float32)).astype(np.float32)


def must_be_ieee(x: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Where the guards send the quotient to IEEE division (or IEEE's result is what the multiply gives anyway):
    a divisor outside [2^-126, 2^126] or not finite, x infinite or NaN, x zero, a quotient at or above 2^127."""
    with np.errstate(all="ignore"):
        ad = np.abs(d.astype(np.float64))
        z = np.abs(x.astype(np.float64) / d.astype(np.float64))
    return (~((ad >= 2.0**-126) & (ad <= 2.0**126)) | ~np.isfinite(x) | (x == 0) | ~(z < 2.0**127))


def check_quotients(q: np.ndarray, x: np.ndarray, d: np.ndarray, what: str) -> None:
    """Within 1.5 ulp of the exact quotient (subnormal results: within 1 ulp), bit for bit IEEE's where the guards
    apply, NaN exactly where IEEE gives NaN."""
    want = ieee(x, d)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(q), nan), f"{what}: NaNs differ at {np.argwhere(np.isnan(q) != nan)[:5]}"
    special = must_be_ieee(x, d) & ~nan
    bad = special & (q.view(np.int32) != want.view(np.int32))
    assert not bad.any(), (f"{what}: not IEEE's result at {np.argwhere(bad)[:5].tolist()}: got {q[bad][:5]}, "
                           f"IEEE {want[bad][:5]} (x {x[bad][:5]}, d {d[bad][:5]})")
    finite = ~special & ~nan
    err = ulps(q[finite], x[finite], d[finite])
    assert err.size == 0 or err.max() < 1.5, f"{what}: {err.max():.3f} ulp > 1.5"
    with np.errstate(all="ignore"):
        tiny = np.abs(x[finite].astype(np.float64) / d[finite].astype(np.float64)) < 2.0**-126
    assert err[tiny].size == 0 or err[tiny].max() < 1.0, f"{what}: subnormal result {err[tiny].max():.3f} ulp >= 1"


def adversarial_divisors(rng: np.random.Generator, n: int) -> np.ndarray:
    """Random divisors over the whole range, the edges of [2^-126, 2^126] and their neighbours, subnormals, the
    special values."""
    f32 = np.float32
    edges = []
    for e in (-126, 126, -125, 125, 127, -127, 0):
        p = f32(2.0**e)
        edges += [p, np.nextafter(p, f32(0)), np.nextafter(p, f32(np.inf))]
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 5e-39, FLT_MAX, -FLT_MAX, 3.0, -7.0, 0.1]
    fixed = np.array(edges + [-v for v in edges] + specials, np.float32)
    rand = (rng.choice([-1, 1], n) * 2.0 ** rng.uniform(-149, 127, n) * rng.uniform(1, 2, n)).astype(np.float32)
    rand[:n // 3] = rng.standard_normal(n // 3).astype(np.float32)  # ordinary divisors too
    return np.concatenate([fixed, rand])[:n].astype(np.float32)


def adversarial_numerators(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """Random x of every magnitude (so quotients overflow and underflow), with special values on some columns."""
    x = (rng.choice([-1, 1], shape) * 2.0 ** rng.uniform(-149, 127, shape) * rng.uniform(1, 2, shape))
    x = x.astype(np.float32)
    x[:, 1::4] = rng.standard_normal(x[:, 1::4].shape).astype(np.float32)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, FLT_MAX, -FLT_MAX, 1.0, 2.0**-126], np.float32)
    x[:, :len(specials)] = specials
    return x


# --- results on every path -------------------------------------------------------------------------------------
@pytest.mark.parametrize("kernel", ["rows", "cols"])
def test_shared_divisor_within_1_5_ulp(kernel):
    rng = np.random.default_rng(22 if kernel == "rows" else 23)
    M, N, BM = 128, 64, 16
    if kernel == "rows":
        d = adversarial_divisors(rng, M)
        fn = div_rows
    else:
        d = adversarial_divisors(rng, N)
        fn = div_cols
    x = adversarial_numerators(rng, (M, N))
    dd = d[:, None] if kernel == "rows" else d[None, :]

    def check(args, expected, path):
        check_quotients(np.asarray(args[2]), np.broadcast_to(x, (M, N)), np.broadcast_to(dd, (M, N)),
                        f"x / d ({kernel}) on the {path} path")

    run_on_all_paths(fn, (M // BM,), lambda: (x, d, np.zeros((M, N), np.float32), N), lambda *a: {},
                     check=check, constexprs={"BM": BM, "BN": N}, num_warps=4)


def test_scalar_divisor_within_1_5_ulp():
    rng = np.random.default_rng(24)
    P, BLOCK = 96, 256
    d = adversarial_divisors(rng, P)
    x = adversarial_numerators(rng, (P, BLOCK))

    def check(args, expected, path):
        check_quotients(np.asarray(args[2]), x, np.broadcast_to(d[:, None], x.shape), f"x / scalar on the {path} path")

    run_on_all_paths(div_scalar, (P,), lambda: (x, d, np.zeros_like(x)), lambda *a: {}, check=check,
                     constexprs={"BLOCK": BLOCK}, num_warps=2)


def test_every_special_value_is_ieee():
    """Each special divisor against each special numerator, checked by hand in docs/floating_point.md."""
    vals = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 2.0**-126, -(2.0**-126), 2.0**126,
                     float(np.nextafter(np.float32(2.0**126), np.float32(np.inf))), 1.0, -3.0, FLT_MAX, -FLT_MAX,
                     2.0**-127], np.float32)
    M = N = 16
    x = np.tile(vals, (M, 1))
    d = vals.copy()

    def check(args, expected, path):
        q = np.asarray(args[2])
        want = ieee(x, d[:, None])
        same = (q.view(np.int32) == want.view(np.int32)) | (np.isnan(q) & np.isnan(want))
        special = must_be_ieee(x, np.broadcast_to(d[:, None], x.shape))
        assert same[special].all(), f"{path}: {np.argwhere(~same & special)[:5].tolist()}"
        check_quotients(q, x, np.broadcast_to(d[:, None], x.shape), f"specials on the {path} path")

    run_on_all_paths(div_rows, (1,), lambda: (x, d, np.zeros((M, N), np.float32), N), lambda *a: {}, check=check,
                     constexprs={"BM": M, "BN": N}, num_warps=1)


def test_the_multiply_is_taken():
    """On ordinary inputs some compiled quotients differ from IEEE's by one ulp (x * (1/d) is not always
    correctly rounded), so the fast path runs; the interpreter divides exactly."""
    rng = np.random.default_rng(25)
    M, N, BM = 64, 128, 16
    x = rng.standard_normal((M, N)).astype(np.float32)
    d = rng.uniform(0.5, 3.0, M).astype(np.float32)
    outs = run_on_all_paths(div_rows, (M // BM,), lambda: (x, d, np.zeros((M, N), np.float32), N), lambda *a: {},
                            check=lambda args, e, path: check_quotients(np.asarray(args[2]), x,
                                                                        np.broadcast_to(d[:, None], x.shape), path),
                            constexprs={"BM": BM, "BN": N})
    want = ieee(x, d[:, None])
    assert np.array_equal(outs["interpreter"][2], want)
    differ = np.count_nonzero(outs["cpu"][2] != want)
    assert 0 < differ < x.size // 2, differ  # about a quarter here


def test_softmax_within_bound():
    rng = np.random.default_rng(26)
    rows, n = 16, 1000
    x = (rng.standard_normal((rows, n)) * 10).astype(np.float32)
    x[3, :] = -np.inf  # an all -inf row: 0/0 = NaN, as IEEE
    x[3, :500] = 0.0

    def reference(x, y, n):
        e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
        return {1: (e / e.sum(1, keepdims=True)).astype(np.float32)}

    run_on_all_paths(softmax_row, (rows,), lambda: (x, np.zeros_like(x), n), reference, constexprs={"BLOCK": 1024},
                     num_warps=8, rtol=4e-6, atol=1e-30)


@pytest.mark.parametrize("how", ["div_rn", "math.div_rn", "ieee_rounding"])
def test_div_rn_stays_ieee(how):
    rng = np.random.default_rng(27)
    M, N = 32, 64
    x = adversarial_numerators(rng, (M, N))
    d = adversarial_divisors(rng, M)
    run_on_all_paths(div_exact, (2,), lambda: (x, d, np.zeros((M, N), np.float32), N), lambda *a: {},
                     check=lambda args, e, path: np.testing.assert_array_equal(
                         np.asarray(args[2]).view(np.int32), ieee(x, d[:, None]).view(np.int32)),
                     constexprs={"HOW": how, "BM": 16, "BN": N})
    ck = div_exact.warmup(x, d, np.zeros((M, N), np.float32), N, HOW=how, BM=16, BN=N)
    assert "recip" not in ck.asm["ir"] and "enc_recip(" not in ck.asm["msl"]


@enceladus.jit
def fdiv_half(X, D, Y, N, SLASH: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(X + rm[:, None] * N + rn[None, :])
    d = tl.load(D + rm)[:, None]
    q = x / d if SLASH else tl.fdiv(x, d)
    tl.store(Y + rm[:, None] * N + rn[None, :], q.to(Y.dtype.element_ty))


@pytest.mark.parametrize("slash", [True, False])
def test_fp16_division(slash):
    """fp16 / fp16 computes in fp32 (Triton's typing promotes the operands of /), so the fp32 rule applies to it;
    tl.fdiv of fp16 tiles divides in fp16, per element, as before."""
    rng = np.random.default_rng(28)
    x = rng.standard_normal((16, 32)).astype(np.float16)
    d = rng.uniform(0.25, 4, 16).astype(np.float16)
    want = (x.astype(np.float32) / d[:, None].astype(np.float32)).astype(np.float16)
    run_on_all_paths(fdiv_half, (1,), lambda: (x, d, np.zeros_like(x), 32), lambda *a: {2: want},
                     constexprs={"SLASH": slash, "BM": 16, "BN": 32}, rtol=0, atol=0)
    ck = fdiv_half.warmup(x, d, x.copy(), 32, SLASH=slash, BM=16, BN=32)
    assert ("enc_recip(" in ck.asm["msl"]) == slash


# --- the MSL: divisions per thread -----------------------------------------------------------------------------
def kernel_body(msl: str) -> str:
    return msl[msl.index("kernel void"):]


def float_divisions(body: str) -> list[str]:
    """Divisions in the kernel body whose divisor is not an integer literal (index math divides by literals)."""
    return re.findall(r"/ (?!\d)[^;]*", re.sub(r"//[^\n]*", "", body))


def test_softmax_msl_one_division_per_thread():
    x = np.zeros((4, 1024), np.float32)
    ck = softmax_row.warmup(x, x.copy(), 1024, BLOCK=1024, num_warps=8)
    body = kernel_body(ck.asm["msl"])
    assert float_divisions(body) == []
    calls = [line for line in body.splitlines() if "enc_recip(" in line]
    # the row sum is a scalar: one reciprocal per thread, outside every loop, then 4 multiplies (1024 / 256 threads)
    assert len(calls) == 1 and re.match(r"\s*const float v\d+ = enc_recip\(v\d+\);", calls[0]), calls
    assert body.count("enc_div_recip(") == 1
    assert "fdiv_recip" in softmax_row.explain(x, x.copy(), 1024, BLOCK=1024, num_warps=8)


def registers_computing(line: str, n: int) -> int:
    """How many of a thread's n registers the loop ``for (e...) { if (!(COND)) continue; v[e] = enc_recip(..); }``
    computes: COND evaluated for each e (C's / and % on non-negative ints are Python's // and %)."""
    cond = re.search(r"if \(!\((.*)\)\) continue;", line).group(1)
    expr = cond.replace("&&", " and ").replace("/", "//")
    return sum(1 for e in range(n) if eval(expr, {"e": e}))


@pytest.mark.parametrize("kernel,distinct", [(div_rows, 4), (div_cols, 4)])
def test_broadcast_divisor_msl_one_division_per_distinct_value(kernel, distinct):
    """A [16, 128] quotient over 4 SIMD groups: each thread holds 16 elements of 4 rows x 4 columns, so 4 divisor
    values (rows: 4 rows; cols: 4 columns), and divides 4 times instead of 16."""
    x = np.zeros((16, 128), np.float32)
    ck = kernel.warmup(x, np.ones(128, np.float32), x.copy(), 128, BM=16, BN=128, num_warps=4)
    layout = ck.metadata["layouts"][0]
    assert layout.elems_per_thread == 16
    body = kernel_body(ck.asm["msl"])
    assert float_divisions(body) == []
    calls = [line for line in body.splitlines() if "enc_recip(" in line]
    assert len(calls) == 1
    assert registers_computing(calls[0], layout.elems_per_thread) == distinct


def test_quotients_tested_once_per_thread():
    """The overflow test runs once per thread for the whole tile, on the numerators (|x| <= 2^126 |d| proves
    |x * (1/d)| < 2^127), before any quotient: then the registers' quotients are straight-line multiplies, and
    only a tile with some numerator beyond the limit goes through enc_div_recip register by register
    (test_every_special_value_is_ieee and the adversarial tests take that branch, the softmax tests the other)."""
    x = np.zeros((4, 1024), np.float32)
    body = kernel_body(softmax_row.warmup(x, x.copy(), 1024, BLOCK=1024, num_warps=8).asm["msl"])
    tests = re.findall(r"for \(int e = 0; e < 4; \+\+e\) (slow\d+) = \1 \| !\(fabs\((v\d+)\[e\]\) <= "
                       r"enc_div_limit\((v\d+), (v\d+)\)\);", body)
    assert len(tests) == 1, body
    slow, x_, d, r = tests[0]
    assert re.search(rf"if \({slow}\) {{\s*for \(int e = 0; e < 4; \+\+e\) (v\d+)\[e\] = enc_div_recip\({x_}\[e\], "
                     rf"{d}, {r}\);\s*}} else {{\s*for \(int e = 0; e < 4; \+\+e\) \1\[e\] = {x_}\[e\] \* {r};\s*}}",
                     body), body
    assert body.count("enc_div_recip(") == 1


@pytest.mark.parametrize("d", [4.0, 0.25, 2.0**-126, 2.0**126, 3.0e-39, 2.0**127, np.inf, 0.0, np.nan])
def test_the_tile_test_agrees_with_the_register_test(d):
    """Numerators at the limit 2^126 |d| and one ulp on either side, infinities and NaN, in one tile with
    ordinary values: every quotient has enc_div_recip's bits (the cpu path against IEEE x / d where the
    register test takes it, and within 1.5 ulp elsewhere), whichever branch the tile test picks."""
    d = np.float32(d)
    with np.errstate(over="ignore"):  # 2^126 |d| is +inf for |d| >= 4, as in enc_div_limit
        lim = np.float32(2.0**126) * np.abs(d) if np.isfinite(d) else np.float32(1.0)
    row = [lim, np.nextafter(lim, np.float32(0)), np.nextafter(lim, np.float32(np.inf)), np.inf, -np.inf, 1.0, -3.0]
    x = np.tile(np.array(row + [0.5] * (16 - len(row)), np.float32), (16, 1))
    x[1:] = np.float32(1.5)  # rows 1..15: every numerator far below the limit (the multiply branch)
    dd = np.full(16, d, np.float32)

    def check(args, expected, path):
        q = np.asarray(args[2])
        check_quotients(q, x, np.broadcast_to(dd[:, None], x.shape), f"d = {d} on the {path} path")
        if path == "cpu":  # the compiled quotient is enc_div_recip's, bit for bit (the interpreter divides exactly)
            want = register_by_register(x, dd[:, None])
            same = (q.view(np.int32) == want.view(np.int32)) | (np.isnan(q) & np.isnan(want))
            assert same.all(), f"d = {d}: {np.argwhere(~same)[:5].tolist()}"

    with np.errstate(all="ignore"):
        run_on_all_paths(div_rows, (1,), lambda: (x, dd, np.zeros((16, 16), np.float32), 16), lambda *a: {},
                         check=check, constexprs={"BM": 16, "BN": 16}, num_warps=1)


def register_by_register(x: np.ndarray, d: np.ndarray) -> np.ndarray:
    """enc_recip and enc_div_recip of tables.py in float32 NumPy: r = 1/d where 2^-126 <= |d| <= 2^126, else inf;
    q = x * r where |q| < 2^127, else x / d."""
    with np.errstate(all="ignore"):
        ad = np.abs(d)
        r = np.where((ad >= np.float32(2.0**-126)) & (ad <= np.float32(2.0**126)), np.float32(1) / d, np.float32(np.inf))
        q = (x * r).astype(np.float32)
        return np.where(np.abs(q) < np.float32(2.0**127), q, x / d).astype(np.float32)


def test_only_blocks_with_a_division_are_rewritten():
    """The pass rewrites the blocks that hold an fp32 division and leaves every other block's op list as it is."""
    from enceladus.compiler import ir
    from enceladus.compiler.passes.reciprocal_division import divide_by_reciprocals
    from enceladus.compiler.semantic import Builder
    from enceladus.language.dtypes import float32

    fn = ir.Function("k")
    b = Builder(fn)
    x = b.splat(b.emit("const", [], ir.Type(float32), value=1.0), (8,))
    s = b.emit("neg", [b.emit("const", [], ir.Type(float32), value=2.0)], ir.Type(float32))
    loop = fn.append_op("for", [], [])
    body = ir.Block()
    body.ops.append(ir.Op("yield", []))
    loop.regions = [body]
    kept = body.ops
    b.emit("fdiv", [x, b.splat(s, (8,))], x.type)
    assert divide_by_reciprocals(fn) == 1
    assert body.ops is kept and [op.name for op in fn.ops][-3:] == ["recip", "splat", "fdiv_recip"]
