"""``triton._internal_testing`` under the compatibility entry: the helpers Triton's language tests import,
written for Enceladus.

``is_interpreter()`` is True: Triton's tests then take the branches Triton itself runs on CPU (its
interpreter), which are the ones that make sense without an NVIDIA or AMD GPU; every vendor predicate
(``is_cuda``, ``is_hip*``, ``is_hopper``...) is False. Data helpers follow Triton's conventions: seeded
NumPy inputs with no zero integers, unsigned data passed to kernels through :func:`triton.reinterpret`.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from numpy.random import RandomState

from .. import language as tl
from ..language.dtypes import BY_NAME
from .api import TensorWrapper, reinterpret

int_dtypes = ["int8", "int16", "int32", "int64"]
uint_dtypes = ["uint8", "uint16", "uint32", "uint64"]
integral_dtypes = int_dtypes + uint_dtypes
float_dtypes = ["float16", "float32", "float64"]
float_dtypes_with_bfloat16 = float_dtypes + ["bfloat16"]
dtypes = integral_dtypes + float_dtypes
dtypes_with_bfloat16 = dtypes + ["bfloat16"]
torch_float8_dtypes = ["float8_e4m3fn", "float8_e5m2"]
torch_dtypes = ["bool"] + int_dtypes + ["uint8"] + float_dtypes + ["bfloat16"]
tma_dtypes = sorted(set(dtypes_with_bfloat16) - {"int64", "uint64", "float64"})


def is_interpreter() -> bool:
    """True: Triton's tests run their CPU (interpreter) branches under the compatibility entry."""
    return True


def is_enceladus_interpreter() -> bool:
    """Whether kernels actually run in Enceladus's interpreter (``ENCELADUS_INTERPRET=1``)."""
    return os.environ.get("ENCELADUS_INTERPRET", "0") not in ("", "0", "false", "False")


def is_compile_warmup() -> bool:
    return False


def get_current_target() -> None:
    return None  # as Triton's helper in interpreter mode


def _false(*args: Any, **kwargs: Any) -> bool:
    return False


is_cuda = is_hip = is_xpu = is_hopper = is_hopper_or_newer = is_blackwell = is_blackwell_ultra = _false
is_ampere_or_newer = is_sm12x = is_rubin = _false
is_hip_cdna = is_hip_cdna2 = is_hip_cdna3 = is_hip_cdna4 = is_hip_rdna = is_hip_rdna3 = _false
is_hip_rdna4 = is_hip_rdna4m = is_hip_gfx1250 = is_hip_cdna3_or_newer = _false


def supports_tma(byval_only: bool = False) -> bool:
    return True  # as Triton's interpreter: tensor descriptors run


def supports_ws() -> bool:
    return True


def supports_clc() -> bool:
    return False


def skip_if_unsupported_cluster_size(num_ctas: int) -> None:
    """Clusters of programs do not exist on Apple GPUs; ``num_ctas`` is accepted and ignored."""


def tma_skip_msg(byval_only: bool = False) -> str:
    return "tensor descriptors are supported"


def get_hip_lds_size() -> int:
    return 32768


def random_int(low: int, high: int, *, warmup_value: Any = None, **kwargs: Any) -> int:
    import torch

    return int(torch.randint(low, high, size=(), **kwargs).item())


def random_float(*, warmup_value: float = 0.5, **kwargs: Any) -> float:
    import torch

    return float(torch.rand((), **kwargs).item())


def numpy_random(shape: Any, dtype_str: str, rs: RandomState | None = None, low: Any = None,
                 high: Any = None) -> np.ndarray:
    """Seeded test data (``RandomState(17)`` unless ``rs`` is given): integers over the type's range (or
    [low, high)) with zeros replaced by 1, floats from N(0, 1), bfloat16 as fp32 with its low 16 bits clear."""
    if isinstance(shape, int):
        shape = (shape,)
    rs = RandomState(seed=17) if rs is None else rs
    if dtype_str in integral_dtypes:
        info = np.iinfo(getattr(np, dtype_str))
        lo = info.min if low is None else max(low, info.min)
        hi = info.max if high is None else min(high, info.max)
        x = rs.randint(lo, hi, shape, dtype=getattr(np, dtype_str))
        x[x == 0] = 1  # no zeros: division tests must not divide by zero
        return x
    if dtype_str and "float8" in dtype_str:
        return rs.randint(20, 40, shape, dtype=np.int8)
    if dtype_str in float_dtypes:
        return rs.normal(0, 1, shape).astype(dtype_str)
    if dtype_str == "bfloat16":
        bits = rs.normal(0, 1, shape).astype("float32").view("uint32") & np.uint32(0xFFFF0000)
        return bits.view("float32")
    if dtype_str in ("bool", "int1", "bool_"):
        return rs.normal(0, 1, shape) > 0.0
    raise RuntimeError(f"Unknown dtype {dtype_str}")


def to_triton(x: np.ndarray, device: Any, dst_type: str | None = None) -> Any:
    """A torch tensor of ``x`` (unsigned data as the signed type of the same width, reinterpreted)."""
    import torch

    t = x.dtype.name
    if t in uint_dtypes:
        signed = x.astype(getattr(np, t[1:]))
        return reinterpret(torch.tensor(signed, device=device), getattr(tl, t))
    if dst_type and "float8" in dst_type:
        return reinterpret(torch.tensor(x, device=device), getattr(tl, dst_type))
    if t == "float32" and dst_type == "bfloat16":
        return torch.tensor(x, device=device).bfloat16()
    return torch.tensor(x, device=device)


def str_to_triton_dtype(x: str) -> Any:
    try:
        return BY_NAME[x]
    except KeyError:
        raise TypeError(f"Enceladus has no dtype '{x}'") from None


def torch_dtype_name(dtype: Any) -> str:
    if isinstance(dtype, tl.dtype):
        return str(dtype)
    s = str(dtype)
    if s.startswith("torch."):
        return s[len("torch."):]
    raise TypeError(f"not a triton or torch dtype: {type(dtype)}")


def to_numpy(x: Any) -> np.ndarray:
    """A NumPy copy of a torch tensor (bfloat16 as fp32; a reinterpreted tensor as its reinterpreted type)."""
    import torch

    if isinstance(x, TensorWrapper):
        return x.base.cpu().numpy().astype(getattr(np, torch_dtype_name(x.dtype)))
    if isinstance(x, torch.Tensor):
        if x.dtype is torch.bfloat16:
            return x.cpu().float().numpy()
        return x.cpu().numpy()
    raise ValueError(f"Not a triton-compatible tensor: {x}")


def unwrap_tensor(t: Any) -> Any:
    return t.base if isinstance(t, TensorWrapper) else t


def default_alloc_fn(size: int, align: int, stream: Any) -> Any:
    import torch

    return torch.empty(size, dtype=torch.int8)


def _fresh_knobs_impl(skipped_attr: Any = None) -> tuple[Any, Any]:
    from ..runtime import knobs

    groups = {name: getattr(knobs, name) for name in ("runtime", "cache", "autotuning", "compilation", "language")}
    saved = {name: g.copy() for name, g in groups.items()}

    def fresh() -> Any:
        return knobs

    def reset() -> None:
        for name, g in groups.items():
            g.__dict__.clear()
            g.__dict__.update(saved[name].__dict__)

    return fresh, reset
