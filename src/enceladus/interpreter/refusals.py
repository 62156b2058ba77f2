"""Triton builtins the interpreter refuses, each with the Apple GPU limit behind it and the fix offered.

The interpreter is an independent implementation of the language (the oracle the compiler is tested
against), so it keeps its own table; ``tests/interpreter/test_builtin_coverage.py`` checks that every
public ``tl`` builtin is implemented in ``ops.OPS`` or refused here, and that both paths refuse the same
names.
"""

from __future__ import annotations

from typing import Any

# name -> (the Apple GPU limit, the fix offered)
REFUSED: dict[str, tuple[str, str]] = {
}


_FP64 = "Apple GPUs have no float64 (Metal has no double type)"
REFUSED["float64"] = (_FP64 + "; tl.float64 names the type, and values of it are refused where made", "use tl.float32")

# libdevice functions whose only forms take or return float64 (double2float_rn, ll2double_rz, rcp64h, ...)
LIBDEVICE_REFUSED: dict[str, tuple[str, str]] = dict.fromkeys([f"{a}_{m}" for a in ("double2float", "double2int", "double2uint", "double2ll", "double2ull", "ll2double", "ull2double") for m in ("rn", "rz", "rd", "ru")] + ["int2double_rn", "uint2double_rn", "hiloint2double", "double2loint", "double2hiint", "longlong_as_double", "double_as_longlong", "rcp64h", "isfinited"], (_FP64, "keep the values in float32 and use the float32 function (double2int_rn -> float2int_rn, " "ll2double_rz -> ll2float_rz, longlong_as_double -> int_as_float)"))


class RefusedBuiltinError(AttributeError):
    """A kernel used a Triton builtin that cannot run on Apple GPUs (the message says why and what to do)."""


def refuse(name: str) -> Any:
    """Raise the interpreter's refusal of ``tl.<name>`` (an ``AttributeError`` for names it does not know)."""
    if name in REFUSED:
        reason, fix = REFUSED[name]
        raise RefusedBuiltinError(f"tl.{name} cannot run on Apple GPUs: {reason}; fix: {fix}")
    raise AttributeError(f"module 'enceladus.language' has no attribute '{name}'")


def refuse_libdevice(name: str) -> Any:
    """Raise the interpreter's refusal of ``libdevice.<name>`` (an ``AttributeError`` for unknown names)."""
    if name in LIBDEVICE_REFUSED:
        reason, fix = LIBDEVICE_REFUSED[name]
        raise RefusedBuiltinError(f"libdevice.{name} cannot run on Apple GPUs: {reason}; fix: {fix}")
    raise AttributeError(f"module 'enceladus.language.extra.libdevice' has no attribute '{name}'")
