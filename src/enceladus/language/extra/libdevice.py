"""``libdevice``-style math on float tiles, mapped to Metal's ``precise::`` library (own code where Metal has no
such function: ``expm1``, ``log1p``, ``erfc``, ``cbrt``, ``hypot``).

Port a Triton kernel by replacing ``from triton.language.extra import libdevice`` (or ``...extra.cuda``) with
``from enceladus.language.extra import libdevice``. Integer inputs are refused; float16/bfloat16 compute in
float32 and round once.
"""

from ..builtins import _math_doc, abs, ceil, cos, erf, exp, exp2, floor, fma, log, log2, rsqrt, sin, sqrt  # noqa: F401
from ..core import named_builtin

# one float argument
tanh = _math_doc("tanh", "hyperbolic tangent")
tan = _math_doc("tan", "tangent")
asin = _math_doc("asin", "arc sine")
acos = _math_doc("acos", "arc cosine")
atan = _math_doc("atan", "arc tangent")
sinh = _math_doc("sinh", "hyperbolic sine")
cosh = _math_doc("cosh", "hyperbolic cosine")
asinh = _math_doc("asinh", "inverse hyperbolic sine")
acosh = _math_doc("acosh", "inverse hyperbolic cosine")
atanh = _math_doc("atanh", "inverse hyperbolic tangent")
log10 = _math_doc("log10", "base-10 logarithm")
log1p = _math_doc("log1p", "log(1 + x), accurate for small x")
expm1 = _math_doc("expm1", "exp(x) - 1, accurate for small x")
exp10 = _math_doc("exp10", "10**x")
cbrt = _math_doc("cbrt", "cube root")
erfc = _math_doc("erfc", "complementary error function 1 - erf(x)")
trunc = _math_doc("trunc", "rounding toward zero")
round = _math_doc("round", "rounding to nearest, halfway cases away from zero")
rint = _math_doc("rint", "rounding to nearest even")
nearbyint = _math_doc("nearbyint", "rounding to nearest even")
fabs = _math_doc("fabs", "absolute value")


def _math2(name: str, what: str):
    def rule(x, y):
        pass

    return named_builtin(rule, name, f"Elementwise {what} of two float tiles (float32 computation).")


pow = _math2("pow", "x**y")
atan2 = _math2("atan2", "arc tangent of y/x using the signs of both (first argument y)")
copysign = _math2("copysign", "|x| with the sign of y")
hypot = _math2("hypot", "sqrt(x*x + y*y) without undue overflow")
fmod = _math2("fmod", "C fmod: x - trunc(x/y)*y")
fmin = _math2("fmin", "minimum ignoring NaN")
fmax = _math2("fmax", "maximum ignoring NaN")


def _pred(name: str, what: str):
    def rule(x):
        pass

    return named_builtin(rule, name, f"Elementwise test: {what} (an int1 tile).")


isnan = _pred("isnan", "x is NaN")
isinf = _pred("isinf", "x is infinite")
isfinite = _pred("isfinite", "x is neither NaN nor infinite")
signbit = _pred("signbit", "the sign bit of x is set")


def _fn(name: str, what: str):
    def rule(*args):
        pass

    return named_builtin(rule, name, what)


_MODE = {"rn": "to nearest even", "rz": "toward zero", "rd": "down (toward -inf)", "ru": "up (toward +inf)"}
_MODE_DOC = ("float32 only, rounded once {mode}; exact: computed on the integer significands, subnormals and "
             "overflow included")
for _m, _mode in _MODE.items():
    for _op, _what in (("add", "x + y"), ("sub", "x - y"), ("mul", "x * y"), ("div", "x / y"), ("fma", "x * y + z"),
                       ("rcp", "1 / x"), ("sqrt", "the square root of x")):
        globals()[f"{_op}_{_m}"] = _fn(f"{_op}_{_m}", f"Elementwise {_what}, {_MODE_DOC.format(mode=_mode)}.")
    for _t, _ty in (("int", "int32"), ("uint", "uint32 (returned as int32 bits, as in Triton)"), ("ll", "int64"),
                    ("ull", "uint64 (returned as int64 bits, as in Triton)")):
        globals()[f"float2{_t}_{_m}"] = _fn(
            f"float2{_t}_{_m}", f"float32 to {_ty}, rounded {_mode}; NaN gives 0, out-of-range values saturate.")
    for _t, _ty in (("int", "int32"), ("uint", "uint32"), ("ll", "int64"), ("ull", "uint64")):
        globals()[f"{_t}2float_{_m}"] = _fn(f"{_t}2float_{_m}", f"{_ty} to float32, rounded {_mode} (exact).")

