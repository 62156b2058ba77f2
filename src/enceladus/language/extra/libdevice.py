"""``libdevice``-style math on float tiles, mapped to Metal's ``precise::`` library (own code where Metal has no
such function: ``expm1``, ``log1p``, ``erfc``, ``cbrt``, ``hypot``).

Port a Triton kernel by replacing ``from triton.language.extra import libdevice`` (or ``...extra.cuda``) with
``from enceladus.language.extra import libdevice``. Integer inputs are refused; float16/bfloat16 compute in
float32 and round once.
"""

from ..builtins import _math_doc, abs, ceil, cos, erf, exp, exp2, floor, log, log2, rsqrt, sin, sqrt  # noqa: F401
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
