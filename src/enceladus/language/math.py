"""``tl.math``: the math builtins, also reachable as ``tl.exp`` etc."""

from .builtins import (  # noqa: F401
    abs,
    cdiv,
    ceil,
    cos,
    erf,
    exp,
    exp2,
    fdiv,
    floor,
    fma,
    log,
    log2,
    maximum,
    minimum,
    rsqrt,
    sigmoid,
    sin,
    sqrt,
    umulhi,
)
