"""``enceladus.compile_shader``: hand-written MSL, launched like generated kernels.

    lib = enceladus.compile_shader(msl_source)
    lib.add(x, y, out, n, threadgroups=(g, 1, 1), threads_per_threadgroup=(256, 1, 1))
    lib.add(x, y, out, n, threads=(n, 1, 1))          # dispatchThreads: partial edge threadgroups

Arguments bind to the kernel's ``[[buffer(i)]]`` parameters in declaration order: arrays (NumPy,
``enceladus.Tensor``, torch CPU) to pointers, Python scalars to ``constant T&`` parameters, converted
to the declared MSL type with a range check. ``arg_casts={name_or_index: numpy_dtype}`` says how to
pack a value whose parameter type the signature cannot describe (a struct): the value is converted
with ``np.array(value, dtype)``. ``threadgroup_memory={i: nbytes}`` sizes ``[[threadgroup(i)]]``
parameters. Launches on Tensors only are queued on the current stream; anything else is synchronous.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..language import dtypes as D
from . import arguments
from .backend import get_backend
from .launch import debug_enabled, warn_unknown_addresses
from .stream import current_stream, wait_all_idle
from .tensor import Tensor

_SCALARS: dict[str, str] = {
    "float": "float32", "half": "float16", "bfloat": "bfloat16", "bool": "bool",
    "char": "int8", "uchar": "uint8", "short": "int16", "ushort": "uint16", "int": "int32", "uint": "uint32",
    "long": "int64", "ulong": "uint64", "size_t": "uint64", "ptrdiff_t": "int64",
    "int8_t": "int8", "uint8_t": "uint8", "int16_t": "int16", "uint16_t": "uint16", "int32_t": "int32",
    "uint32_t": "uint32", "int64_t": "int64", "uint64_t": "uint64",
    "atomic_int": "int32", "atomic_uint": "uint32", "atomic_float": "float32", "atomic_bool": "bool",
    "atomic_ulong": "uint64",
}
_VECTOR = re.compile(r"^(?:packed_)?([a-z]+?)([234])$|^vec<\s*(\w+)\s*,\s*([234])\s*>$")
_QUALIFIERS = {"device", "constant", "const", "volatile", "thread", "metal::", "restrict"}


def _element(msl_type: str) -> tuple[str, np.dtype | None, int]:
    """(base type text, NumPy dtype of its scalar elements or None for structs, vector width)."""
    text = msl_type.replace("metal::", "").rstrip("*& ").strip()
    base = " ".join(t for t in text.split() if t not in _QUALIFIERS)
    if base in _SCALARS:
        return base, _np_dtype(_SCALARS[base]), 1
    m = _VECTOR.match(base)
    if m:
        scalar, width = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        if scalar in _SCALARS:
            return base, _np_dtype(_SCALARS[scalar]), int(width)
    return base, None, 1


def _np_dtype(name: str) -> np.dtype:
    return D.bfloat16_numpy() if name == "bfloat16" else np.dtype(name)


def _is_array(value: Any) -> bool:
    return (isinstance(value, np.ndarray) or hasattr(value, "__enceladus_array__")
            or type(value).__module__.startswith("torch"))


class ShaderKernel:
    """One kernel of a compiled shader library: call it with arguments and a dispatch size."""

    def __init__(self, library: ShaderLibrary, name: str) -> None:
        self.name = name
        self.program = library.library.function(name)
        self.signature = self.program.signature
        self.params = list(self.signature.buffer_params)
        self._launchers: dict[Any, Any] = {}

    def __repr__(self) -> str:
        return f"<ShaderKernel {self.signature}>"

    def _fail(self, exc: type[Exception], message: str) -> Exception:
        return exc(f"kernel '{self.name}': {message}\n  signature: {self.signature}")

    def _bind(self, args: Sequence[Any], arg_casts: Mapping[Any, Any]) -> tuple[list[int], list[Any], bool]:
        """Addresses in parameter order, the bound objects (for keepalive / sizes), and whether every user
        array is a Tensor (the launch may then be queued)."""
        if len(args) != len(self.params):
            names = ", ".join(f"{p.name} ({p.msl_type})" for p in self.params)
            raise self._fail(TypeError, f"takes {len(self.params)} buffer arguments ({names}) but {len(args)} were "
                                        "given; arrays bind to pointer parameters and scalars to `constant T&` "
                                        "parameters, in [[buffer(i)]] declaration order")
        addresses, objects = [], []
        only_tensors = True
        for i, (p, value) in enumerate(zip(self.params, args)):
            if _is_array(value) and not isinstance(value, Tensor):
                only_tensors = False
            what = f"argument {i} ('{p.name}', {p.msl_type})"
            base, elem, width = _element(p.msl_type)
            cast = arg_casts.get(p.name, arg_casts.get(i))
            if p.msl_type.endswith("*"):
                if not _is_array(value):
                    raise self._fail(TypeError, f"{what} is a pointer: pass an array or enceladus.Tensor, got "
                                                f"{type(value).__name__}")
                arr = arguments.as_numpy(value)
                if elem is not None and arr.dtype != elem:
                    raise self._fail(TypeError, f"{what} points to {base} ({elem}) but the array has dtype "
                                                f"{arr.dtype}; convert it (e.g. x.astype(np.{elem}))")
                if "const" not in p.msl_type.split() and p.address_space == "device" and not arr.flags.writeable:
                    raise self._fail(ValueError, f"{what} is writable by the kernel but the array is read-only; "
                                                 "pass a writeable copy or declare the parameter const")
                if not arr.flags.aligned:
                    raise self._fail(ValueError, f"{what}: the array is not aligned to its element size")
                objects.append(value if isinstance(value, Tensor) else arr)
                addresses.append(int(arr.__array_interface__["data"][0]))
                continue
            # A reference parameter: a scalar (or struct / vector) value, copied now.
            if _is_array(value) and cast is None:
                arr = arguments.as_numpy(value)
                self._check_reference_array(what, base, elem, width, arr)
                objects.append(value if isinstance(value, Tensor) else arr)
                addresses.append(int(arr.__array_interface__["data"][0]))
                continue
            storage = self._scalar_storage(what, base, elem, width, value, cast)
            objects.append(storage)
            addresses.append(storage.ctypes.data)
        return addresses, objects, only_tensors

    def _check_reference_array(self, what: str, base: str, elem: np.dtype | None, width: int,
                               arr: np.ndarray) -> None:
        """An array bound to a ``constant T&`` parameter: the kernel reads one T from it, so it must hold
        (at least) one T of the right element type, contiguously."""
        if elem is not None:
            if arr.dtype != elem:
                raise self._fail(TypeError, f"{what} is a reference to {base} but the array has dtype {arr.dtype} "
                                            f"(the kernel would read its bytes as {base}); pass "
                                            f"np.array(value, np.{elem}) or a Python scalar")
            need = 4 if width == 3 else width
            if arr.size < need:
                raise self._fail(ValueError, f"{what} is a reference to {base} ({need} element(s) of {elem}) but "
                                             f"the array has {arr.size}; pass a value of that type")
            if not (arr.flags.c_contiguous or arr.flags.f_contiguous):
                raise self._fail(ValueError, f"{what} is a reference to {base}: pass a contiguous array")
        elif arr.nbytes == 0:
            raise self._fail(ValueError, f"{what} is a reference to {base} but the array is empty; pass a "
                                         "value of that type")

    def _scalar_storage(self, what: str, base: str, elem: np.dtype | None, width: int, value: Any,
                        cast: Any) -> np.ndarray:
        if cast is not None:
            try:
                return np.ascontiguousarray(np.array(value, dtype=np.dtype(cast)))
            except (TypeError, ValueError) as exc:
                raise self._fail(TypeError, f"{what}: cannot convert {value!r} with arg_casts dtype {cast}: "
                                            f"{exc}") from None
        if isinstance(value, (bytes, bytearray, np.void)):
            return np.frombuffer(bytes(value), np.uint8).copy()
        if elem is None:
            raise self._fail(TypeError, f"{what}: the signature does not say how to pack a "
                                        f"{type(value).__name__} as '{base}'; pass a NumPy structured value "
                                        f"(np.array(..., dtype)) or arg_casts={{'{base}': numpy_dtype}}")
        values = np.asarray(value)
        if values.size != width:
            raise self._fail(TypeError, f"{what} needs {width} value(s), got {values.size}")
        flat = values.reshape(-1).tolist()
        for v in flat:
            _check_range(self, what, base, elem, v)
        out = np.zeros(4 if width == 3 else width, elem)  # a 3-vector occupies 4 slots, as in Metal
        out[:width] = flat
        return out

    def __call__(self, *args: Any, threadgroups: Sequence[int] | None = None,
                 threads_per_threadgroup: Sequence[int] | None = None, threads: Sequence[int] | None = None,
                 threadgroup_memory: Mapping[int, int] | None = None, arg_casts: Mapping[Any, Any] | None = None,
                 debug: bool | None = None, timeout: float | None = None) -> None:
        """Launch: ``threadgroups=`` + ``threads_per_threadgroup=`` (dispatchThreadgroups) or ``threads=``
        (dispatchThreads; ``threads_per_threadgroup`` defaults to (min(256, nx), 1, 1)). ``timeout``: seconds
        before a cpu-backend launch is stopped (default ``ENCELADUS_TIMEOUT``)."""
        if (threadgroups is None) == (threads is None):
            raise self._fail(TypeError, "pass exactly one of threadgroups=(gx, gy, gz) (with "
                                        "threads_per_threadgroup=) or threads=(nx, ny, nz)")
        if threadgroups is not None and threads_per_threadgroup is None:
            raise self._fail(TypeError, "threadgroups= needs threads_per_threadgroup=(tx, ty, tz)")
        if threads is not None and threads_per_threadgroup is None:
            first = int(threads[0]) if isinstance(threads, Sequence) else int(threads)
            threads_per_threadgroup = (max(1, min(256, first)), 1, 1)
        tptg = _triple(self, "threads_per_threadgroup", threads_per_threadgroup, 1)
        if threads is not None:
            gsize = _triple(self, "threads", threads, 0)
            groups = tuple(-(-g // t) for g, t in zip(gsize, tptg))
        else:
            groups = _triple(self, "threadgroups", threadgroups, 0)
            gsize = tuple(g * t for g, t in zip(groups, tptg))
        addresses, objects, only_tensors = self._bind(args, arg_casts or {})
        slots = [p.index for p in self.params]
        checked = getattr(self.program, "takes_extents", False)  # the cpu backend checks accesses against them
        extents = [o._extent if isinstance(o, Tensor) else arguments.extent(arguments.as_numpy(o))
                   for o in objects] if checked else None
        if debug or (debug is None and debug_enabled()) or timeout is not None:
            if not checked and timeout is not None:
                raise self._fail(ValueError, "timeout= is supported by the cpu backend only")
            wait_all_idle()
            buffers = dict(zip(slots, addresses))
            kw = {"threadgroup_memory": threadgroup_memory, "debug": bool(debug or (debug is None and debug_enabled())),
                  "extents": dict(zip(slots, extents or [])), "timeout": timeout}
            if threads is not None:
                self.program.dispatch_threads(gsize, tptg, buffers, **kw)
            else:
                self.program.launch(groups, tptg, buffers, **kw)
            if checked:  # pointers made from integer addresses into memory Enceladus does not know
                warn_unknown_addresses(self.name, self.program, stacklevel=3)
            return
        tg_key = tuple(sorted((threadgroup_memory or {}).items()))
        launcher = self._launchers.get((tptg, tg_key))
        if launcher is None:
            order = sorted(range(len(slots)), key=lambda i: slots[i])
            launcher = self.program.launcher([slots[i] for i in order], tptg, None, "", threadgroup_memory)
            self._launchers[(tptg, tg_key)] = launcher = (launcher, order)
        fast, order = launcher
        if 0 in groups:
            return
        try:
            if checked:
                packet = fast.pack(groups, gsize, *[addresses[i] for i in order],
                                   extents=[extents[i] for i in order])  # type: ignore[index]
            else:
                packet = fast.pack(groups, gsize, *[addresses[i] for i in order])
        except Exception as exc:  # struct.error: a grid past 32-bit thread ids
            raise self._fail(ValueError, f"grid {groups} x {tptg} overflows 32-bit thread ids") from exc
        queue = current_stream()._queue
        ordered = [objects[i] for i in order]  # parallel to the packet's addresses
        if only_tensors:
            if queue.error is not None:
                raise queue.take_error()  # type: ignore[misc]
            queue.submit(fast.run, packet, ordered)
            if checked:  # what earlier launches of this library noted (this one may still be running)
                warn_unknown_addresses(self.name, self.program, stacklevel=3)
            return
        wait_all_idle()
        if queue.error is not None:
            raise queue.take_error()  # type: ignore[misc]
        run_host = getattr(fast, "run_host", None)
        if run_host is not None:  # backends that bind host memory themselves (metal)
            run_host(packet, ordered, queue)
        else:
            fast.run(packet)
        if checked:
            warn_unknown_addresses(self.name, self.program, stacklevel=3)


def _check_range(k: ShaderKernel, what: str, base: str, elem: np.dtype, v: Any) -> None:
    if isinstance(v, (bool, np.bool_)) or elem == np.bool_:
        if elem != np.bool_ and not isinstance(v, (bool, np.bool_)):
            return
        if elem == np.bool_ and not isinstance(v, (bool, np.bool_, int)) or (elem == np.bool_ and v not in (0, 1)):
            raise k._fail(TypeError, f"{what} is bool; got {v!r}")
        return
    if elem.kind in "iu":
        if not isinstance(v, (int, np.integer)):
            raise k._fail(TypeError, f"{what} is an integer type; got {type(v).__name__} {v!r} (convert it "
                                     "explicitly, e.g. int(x))")
        info = np.iinfo(elem)
        if not info.min <= int(v) <= info.max:
            raise k._fail(OverflowError, f"{what}: {v} is outside the range of {base} [{info.min}, {info.max}]")
        return
    if not isinstance(v, (int, float, np.integer, np.floating)):
        raise k._fail(TypeError, f"{what} is a floating-point type; got {type(v).__name__}")
    limit = float(np.finfo(elem).max) if elem.name != "bfloat16" else 3.3895313892515355e38
    if np.isfinite(v) and abs(float(v)) > limit:
        raise k._fail(OverflowError, f"{what}: {v} is outside the range of {base} (max {limit:g})")


def _triple(k: ShaderKernel, what: str, value: Any, low: int) -> tuple[int, int, int]:
    if isinstance(value, (int, np.integer)):
        value = (value,)
    try:
        vals = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        raise k._fail(TypeError, f"{what} must be 1 to 3 ints, got {value!r}") from None
    if not 1 <= len(vals) <= 3 or any(v < low or v >= 2**32 for v in vals):
        raise k._fail(ValueError, f"{what}={value!r} must be 1 to 3 ints in [{low}, 2^32)")
    return (vals + (1, 1))[:3]  # type: ignore[return-value]


class ShaderLibrary:
    """Compiled MSL: each kernel is an attribute (``lib.NAME(...)``); ``kernels`` lists their signatures."""

    def __init__(self, source: str) -> None:
        if not isinstance(source, str):
            raise TypeError(f"compile_shader expects MSL source text (str), got {type(source).__name__}")
        self.library = get_backend().compile(source)
        self.kernels = dict(self.library.kernels)
        self._cache: dict[str, ShaderKernel] = {}

    def __getattr__(self, name: str) -> ShaderKernel:
        if name.startswith("__") or name in ("library", "kernels", "_cache"):
            raise AttributeError(name)
        k = self._cache.get(name)
        if k is None:
            if name not in self.kernels:
                raise AttributeError(f"the shader library has no kernel '{name}'; kernels: {', '.join(self.kernels)}")
            k = self._cache[name] = ShaderKernel(self, name)
        return k

    def __dir__(self) -> list[str]:
        return list(self.kernels)

    def __repr__(self) -> str:
        return f"<enceladus.ShaderLibrary kernels={list(self.kernels)}>"


def compile_shader(source: str) -> ShaderLibrary:
    """Compile MSL source for the current backend; kernels are attributes of the result."""
    return ShaderLibrary(source)


_INLINE: dict[tuple, ShaderLibrary] = {}


def run_msl_elementwise(code: str, inputs: Sequence[tuple[np.ndarray, str]], result: str) -> np.ndarray:
    """``code`` (one MSL expression, ``$i`` the i-th input) evaluated at every element of the broadcast inputs, as
    a small kernel on the current backend: how the interpreter runs ``tl.inline_asm_elementwise``."""
    from ..compiler.msl_types import MSL_TYPE

    shape = np.broadcast_shapes(*(a.shape for a, _ in inputs)) if inputs else ()
    key = (code, tuple(t for _, t in inputs), result)
    lib = _INLINE.get(key)
    if lib is None:
        params = [f"device const {MSL_TYPE[t]}* a{i} [[buffer({i})]]" for i, (_, t) in enumerate(inputs)]
        k = len(inputs)
        params += [f"device {MSL_TYPE[result]}* out [[buffer({k})]]", f"constant uint& n [[buffer({k + 1})]]",
                   "uint i [[thread_position_in_grid]]"]
        body = re.sub(r"\$(\d+)", lambda m: f"(a{int(m.group(1)) - 1}[i])", code)
        source = ("#include <metal_stdlib>\nusing namespace metal;\n\n"
                  f"kernel void enc_inline({', '.join(params)}) {{\n"
                  f"    if (i >= n) return;\n    out[i] = static_cast<{MSL_TYPE[result]}>({body});\n}}\n")
        lib = _INLINE[key] = ShaderLibrary(source)
    n = int(np.prod(shape)) if shape else 1
    arrays = [np.ascontiguousarray(np.broadcast_to(a, shape)).reshape(-1) for a, _ in inputs]
    out = np.empty(n, _np_dtype(D.BY_NAME[result].to_numpy().name if result != "bf16" else "bfloat16"))
    if n:
        lib.enc_inline(*arrays, out, n, threads=(n, 1, 1))
    return out.reshape(shape)
