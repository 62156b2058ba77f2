"""Typing rules of the ``libdevice`` functions that lower to the ``libdevice`` IR op (one MSL helper each,
``codegen_msl/libdevice.py``), and of those built from existing ops (``fast_*``, bit reinterpretations).

The accepted argument types are Triton 3.9's (``triton/language/extra/cuda/libdevice.py``) without its float64
forms: an argument of another type is an error with a fix, as in Triton.
"""

from __future__ import annotations

from typing import Any

from ..language import dtypes as D
from .semantic import RULES, Builder, SemanticError, is_value

I32, U32, I64, U64, F32 = "int32", "uint32", "int64", "uint64", "fp32"
def _public(name: str) -> str:
    return "float32" if name == "fp32" else name


_ROUNDED = {"add": 2, "sub": 2, "mul": 2, "div": 2, "fma": 3, "rcp": 1, "sqrt": 1}

# name -> [(argument dtypes, result dtype)]
SIGNATURES: dict[str, list[tuple[tuple[str, ...], str]]] = {
    **{f"{op}_{m}": [((F32,) * n, F32)] for op, n in _ROUNDED.items() for m in ("rn", "rz", "rd", "ru")},
    **{f"float2{t}_{m}": [((F32,), r)] for t, r in (("int", I32), ("uint", I32), ("ll", I64), ("ull", I64))
       for m in ("rn", "rz", "rd", "ru")},
    **{f"{t}2float_{m}": [((a,), F32)] for t, a in (("int", I32), ("uint", U32), ("ll", I64), ("ull", U64))
       for m in ("rn", "rz", "rd", "ru")},
    "clz": [((I32,), I32), ((I64,), I32)], "popc": [((I32,), I32), ((I64,), I32)],
    "ffs": [((I32,), I32), ((I64,), I32)], "brev": [((I32,), I32), ((I64,), I64)],
    "byte_perm": [((I32, I32, I32), I32)],
    "mulhi": [((I32, I32), I32), ((U32, U32), U32), ((I64, I64), I64), ((U64, U64), U64)],
    "mul24": [((I32, I32), I32), ((U32, U32), U32)], "hadd": [((I32, I32), I32), ((U32, U32), U32)],
    "rhadd": [((I32, I32), I32), ((U32, U32), U32)], "sad": [((I32, I32, U32), I32), ((U32, U32, U32), U32)],
    "nextafter": [((F32, F32), F32)], "remainder": [((F32, F32), F32)], "fdim": [((F32, F32), F32)],
    "ldexp": [((F32, I32), F32)], "scalbn": [((F32, I32), F32)], "ilogb": [((F32,), I32)], "logb": [((F32,), F32)],
    "saturatef": [((F32,), F32)], "finitef": [((F32,), I32)], "llrint": [((F32,), I64)],
    "llround": [((F32,), I64)], "sinpi": [((F32,), F32)], "cospi": [((F32,), F32)], "rcbrt": [((F32,), F32)],
    "rhypot": [((F32, F32), F32)], "norm3d": [((F32,) * 3, F32)], "rnorm3d": [((F32,) * 3, F32)],
    "norm4d": [((F32,) * 4, F32)], "rnorm4d": [((F32,) * 4, F32)],
    **{name: [((F32,), F32)] for name in ("rsqrt_rn", "erfcx", "erfinv", "erfcinv", "normcdf", "normcdfinv", "tgamma",
                                         "lgamma", "cyl_bessel_i0", "cyl_bessel_i1", "j0", "j1", "y0", "y1")},
    "jn": [((I32, F32), F32)], "yn": [((I32, F32), F32)],
}


def _libdevice_rule(name: str):
    def rule_fn(b: Builder, *args: Any) -> Any:
        sigs = SIGNATURES[name]
        arity = len(sigs[0][0])
        if len(args) != arity:
            raise SemanticError(f"libdevice.{name} takes {arity} argument(s), got {len(args)}",
                                f"call libdevice.{name}({', '.join(f'x{i}' for i in range(arity))})")
        values = [a if is_value(a) else b.const(a, D.literal_dtype(a) if not isinstance(a, float) else D.float32)
                  for a in args]
        have = tuple(v.type.element.name for v in values)
        for want, result in sigs:  # noqa: B007 (result: the match)
            if have == want:
                break
        else:
            forms = " or ".join("(" + ", ".join(w) + ")" for w, _ in sigs)
            raise SemanticError(f"libdevice.{name} expects {forms}, got ({', '.join(have)})",
                                "convert the arguments first, e.g. x.to(tl." + _public(sigs[0][0][0]) + ")")
        shape = b.broadcast_shapes(*(v.type.shape for v in values))
        values = [b.broadcast_to(v, shape) if shape else v for v in values]
        return b.emit("libdevice", values, values[0].type.with_element(D.dtype(result)), fn=name)

    rule_fn.__name__ = name
    RULES[name] = rule_fn


for _name in SIGNATURES:
    _libdevice_rule(_name)

# fast_* are the precise functions here: Metal's fast:: forms have no documented bound over every input
FAST = {"fast_sinf": "sin", "fast_cosf": "cos", "fast_tanf": "tan", "fast_expf": "exp", "fast_exp10f": "exp10",
        "fast_logf": "log", "fast_log2f": "log2", "fast_log10f": "log10", "fast_tanhf": "tanh", "fast_powf": "pow",
        "fast_dividef": "fdiv"}


def _fast_rule(name: str, target: str):
    def rule_fn(b: Builder, *args: Any) -> Any:
        for a in args:
            if is_value(a) and not a.type.element.is_fp32():
                raise SemanticError(f"libdevice.{name} expects fp32 arguments, got {a.type.element}",
                                    f"convert first: libdevice.{name}(x.to(tl.float32))")
        return RULES[target](b, *args)

    rule_fn.__name__ = name
    RULES[name] = rule_fn


for _name, _target in FAST.items():
    _fast_rule(_name, _target)

# bit reinterpretations; Triton types float_as_uint as int32, as its libdevice table does
BITCASTS = {"float_as_int": (F32, I32), "float_as_uint": (F32, I32), "int_as_float": (I32, F32),
            "uint_as_float": (U32, F32)}


def _bitcast_rule(name: str, src: str, dst: str):
    def rule_fn(b: Builder, x: Any) -> Any:
        if not is_value(x):
            x = b.const(x, D.dtype(src))
        if x.type.element.name != src:
            raise SemanticError(f"libdevice.{name} expects a {src} argument, got {x.type.element}",
                                f"convert first: libdevice.{name}(x.to(tl.{_public(src)}))")
        return b.cast(x, D.dtype(dst), bitcast=True)

    rule_fn.__name__ = name
    RULES[name] = rule_fn


for _name, (_src, _dst) in BITCASTS.items():
    _bitcast_rule(_name, _src, _dst)
