"""Triton builtins the compiler refuses, each with the Apple GPU limit behind it and the fix offered.

Every public ``tl`` builtin has a typing rule in ``semantic.RULES`` (or is written in the tile language,
``compiler/library.py``) or an entry here; ``tests/frontend/test_builtin_coverage.py`` checks it. The
interpreter keeps its own table (``interpreter/refusals.py``): it is an independent implementation.
"""

from __future__ import annotations

from typing import NamedTuple


class Refusal(NamedTuple):
    """Why a builtin cannot run on an Apple GPU, and what the user can do instead."""

    reason: str
    fix: str


REFUSED: dict[str, Refusal] = {
}


_FP64_LIMIT = "Apple GPUs have no float64 (Metal has no double type)"


def _fp64(name: str) -> Refusal:
    """The refusal of a libdevice function on float64 values, offering its float32 form."""
    fp32 = (name.replace("double2", "float2").replace("2double", "2float").replace("longlong_as_double", "int_as_float")
            .replace("double_as_longlong", "float_as_int"))
    fix = (f"keep the values in float32 and use libdevice.{fp32}" if fp32 != name and fp32 in FP32_FORMS
           else "keep the values in float32 (or their bits in int32/int64) and use the float32 functions")
    return Refusal(_FP64_LIMIT, fix)


# libdevice functions whose only forms take or return float64
FP64_LIBDEVICE = tuple(f"{stem}_{mode}" for stem in ("double2float", "double2int", "double2uint", "double2ll",
                                                     "double2ull", "ll2double", "ull2double")
                       for mode in ("rn", "rz", "rd", "ru")) + (
    "int2double_rn", "uint2double_rn", "hiloint2double", "double2loint", "double2hiint", "longlong_as_double",
    "double_as_longlong", "rcp64h", "isfinited")
# their float32 counterparts that libdevice has (named in the fixes)
FP32_FORMS = frozenset(f"{stem}_{mode}" for stem in ("float2int", "float2uint", "float2ll", "float2ull", "ll2float",
                                                     "ull2float", "int2float", "uint2float")
                       for mode in ("rn", "rz", "rd", "ru")) | {"int_as_float", "float_as_int"}

LIBDEVICE_REFUSED: dict[str, Refusal] = {name: _fp64(name) for name in FP64_LIBDEVICE}
REFUSED["float64"] = Refusal(_FP64_LIMIT + "; tl.float64 names the type, and values of it are refused where made",
                             "use tl.float32")

