"""Block pointers (``tl.make_block_ptr``/``tl.advance``) and tensor descriptors (``tl.make_tensor_descriptor``).

A block at some offsets becomes an ordinary pointer tile plus an in-bounds mask, so loads and stores
go through the same bounds-checked paths as pointer tiles.
"""

from __future__ import annotations

from typing import Any

from ..language import structs
from . import memory
from .ops import OPS, const_int, op
from .tensor import unwrap


def _block(base: Any, shape: tuple, strides: tuple, offsets: tuple, block_shape: tuple[int, ...],
           check: tuple[int, ...]) -> tuple[Any, Any]:
    rank = len(block_shape)
    ptr = base
    mask = None
    for d, n in enumerate(block_shape):
        r = OPS["arange"](0, n)
        for _ in range(d):
            r = OPS["expand_dims"](r, 0)
        for _ in range(rank - d - 1):
            r = OPS["expand_dims"](r, len(r.shape))
        idx = r + offsets[d]
        ptr = ptr + idx * strides[d]
        if d in check:
            inside = (idx >= 0) & (idx < shape[d])
            mask = inside if mask is None else mask & inside
    ptr = OPS["broadcast_to"](ptr, block_shape)
    if mask is not None:
        mask = OPS["broadcast_to"](mask, block_shape)
    return ptr, mask


def _tuple(x: Any, n: int, what: str) -> tuple:
    x = unwrap(x)
    if not isinstance(x, (tuple, list)) or len(x) != n:
        raise TypeError(f"{what} must be a tuple of {n} values, got {x!r}")
    return tuple(unwrap(v) for v in x)


class BlockPointer:
    """A block of a strided tensor at ``offsets`` (``tl.make_block_ptr``)."""

    def __init__(self, base: Any, shape: tuple, strides: tuple, offsets: tuple, block_shape: tuple[int, ...],
                 order: tuple[int, ...]):
        self.base, self.shape, self.strides, self.offsets = base, shape, strides, offsets
        self.block_shape, self.order = block_shape, order

    def tiles(self, boundary_check: Any) -> tuple[Any, Any]:
        check = tuple(unwrap(boundary_check) or ())
        return _block(self.base, self.shape, self.strides, self.offsets, self.block_shape, check)


class TensorDescriptor:
    """A strided tensor read and written in blocks, zero-padded outside (``tl.make_tensor_descriptor``)."""

    def __init__(self, base: Any, shape: tuple, strides: tuple, block_shape: tuple[int, ...]):
        # lists, as Triton's (tl.static_assert(desc.block_shape == [M, N]) holds)
        self.base, self.shape, self.strides, self.block_shape = base, list(shape), strides, list(block_shape)

    @property
    def type(self) -> structs.tensor_descriptor_type:
        return structs.tensor_descriptor_type(self.base.dtype.element_ty, list(self.block_shape))

    @property
    def dtype(self) -> Any:
        """The element type, as Triton's ``desc.dtype``."""
        return self.base.dtype.element_ty

    def load(self, offsets: Any) -> Any:
        offs = _tuple(offsets, len(self.block_shape), "the offsets of a descriptor load")
        ptr, mask = _block(self.base, self.shape, self.strides, offs, self.block_shape, range(len(offs)))
        return memory.load(ptr, mask=mask, other=0)

    def store(self, offsets: Any, value: Any) -> None:
        offs = _tuple(offsets, len(self.block_shape), "the offsets of a descriptor store")
        ptr, mask = _block(self.base, self.shape, self.strides, offs, self.block_shape, range(len(offs)))
        return memory.store(ptr, value, mask=mask)

    def _rows(self, x_offsets: Any, y_offset: Any, what: str) -> tuple[Any, Any]:
        if len(self.block_shape) != 2 or self.block_shape[0] != 1:
            raise TypeError(f"descriptor {what} needs a 2-D descriptor whose blocks have 1 row, got blocks of "
                            f"{self.block_shape}")
        x = unwrap(x_offsets)
        if len(getattr(x, "shape", ())) != 1 or str(getattr(x, "dtype", "")) not in ("int16", "int32"):
            raise TypeError(f"the row offsets of a descriptor {what} must be a 1-D int16 or int32 tile, got {x!r}")
        y = unwrap(y_offset)
        rows = OPS["expand_dims"](x, 1)
        cols = OPS["expand_dims"](OPS["arange"](0, self.block_shape[1]) + y, 0)
        ptr = self.base + rows * self.strides[0] + cols * self.strides[1]
        mask = (rows >= 0) & (rows < self.shape[0]) & (cols >= 0) & (cols < self.shape[1])
        shape = [x.shape[0], self.block_shape[1]]
        return OPS["broadcast_to"](ptr, shape), OPS["broadcast_to"](mask, shape)

    def gather(self, x_offsets: Any, y_offset: Any) -> Any:
        ptr, mask = self._rows(x_offsets, y_offset, "gather")
        return memory.load(ptr, mask=mask, other=0)

    def scatter(self, value: Any, x_offsets: Any, y_offset: Any) -> None:
        ptr, mask = self._rows(x_offsets, y_offset, "scatter")
        return memory.store(ptr, value, mask=mask)


