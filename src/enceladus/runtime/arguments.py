"""What each kind of kernel argument becomes: its type in the signature, its specialization, its binding.

One table from Python argument kind to (signature type, specialization facts). The compiler sees
only the signature strings (``*fp32``, ``i32``...) and the facts; the launcher sees addresses and
packed scalars.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..language import dtypes

MAX_ELEMENTS = 2**31 - 1  # int32 offsets address at most this many elements (as in Triton)


@dataclass(frozen=True)
class ArgSpec:
    """The compile-time view of one runtime argument: its type and what is known about its value."""

    type: str  # '*fp32', 'i32', 'fp32', 'i1', 'none'
    divisible_by_16: bool = False  # ints: value % 16 == 0; pointers: address % 16 == 0
    equal_to_1: bool = False  # ints equal to 1 become the constant 1


def _int_type(value: int, name: str) -> str:
    if -(2**31) <= value < 2**31:
        return "i32"
    if -(2**63) <= value < 2**63:
        return "i64"
    if 0 <= value < 2**64:
        return "u64"
    raise ValueError(f"argument '{name}' = {value} does not fit in 64 bits; kernels take integers up to 2**64 - 1")


_FROM_NUMPY: dict[np.dtype, dtypes.dtype | None] = {}


def _from_numpy(dt: np.dtype) -> dtypes.dtype | None:
    # dtypes.from_numpy scans every dtype; launches look the same few up again and again.
    if dt.metadata:  # uint8 tagged as an fp8 type: equal (and hashed) like plain uint8, so not cached
        return dtypes.from_numpy(dt)
    ty = _FROM_NUMPY.get(dt, _FROM_NUMPY)
    if ty is _FROM_NUMPY:
        ty = _FROM_NUMPY[dt] = dtypes.from_numpy(dt)
    return ty  # type: ignore[return-value]


def array_spec(arr: np.ndarray, name: str, specialize: bool) -> ArgSpec:
    """Check that ``arr`` can be passed to a kernel and describe it."""
    ty = _from_numpy(arr.dtype)
    if ty is None:  # float64 arrays pass: kernels may only store into them (docs/porting.md, float64 outputs)
        hint = (" Supported: bool, int8-64, uint8-64, float16, bfloat16 (ml_dtypes), float32, and the fp8 "
                "types (ml_dtypes float8_e4m3fn/e5m2/e4m3fnuz/e5m2fnuz, or uint8 codes viewed as "
                "tl.float8....to_numpy())")
        raise TypeError(f"argument '{name}': arrays of dtype {arr.dtype} cannot be passed to a kernel.{hint}")
    if any(s < 0 for s in arr.strides):
        raise ValueError(
            f"argument '{name}': arrays with negative strides (e.g. x[::-1]) cannot be passed; "
            "pass np.ascontiguousarray(x) instead"
        )
    if any(s % arr.itemsize for s in arr.strides):
        raise ValueError(f"argument '{name}': strides {arr.strides} are not multiples of the item size")
    if arr.size > MAX_ELEMENTS:
        raise ValueError(
            f"argument '{name}' has {arr.size} elements; kernels index with int32 offsets, so arrays are limited "
            f"to {MAX_ELEMENTS} elements. Split the work into several arrays or launches."
        )
    aligned = specialize and arr.__array_interface__["data"][0] % 16 == 0
    return ArgSpec("*" + ty.name, divisible_by_16=aligned)


def scalar_spec(value: object, name: str, specialize: bool) -> ArgSpec:
    """Describe a Python scalar argument (Triton's rules: 1 is a constant, multiples of 16 noted)."""
    if value is None:
        return ArgSpec("none")
    if isinstance(value, (bool, np.bool_)):
        return ArgSpec("i1")
    if isinstance(value, (int, np.integer)):
        value = int(value)
        ty = _int_type(value, name)
        if not specialize:
            return ArgSpec(ty)
        return ArgSpec(ty, divisible_by_16=value % 16 == 0, equal_to_1=value == 1)
    if isinstance(value, (float, np.floating)):
        return ArgSpec("fp32")
    raise TypeError(
        f"argument '{name}' has type {type(value).__name__}; kernels take NumPy arrays, enceladus.Tensor, "
        "torch tensors, ints, floats, bools and None (or annotate the parameter with tl.constexpr)"
    )


def spec_of(value: object, name: str, specialize: bool) -> ArgSpec:
    """The ArgSpec of any runtime argument."""
    if isinstance(value, np.ndarray):
        return array_spec(value, name, specialize)
    if hasattr(value, "__enceladus_array__"):
        return array_spec(value.__enceladus_array__(), name, specialize)
    if is_torch_mps(value):
        return _torch_mps_spec(value, name, specialize)
    if type(value).__module__.startswith("mlx"):
        return array_spec(as_numpy(value), name, specialize)
    torch_array = _torch_cpu_array(value, name)
    if torch_array is not None:
        return array_spec(torch_array, name, specialize)
    return scalar_spec(value, name, specialize)


def is_torch_mps(value: object) -> bool:
    """A PyTorch tensor on the ``mps`` device (launched through torch.mps.compile_shader, see
    backends/metal/interop.py)."""
    return type(value).__module__.startswith("torch") and getattr(getattr(value, "device", None), "type", "") == "mps"


def _torch_mps_spec(value: Any, name: str, specialize: bool) -> ArgSpec:
    """The ArgSpec of an mps tensor, from its metadata (its memory is not host-addressable)."""
    dtype_name = str(value.dtype).removeprefix("torch.")
    try:
        np_dtype = (dtypes.bfloat16_numpy() if dtype_name == "bfloat16" else
                    _TORCH_FP8[dtype_name].to_numpy() if dtype_name in _TORCH_FP8 else np.dtype(dtype_name))
    except TypeError:
        raise TypeError(f"argument '{name}': torch dtype {value.dtype} cannot be passed to a kernel") from None
    ty = _from_numpy(np_dtype)
    if ty is None or ty.is_fp64():
        raise TypeError(f"argument '{name}': mps tensors of dtype {value.dtype} cannot be passed to a kernel")
    if value.numel() > MAX_ELEMENTS:
        raise ValueError(f"argument '{name}' has {value.numel()} elements; kernels index with int32 offsets "
                         f"(at most {MAX_ELEMENTS})")
    aligned = specialize and (value.storage_offset() * value.element_size()) % 16 == 0  # MTLBuffers start aligned
    return ArgSpec("*" + ty.name, divisible_by_16=aligned)


def _torch_cpu_array(value: object, name: str) -> np.ndarray | None:
    """A NumPy view of a PyTorch CPU tensor (zero-copy), or None if ``value`` is not a torch tensor."""
    mod = type(value).__module__
    if not mod.startswith("torch"):
        return None
    if value.device.type != "cpu":
        raise ValueError(
            f"argument '{name}' is a torch tensor on device '{value.device}'; this backend runs on the CPU, so pass "
            "a CPU tensor (x.cpu())"
        )
    try:
        return as_numpy(value)
    except (TypeError, RuntimeError) as e:  # e.g. sparse or quantized tensors have no NumPy view
        raise TypeError(f"argument '{name}': this torch tensor cannot be passed to a kernel ({e}); pass a dense, "
                        "strided tensor (x.to_dense().contiguous())") from None


# torch's float8 dtypes and the Triton types with the same format (float8e4b15 has no torch type)
_TORCH_FP8 = {"float8_e4m3fn": dtypes.float8e4nv, "float8_e5m2": dtypes.float8e5,
              "float8_e4m3fnuz": dtypes.float8e4b8, "float8_e5m2fnuz": dtypes.float8e5b16}


def as_numpy(value: object) -> np.ndarray:
    """The NumPy array (a view, never a copy) behind an array-like kernel argument."""
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__enceladus_array__"):
        return value.__enceladus_array__()
    if type(value).__module__.startswith("mlx"):  # evaluated, then its shared memory (zero-copy)
        from ..backends.metal.interop import mlx_host_view

        return mlx_host_view(value)
    if type(value).__module__.startswith("torch"):
        import torch

        if value.dtype == torch.bfloat16:
            return value.view(torch.int16).numpy().view(dtypes.bfloat16_numpy())
        fp8 = _TORCH_FP8.get(str(value.dtype).removeprefix("torch."))
        if fp8 is not None:  # torch has no NumPy view of float8: the codes, tagged with Triton's type
            return value.detach().view(torch.uint8).numpy().view(fp8.to_numpy())
        return value.detach().numpy()
    raise TypeError(f"{type(value).__name__} is not an array")


def extent(arr: np.ndarray) -> tuple:
    """What a kernel may touch through an array argument, for the cpu backend's access checks:
    ``(lo, hi, itemsize)`` when its elements fill the bytes ``[lo, hi)``, else ``(lo, hi, itemsize, shape,
    strides)`` of a strided view (dimensions of size > 1 and stride != 0, byte strides made positive,
    largest first). An access is in bounds only if every byte it touches lies in an element."""
    base = arr.__array_interface__["data"][0]
    isz = arr.itemsize
    if arr.flags.c_contiguous or arr.flags.f_contiguous:
        return (base, base + arr.nbytes, isz)
    lo = hi = base
    dims = []
    for n, s in zip(arr.shape, arr.strides):
        if n == 0:
            return (base, base, isz)
        if s < 0:
            lo += (n - 1) * s
        else:
            hi += (n - 1) * s
        if n > 1 and s != 0:
            dims.append((abs(s), n))
    dims.sort(reverse=True)
    return (lo, hi + isz, isz, tuple(n for _, n in dims), tuple(s for s, _ in dims))


def word_extent(ext: tuple) -> tuple:
    """The extent of an argument reached by 16-bit atomics: its span widened to whole aligned 32-bit words, since
    the atomic's compare-and-swap loop reads and rewrites the word that holds the element (the runtime makes sure
    those words are memory the argument owns: ``word_padded``)."""
    return (ext[0] & ~3, (ext[1] + 3) & ~3, ext[2])


def word_padded(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """``arr`` bound for 16-bit atomics: ``(arr, None)`` when the 32-bit words holding its elements are its own
    bytes (its span starts and ends on a 4-byte boundary), else ``(copy, arr)``: a copy in a fresh buffer padded to
    whole words, with the same strides and the same address modulo 4. The launcher copies the elements back into
    ``arr`` afterwards (elements only, so bytes between the elements of a strided view are never written)."""
    lo, hi = extent(arr)[:2]
    if lo % 4 == 0 and hi % 4 == 0:
        return arr, None
    head = lo % 4
    size = (head + hi - lo + 3) // 4 * 4
    raw = np.zeros(size + 16, np.uint8)
    start = -raw.ctypes.data % 16  # 16-byte aligned, as a fresh allocation of either backend
    base = arr.__array_interface__["data"][0]
    copy = np.ndarray(arr.shape, arr.dtype, buffer=raw[start:start + size], offset=head + base - lo,
                      strides=arr.strides)
    copy[...] = arr
    return copy, arr