clz = _fn("clz", "Count of leading zero bits of an int32 or int64 (an int32).")
popc = _fn("popc", "Count of set bits of an int32 or int64 (an int32).")
ffs = _fn("ffs", "Position (1-based) of the least significant set bit of an int32 or int64, 0 for 0 (an int32).")
brev = _fn("brev", "The bits of an int32 or int64 in reverse order.")
byte_perm = _fn("byte_perm", "byte_perm(x, y, s): bytes of (y:x) picked by the four selector nibbles of s (int32).")
mulhi = _fn("mulhi", "The high half of the full product of two 32- or 64-bit integers (signed or unsigned).")
mul24 = _fn("mul24", "Product of the low 24 bits of two int32/uint32 (sign-extended for int32), its low 32 bits.")
hadd = _fn("hadd", "(x + y) >> 1 without overflow, int32 or uint32.")
rhadd = _fn("rhadd", "(x + y + 1) >> 1 without overflow, int32 or uint32.")
sad = _fn("sad", "sad(x, y, z): |x - y| + z (z uint32), int32 or uint32.")
nextafter = _fn("nextafter", "The float32 next to x in the direction of y.")
remainder = _fn("remainder", "IEEE remainder x - n*y, n = x / y rounded to nearest even (exact).")
fdim = _fn("fdim", "x - y when x > y, else +0.")
ldexp = _fn("ldexp", "x * 2**n (float32 x, int32 n), rounded once.")
scalbn = _fn("scalbn", "x * 2**n (float32 x, int32 n), rounded once.")
ilogb = _fn("ilogb", "The unbiased exponent of x (an int32); INT_MIN for 0 and NaN, INT_MAX for infinities.")
logb = _fn("logb", "The unbiased exponent of x as a float32; -inf for 0.")
saturatef = _fn("saturatef", "x clamped to [0, 1]; NaN gives 0.")
finitef = _fn("finitef", "1 where x is finite, else 0 (an int32).")
llrint = _fn("llrint", "x rounded to nearest even, as int64 (saturating; NaN gives 0).")
llround = _fn("llround", "x rounded to nearest, ties away from zero, as int64 (saturating; NaN gives 0).")
sinpi = _fn("sinpi", "sin(pi * x), with the argument reduced exactly.")
cospi = _fn("cospi", "cos(pi * x), with the argument reduced exactly.")
rcbrt = _fn("rcbrt", "1 / cbrt(x).")
rhypot = _fn("rhypot", "1 / hypot(x, y).")
norm3d = _fn("norm3d", "sqrt(a*a + b*b + c*c) without undue overflow.")
rnorm3d = _fn("rnorm3d", "1 / norm3d(a, b, c).")
norm4d = _fn("norm4d", "sqrt(a*a + b*b + c*c + d*d) without undue overflow.")
rnorm4d = _fn("rnorm4d", "1 / norm4d(a, b, c, d).")
float_as_int = _fn("float_as_int", "The bits of a float32 as an int32.")
float_as_uint = _fn("float_as_uint", "The bits of a float32 (as int32, as Triton types it).")
int_as_float = _fn("int_as_float", "An int32's bits as a float32.")
uint_as_float = _fn("uint_as_float", "A uint32's bits as a float32.")
for _fast, _what in (("fast_sinf", "sin"), ("fast_cosf", "cos"), ("fast_tanf", "tan"), ("fast_expf", "exp"),
                     ("fast_exp10f", "exp10"), ("fast_logf", "log"), ("fast_log2f", "log2"), ("fast_log10f", "log10"),
                     ("fast_tanhf", "tanh"), ("fast_powf", "pow"), ("fast_dividef", "division")):
    globals()[_fast] = _fn(_fast, f"float32 {_what}; computed as the precise function (Metal's fast forms have "
                                  "no documented error bound over every input).")
rsqrt_rn = _fn("rsqrt_rn", "1 / sqrt(x), correctly rounded (float32).")
erfcx = _fn("erfcx", "The scaled complementary error function exp(x*x) * erfc(x) (float32).")
erfinv = _fn("erfinv", "The inverse error function: erf(erfinv(y)) == y (float32).")
erfcinv = _fn("erfcinv", "The inverse complementary error function, for z in [0, 2] (float32).")
normcdf = _fn("normcdf", "The standard normal cumulative distribution function (float32).")
normcdfinv = _fn("normcdfinv", "The inverse of normcdf, for p in [0, 1] (float32).")
tgamma = _fn("tgamma", "The gamma function (float32).")
lgamma = _fn("lgamma", "log(|gamma(x)|) (float32).")
cyl_bessel_i0 = _fn("cyl_bessel_i0", "The modified Bessel function of the first kind of order 0 (float32).")
cyl_bessel_i1 = _fn("cyl_bessel_i1", "The modified Bessel function of the first kind of order 1 (float32).")
j0 = _fn("j0", "The Bessel function of the first kind of order 0 (float32).")
j1 = _fn("j1", "The Bessel function of the first kind of order 1 (float32).")
jn = _fn("jn", "jn(n, x): the Bessel function of the first kind of integer order n (int32 n, float32 x).")
y0 = _fn("y0", "The Bessel function of the second kind of order 0 (float32; NaN for x < 0).")
y1 = _fn("y1", "The Bessel function of the second kind of order 1 (float32; NaN for x < 0).")
yn = _fn("yn", "yn(n, x): the Bessel function of the second kind of integer order n (int32 n, float32 x).")