structs.tensor_descriptor.register(TensorDescriptor)


def _descriptor(desc: Any, name: str) -> TensorDescriptor:
    if not isinstance(desc, TensorDescriptor):
        raise TypeError(f"tl.{name} expects a tensor descriptor first, got {type(desc).__name__}")
    return desc


@op("load_tensor_descriptor")
def load_tensor_descriptor(desc: Any, offsets: Any) -> Any:
    return _descriptor(desc, "load_tensor_descriptor").load(offsets)


@op("store_tensor_descriptor")
def store_tensor_descriptor(desc: Any, offsets: Any, value: Any) -> None:
    return _descriptor(desc, "store_tensor_descriptor").store(offsets, value)


@op("make_block_ptr")
def make_block_ptr(base: Any, shape: Any, strides: Any, offsets: Any, block_shape: Any, order: Any) -> BlockPointer:
    block = tuple(const_int(b, "block_shape") for b in unwrap(block_shape))
    n = len(block)
    return BlockPointer(base, _tuple(shape, n, "shape"), _tuple(strides, n, "strides"),
                        _tuple(offsets, n, "offsets"), block, tuple(unwrap(order)))


@op("advance")
def advance(base: Any, offsets: Any) -> BlockPointer:
    if not isinstance(base, BlockPointer):
        raise TypeError("tl.advance expects a block pointer made by tl.make_block_ptr")
    deltas = _tuple(offsets, len(base.block_shape), "the offsets of tl.advance")
    return BlockPointer(base.base, base.shape, base.strides, tuple(o + d for o, d in zip(base.offsets, deltas)),
                        base.block_shape, base.order)


@op("make_tensor_descriptor")
def make_tensor_descriptor(base: Any, shape: Any, strides: Any, block_shape: Any,
                           padding_option: Any = "zero") -> TensorDescriptor:
    block = tuple(const_int(b, "block_shape") for b in unwrap(block_shape))
    n = len(block)
    return TensorDescriptor(base, _tuple(shape, n, "shape"), _tuple(strides, n, "strides"), block)


def load(pointer: Any, mask: Any = None, other: Any = None, *, boundary_check: Any = None,
         padding_option: Any = None, **kwargs: Any) -> Any:
    """``tl.load`` through a pointer tile or a block pointer."""
    if isinstance(pointer, BlockPointer):
        ptr, m = pointer.tiles(boundary_check)
        pad = unwrap(padding_option)
        fill = float("nan") if pad == "nan" else 0
        return memory.load(ptr, mask=m, other=fill if m is not None else None)
    if boundary_check is not None or padding_option is not None:
        raise TypeError("boundary_check/padding_option apply to block pointers (tl.make_block_ptr)")
    return memory.load(pointer, mask, other, **kwargs)


def store(pointer: Any, value: Any, mask: Any = None, *, boundary_check: Any = None, **kwargs: Any) -> None:
    """``tl.store`` through a pointer tile or a block pointer."""
    if isinstance(pointer, BlockPointer):
        ptr, m = pointer.tiles(boundary_check)
        return memory.store(ptr, value, mask=m)
    if boundary_check is not None:
        raise TypeError("boundary_check applies to block pointers (tl.make_block_ptr)")
    return memory.store(pointer, value, mask, **kwargs)


OPS["load"] = load
OPS["store"] = store
