"""Kernel arguments as memory: bounds-checked loads, stores and atomics.

A buffer is a flat view over the *whole allocation* behind an argument (a view may legally reach
into its base array), indexed by element offsets relative to the argument's first element.
Lanes whose mask is false never touch memory.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import numpy as np

from ..language import dtypes as D
from ..language.dtypes import dtype, pointer_type
from .context import OutOfBoundsError, current, record_write, where_text
from .tensor import PointerTile, Tile, align, broadcast_shapes, cast_array, to_tile, unwrap


def _allocation(value: Any, arr: np.ndarray) -> tuple[int, int]:
    """Byte range [lo, hi) of the allocation that ``arr`` lives in."""
    if type(value).__module__.startswith("torch"):
        storage = value.untyped_storage()
        lo = storage.data_ptr()
        return lo, lo + storage.nbytes()
    root = arr
    while isinstance(root.base, np.ndarray):
        root = root.base
    try:
        from numpy.lib.array_utils import byte_bounds
    except ImportError:  # NumPy < 2
        byte_bounds = np.byte_bounds  # type: ignore[attr-defined]
    lo, hi = byte_bounds(root)
    return lo, hi


class Buffer:
    """One array argument: its whole allocation as a flat array, and where the argument starts in it."""

    def __init__(self, name: str, value: Any, arr: np.ndarray, elem: dtype):
        self.name = name
        self.elem = elem
        self.writeable = bool(arr.flags.writeable)
        self.size = int(arr.size)
        self._keep = (value, arr)
        if elem.is_fp8():  # the codes, whatever array type holds them (ml_dtypes float8, tagged uint8)
            arr = arr.view(elem.to_numpy())
        itemsize = arr.dtype.itemsize
        lo, hi = _allocation(value, arr)
        start = arr.__array_interface__["data"][0]
        if arr.size == 0 or hi <= lo:
            self.before, self.flat = 0, np.empty(0, arr.dtype)
            return
        self.before = max(0, (start - lo) // itemsize)
        total = self.before + max(0, (hi - start) // itemsize)
        raw = (ctypes.c_char * (total * itemsize)).from_address(start - self.before * itemsize)
        self.flat = np.frombuffer(raw, dtype=arr.dtype)
        if not self.writeable:
            self.flat = self.flat.view()
            self.flat.flags.writeable = False

    @property
    def allocation(self) -> int:
        return int(self.flat.size)

    @property
    def address(self) -> int:
        """The address of the argument's element 0."""
        return int(self.flat.ctypes.data) + self.before * self.flat.itemsize if self.flat.size else 0

    def contains(self, address: int) -> bool:
        """Whether ``address`` lies in the allocation behind the argument, or just past its end (a pointer one past
        the end belongs to the array, as in C: accesses through it are then out of bounds, not unknown memory)."""
        lo = int(self.flat.ctypes.data)
        return self.flat.size > 0 and lo <= address <= lo + self.flat.nbytes

    def as_type(self, elem: dtype) -> Buffer:
        """The same memory seen as elements of ``elem`` (a pointer cast to another element type)."""
        if elem == self.elem:
            return self
        out = object.__new__(Buffer)
        out.name, out.elem, out.writeable, out._keep = self.name, elem, self.writeable, self._keep
        size = np.dtype(elem.to_numpy()).itemsize
        head = self.before * self.flat.itemsize  # bytes before element 0
        skip = head % size
        raw = self.flat.view(np.uint8)[skip:]
        out.flat = raw[:raw.size // size * size].view(elem.to_numpy())
        out.before = head // size
        out.size = self.size * self.flat.itemsize // size
        return out

    def pointer(self, const: bool = False) -> PointerTile:
        return PointerTile(np.zeros(1, np.int64), pointer_type(self.elem, const=const), self)


class RawMemory:
    """Memory at integer addresses outside every array argument (a data_ptr() of something else): reachable,
    as in Triton's interpreter, but not bounds-checked. ``cover`` maps the addresses one access touches."""

    def __init__(self, elem: dtype) -> None:
        self.name = "<memory at an integer address>"
        self.elem = elem
        self.writeable = True
        self.size = 0
        self.before = 0
        self.flat = np.empty(0, elem.to_numpy())

    @property
    def allocation(self) -> int:
        return int(self.flat.size)

    def cover(self, offsets: np.ndarray, mask: np.ndarray | None) -> None:
        """Map the elements at ``offsets`` (element offsets from address 0) that ``mask`` keeps."""
        sel = offsets if mask is None else offsets[np.broadcast_to(mask, np.broadcast_shapes(offsets.shape,
                                                                                              mask.shape))
                                                   if mask.shape != offsets.shape else mask]
        if sel.size == 0:
            self.flat, self.before = np.empty(0, self.elem.to_numpy()), 0
            return
        lo, hi = int(sel.min()), int(sel.max())
        size = np.dtype(self.elem.to_numpy()).itemsize
        raw = (ctypes.c_char * ((hi - lo + 1) * size)).from_address(lo * size)
        self.flat = np.frombuffer(raw, dtype=self.elem.to_numpy())
        self.before = -lo
        self.size = self.flat.size

    def as_type(self, elem: dtype) -> RawMemory:
        return RawMemory(elem)


class RawBytes(RawMemory):
    """Unknown memory reached through addresses that are not multiples of the element size (an int64 value cast to
    a pointer that is only selected, stored or cast back, never dereferenced: Triton allows that). Its pointer tiles
    hold byte addresses; offsets added to them count elements (``offset_unit`` bytes each), and an access through one
    is refused then, naming the misaligned address."""

    def __init__(self, elem: dtype) -> None:
        super().__init__(elem)
        self.offset_unit = np.dtype(elem.to_numpy()).itemsize

    def as_type(self, elem: dtype) -> RawBytes:
        return RawBytes(elem)


def _full_shape(*arrays: np.ndarray | None) -> tuple[int, ...]:
    return np.broadcast_shapes(*(a.shape for a in arrays if a is not None))


def _mask_data(mask: Any, shape: list[int], what: str) -> np.ndarray | None:
    mask = unwrap(mask)
    if mask is None:
        return None
    m = to_tile(mask)
    if not m.dtype.is_bool():
        m = Tile(cast_array(m.data, m.dtype, D.int1), D.int1)
    if broadcast_shapes(shape, m.shape) != list(shape) and m.shape:
        raise ValueError(f"{what}: mask of shape {m.shape} does not broadcast to the pointer shape {shape}")
    return align(m.data, len(shape))


def _check_bounds(op: str, ptr: PointerTile, idx: np.ndarray, mask: np.ndarray | None) -> None:
    buf = ptr.buf
    n = buf.allocation
    if idx.size == 0:
        return
    if n and idx.min() >= 0 and idx.max() < n:
        return
    bad = (idx < 0) | (idx >= n)
    if mask is not None:
        bad &= mask
    if not bad.any():
        return
    first = np.unravel_index(int(np.argmax(bad)), bad.shape)
    launch = current()
    program = launch.program(int(first[0]))
    lane = tuple(int(i) for i in first[1:])
    offset = int(idx[first]) - buf.before
    extent = f"the argument has {buf.size} elements"
    if buf.allocation != buf.size:
        extent += f" and its allocation allows offsets {-buf.before}..{buf.allocation - buf.before - 1}"
    raise OutOfBoundsError(
        f"out-of-bounds {op} in kernel '{launch.kernel}', program {program}: argument '{buf.name}' "
        f"({buf.elem}) accessed at element offset {offset} (tile index {lane}), but {extent}"
        f"{where_text()}\n  fix: mask the access (mask=offs < n) or correct the offsets")


def _prepare(op: str, pointer: Any, mask: Any) -> tuple[PointerTile, np.ndarray, np.ndarray | None]:
    pointer = unwrap(pointer)
    if not isinstance(pointer, PointerTile):
        got = pointer.dtype if isinstance(pointer, Tile) else type(pointer).__name__
        raise TypeError(f"tl.{op} expects a pointer (an array argument plus offsets), got {got}")
    if pointer.dtype.element_ty.is_fp64() and op != "store":
        raise TypeError(f"tl.{op}: a float64 array can only be stored to (Apple GPUs have no float64: a kernel "
                        "writes float32, float16, bfloat16, fp8 or integer values into it, converted as Triton converts them); "
                        "pass the array as float32")
    m = _mask_data(mask, pointer.shape, f"tl.{op}")
    if isinstance(pointer.buf, RawBytes):
        pointer = _aligned(op, pointer, m)
    if isinstance(pointer.buf, RawMemory):
        pointer.buf.cover(pointer.data, m)
    return pointer, pointer.data + pointer.buf.before, m


def _aligned(op: str, pointer: PointerTile, mask: np.ndarray | None) -> PointerTile:
    """The element pointers of byte addresses about to be accessed: refused if one the mask keeps is misaligned."""
    size = pointer.buf.offset_unit
    bad = (pointer.data % size) != 0
    if mask is not None:
        bad = bad & mask
    if bad.any():
        addr = int(np.broadcast_to(pointer.data, bad.shape)[bad].flat[0])
        raise ValueError(f"tl.{op} through the address {addr:#x}, which is not a multiple of {size} bytes, the size "
                         f"of {pointer.dtype.element_ty}{where_text()}")
    return PointerTile(pointer.data // size, pointer.dtype, RawMemory(pointer.dtype.element_ty))


def load(pointer: Any, mask: Any = None, other: Any = None, *, cache_modifier: str = "",
         eviction_policy: str = "", volatile: bool = False) -> Tile:
    """``tl.load``: gather through ``pointer`` where ``mask`` is true, ``other`` (default 0) elsewhere."""
    ptr, idx, m = _prepare("load", pointer, mask)
    elem = ptr.dtype.element_ty
    shape = _full_shape(idx, m)
    idx = np.broadcast_to(idx, shape)
    _check_bounds("load", ptr, idx, m)
    flat = ptr.buf.flat
    if m is None or m.all():
        return Tile(flat[idx], elem)
    m = np.broadcast_to(m, shape)
    vals = flat[np.where(m, idx, 0)] if flat.size else np.zeros(shape, flat.dtype)
    other = unwrap(other)
    if other is None:
        fill = np.zeros(1, flat.dtype)
    else:
        o = to_tile(other)
        if broadcast_shapes(ptr.shape, o.shape) != ptr.shape and o.shape:
            raise ValueError(f"tl.load: 'other' of shape {o.shape} does not broadcast to the pointer shape {ptr.shape}")
        fill = align(cast_array(o.data, o.dtype, elem), len(ptr.shape))
    return Tile(np.where(m, vals, fill), elem)


def _value_for(ptr: PointerTile, value: Any, op: str) -> np.ndarray:
    v = to_tile(value)
    if v.dtype.is_ptr():  # Triton converts the value to the element type: a pointer to its 64-bit address
        elem = ptr.dtype.element_ty
        if op != "store" or not (elem.is_int() and elem.primitive_bitwidth == 64):
            raise TypeError(f"tl.{op} of pointers needs a pointer to int64 or uint64 (their addresses), got a "
                            f"pointer to {elem}")
        v = Tile(pointer_to_addresses(v).astype(elem.to_numpy()), elem)
    if v.dtype.is_fp64():  # a float literal beyond float32's range (Triton types it float64)
        raise TypeError(f"tl.{op} of a float64 value (a literal beyond float32's range) needs float64, which Apple GPUs "
                        "do not have; store a float32 value")
    if broadcast_shapes(ptr.shape, v.shape) != ptr.shape and v.shape:
        raise ValueError(f"tl.{op}: value of shape {v.shape} does not broadcast to the pointer shape {ptr.shape}")
    return align(cast_array(v.data, v.dtype, ptr.dtype.element_ty), len(ptr.shape))


def _writable(ptr: PointerTile, op: str) -> None:
    if ptr.dtype.is_const():
        raise ValueError(f"tl.{op} cannot write through a pointer to constant data ({ptr.dtype}: a parameter "
                         "annotated tl.const, or a pointer cast to tl.pointer_type(..., const=True)); drop the "
                         f"tl.const annotation (or const=True) from the pointer you write through{where_text()}")
    if not ptr.buf.writeable:
        raise ValueError(f"argument '{ptr.buf.name}' is a read-only array, but kernel '{current().kernel}' "
                         f"writes to it with tl.{op}; pass a writeable array (e.g. arr.copy()){where_text()}")


def store(pointer: Any, value: Any, mask: Any = None, *, cache_modifier: str = "",
          eviction_policy: str = "") -> None:
    """``tl.store``: write ``value`` (converted to the pointee type) where ``mask`` is true."""
    ptr, idx, m = _prepare("store", pointer, mask)
    v = _value_for(ptr, value, "store")
    shape = _full_shape(idx, m, v)
    idx = np.broadcast_to(idx, shape)
    _check_bounds("store", ptr, idx, m)
    _writable(ptr, "store")
    v = np.broadcast_to(v, shape)
    if m is not None and not m.all():
        m = np.broadcast_to(m, shape)
        idx, v = idx[m], v[m]
    flat = ptr.buf.flat
    record_write(flat, idx)
    flat[idx] = v


# --- atomics (run one program at a time: see launch.needs_sequential) ---------------------------------------

def _atomic(name: str, pointer: Any, val: Any, mask: Any, combine: Callable[[Any, Any], Any],
            cmp: Any = None) -> Tile:
    ptr, idx, m = _prepare(name, pointer, mask)
    elem = ptr.dtype.element_ty
    if elem.name in ("int16", "uint16") and name != "atomic_cas":
        raise TypeError(f"tl.{name} on {elem} is not supported (Triton accepts 16-bit integers only in "
                        "tl.atomic_cas); use an int32 buffer")
    if elem.name in ("fp16", "bf16") and name in ("atomic_and", "atomic_or", "atomic_xor"):
        raise TypeError(f"tl.{name} needs an integer pointer, got {elem}")
    if elem.name == "int64" and name in ("atomic_max", "atomic_min"):
        raise TypeError(f"tl.{name} on int64 is not available on Apple GPUs: Metal's only 64-bit atomics are max/min "
                        "of unsigned 64-bit integers, which cannot order signed values; keep the values biased in a "
                        "uint64 buffer (v.to(tl.uint64, bitcast=True) ^ 0x8000000000000000), use tl.atomic_max/min "
                        "on it, and flip the top bit back when reading")
    if elem.primitive_bitwidth == 64 and not (elem.name == "uint64" and name in ("atomic_max", "atomic_min")):
        raise TypeError(f"tl.{name} on {elem} is not available on Apple GPUs: Metal has 64-bit atomics only for "
                        "max/min of unsigned 64-bit integers (uint64), without returning the old value")
    # what the compiled kernels take: 32-bit atomics, 16-bit ones through a loop on the containing word, and
    # uint64 max/min (the compiler refuses a use of their old values, which the interpreter cannot see)
    if elem.name not in ("int32", "uint32", "fp32", "fp16", "bf16", "int16", "uint16", "uint64"):
        raise TypeError(f"tl.{name} on {elem} is not supported (Metal has 32-bit integer and float32 atomics; "
                        "Enceladus adds float16/bfloat16 ones)")
    v = _value_for(ptr, val, name)
    c = _value_for(ptr, cmp, name) if cmp is not None else None
    shape = _full_shape(idx, m, v, c)
    idx = np.broadcast_to(idx, shape)
    _check_bounds(name, ptr, idx, m)
    _writable(ptr, name)
    flat = ptr.buf.flat
    keep = np.ones(shape, bool) if m is None else np.broadcast_to(m, shape)
    v = np.broadcast_to(v, shape)
    c = np.broadcast_to(c, shape) if c is not None else None
    old = np.zeros(shape, flat.dtype)
    sel = idx[keep]
    record_write(flat, sel)
    with np.errstate(all="ignore"):
        if c is None and np.unique(sel).size == sel.size:  # no lane sees another's update
            before = flat[sel]
            old[keep] = before
            flat[sel] = combine(before, v[keep])
            return Tile(old, ptr.dtype.element_ty)
        for lane in zip(*np.nonzero(keep)):  # lanes in order: duplicates see each other's updates
            i = idx[lane]
            before = flat[i]
            old[lane] = before
            if c is None:
                flat[i] = combine(before, v[lane])
            elif before == c[lane]:
                flat[i] = v[lane]
    return Tile(old, ptr.dtype.element_ty)


def _fmax(a: Any, b: Any) -> Any:
    return np.fmax(a, b)


def _fmin(a: Any, b: Any) -> Any:
    return np.fmin(a, b)


ATOMIC_COMBINE: dict[str, Callable[[Any, Any], Any]] = {
    "atomic_add": lambda a, b: a + b, "atomic_max": _fmax, "atomic_min": _fmin,
    "atomic_and": lambda a, b: a & b, "atomic_or": lambda a, b: a | b, "atomic_xor": lambda a, b: a ^ b,
    "atomic_xchg": lambda a, b: b,
}


def atomic(name: str) -> Callable[..., Tile]:
    """The implementation of ``tl.<name>`` (atomic_add, atomic_max, ...)."""

    def run(pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> Tile:
        return _atomic(name, pointer, val, mask, ATOMIC_COMBINE[name])

    run.__name__ = name
    return run


def atomic_cas(pointer: Any, cmp: Any, val: Any, sem: Any = None, scope: Any = None) -> Tile:
    """``tl.atomic_cas``: where memory equals ``cmp`` write ``val``; returns the old values."""
    return _atomic("atomic_cas", pointer, val, None, ATOMIC_COMBINE["atomic_xchg"], cmp=cmp)


# --- atomic_load / atomic_store / atomic_poll ------------------------------------------------------------------

def _access_checks(name: str, pointer: Any, sem: Any, scope: Any, allowed_sem: str) -> None:
    if sem not in (None, "relaxed", allowed_sem):
        raise ValueError(f"tl.{name} only supports {allowed_sem} and relaxed semantics, got sem={sem!r}")
    if scope not in (None, "gpu", "cta", "sys"):
        raise ValueError(f"tl.{name}: unknown scope={scope!r}")
    ptr = unwrap(pointer)
    if not isinstance(ptr, PointerTile):
        return  # _prepare names the problem
    elem = ptr.dtype.element_ty
    bits = elem.primitive_bitwidth
    if name == "atomic_poll" and not (elem.is_int() and bits in (16, 32, 64)):
        raise TypeError(f"tl.atomic_poll only supports integer elements with width {{16, 32, 64}}, got {elem}")
    if bits == 64 and name != "atomic_poll":
        raise TypeError(f"tl.{name} on {elem} is not available on Apple GPUs: Metal has no 64-bit atomic load or "
                        "store")
    if elem.is_fp8():
        raise TypeError(f"tl.{name} on {elem} is not supported: fp8 is a storage type on Apple GPUs; load and store "
                        "the codes through a tl.uint8 pointer")


def atomic_load(pointer: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> Tile:
    """``tl.atomic_load``: a load (programs run one at a time, so every load is atomic); masked-off lanes give 0."""
    _access_checks("atomic_load", pointer, sem, scope, "acquire")
    return load(pointer, mask)


def atomic_store(pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> None:
    """``tl.atomic_store``: a store where ``mask`` is true."""
    _access_checks("atomic_store", pointer, sem, scope, "release")
    store(pointer, val, mask)


def atomic_poll(pointer: Any, expected_value: Any, sem: Any = None, scope: Any = None,
                timeout_ns: Any = None) -> Tile:
    """``tl.atomic_poll``: every element must already hold ``expected_value``. Programs run one at a time in
    program-id order, so a value no earlier program stored never arrives: that is reported, not waited for."""
    if unwrap(timeout_ns) is not None:
        raise TypeError("tl.atomic_poll(timeout_ns=...) cannot be honoured on Apple GPUs: Metal shaders have no clock")
    _access_checks("atomic_poll", pointer, sem, scope, "acquire")
    current_values = load(pointer)
    want = align(_value_for(unwrap(pointer), expected_value, "atomic_poll"), len(current_values.shape))
    waiting = current_values.data != want
    if waiting.any():
        launch = current()
        raise RuntimeError(f"tl.atomic_poll in kernel '{launch.kernel}' waits for a value that no earlier program "
                           f"stored ({int(waiting.sum())} element(s) differ){where_text()}; the interpreter runs "
                           "programs one at a time in program-id order, so the wait would never end (on a GPU it "
                           "would wait for a program that may never be scheduled too)")
    return Tile(np.ones(current_values.shape, bool), D.int1)


# --- pointer casts (Triton's int_to_ptr, ptr_to_int and pointer bitcast) -----------------------------------------

_WARNED_RAW: set[tuple[str, int]] = set()


def pointer_to_addresses(ptr: PointerTile) -> np.ndarray:
    """The addresses (uint64) of a tile of pointers."""
    if isinstance(ptr.buf, RawBytes):
        return ptr.data.astype(np.uint64)
    size = np.dtype(ptr.dtype.element_ty.to_numpy()).itemsize
    base = 0 if isinstance(ptr.buf, RawMemory) else ptr.buf.address
    return (np.int64(base) + ptr.data.astype(np.int64) * size).astype(np.uint64)


def pointer_to_pointer(ptr: PointerTile, ty: pointer_type) -> PointerTile:
    """The same addresses seen as pointers to ``ty.element_ty``."""
    return addresses_to_pointer(pointer_to_addresses(ptr).astype(np.int64), ty, ptr.buf)


def addresses_to_pointer(addr: np.ndarray, ty: pointer_type, hint: Any = None) -> PointerTile:
    """Pointers from integer addresses: into the array argument that holds them all (checked as that argument),
    else into raw memory (unchecked, one warning per kernel line, as the cpu backend does)."""
    elem = ty.element_ty
    size = np.dtype(elem.to_numpy()).itemsize
    addr = addr.astype(np.int64)
    live = addr[addr != 0]  # null pointers (masked-off lanes) are never dereferenced
    launch = current()
    candidates = ([hint] if isinstance(hint, Buffer) else []) + list(getattr(launch, "buffers", ()))
    for buf in candidates:
        if live.size and all(buf.contains(int(a)) for a in (live.min(), live.max())) and all(
                buf.contains(int(a)) for a in np.unique(live)):
            view = buf.as_type(elem)
            delta = addr - np.int64(view.address)
            if (delta[addr != 0] % size).any():
                raise ValueError(f"an address is not a multiple of {size} bytes, the size of {elem}{where_text()}")
            return PointerTile(np.where(addr != 0, delta // size, 0), ty, view)
    unknown = [int(a) for a in np.unique(live) if not any(b.contains(int(a)) for b in candidates)]
    if unknown:
        import sys
        import warnings

        frame = sys._getframe(1)
        while frame is not None and frame.f_code not in launch.codes:
            frame = frame.f_back
        line = frame.f_lineno if frame is not None else 0
        if (launch.kernel, line) not in _WARNED_RAW:
            _WARNED_RAW.add((launch.kernel, line))
            warnings.warn(f"kernel '{launch.kernel}' at line {line}: a pointer made from an integer address points "
                          "into memory Enceladus does not know (no argument of this launch holds it), so its "
                          "accesses are not checked; pass the arrays the addresses point into as arguments too to "
                          "have them checked", RuntimeWarning, stacklevel=2)
    if (live % size).any():  # refused only if accessed (Triton lets such pointers be selected and stored)
        return PointerTile(addr, ty, RawBytes(elem))
    return PointerTile(addr // size, ty, RawMemory(elem))
