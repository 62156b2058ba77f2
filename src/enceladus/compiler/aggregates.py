"""Values made of several IR values: block pointers and tensor descriptors.

They exist only in the frontend: loads and stores through them become ordinary pointer tiles and masks.
Loops and branches carry them by their parts (``flatten`` / ``unflatten``).
"""

from __future__ import annotations

from typing import Any

from ..language import dtypes as D
from ..language import structs
from .ir import Value
from .semantic import Builder, SemanticError, binary, compare, is_value, shape_of


class Aggregate:
    """A frontend value made of IR values and constants."""

    fields: tuple[str, ...] = ()

    def flatten(self) -> list[Any]:
        out = []
        for f in self.fields:
            v = getattr(self, f)
            out.extend(v if isinstance(v, (tuple, list)) else (v,))
        return out

    def unflatten(self, values: list[Any]) -> Aggregate:
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        it = iter(values)
        for f in self.fields:
            v = getattr(self, f)
            setattr(new, f, type(v)(next(it) for _ in v) if isinstance(v, (tuple, list)) else next(it))
        return new


def _ints(b: Builder, values: Any, what: str, n: int | None = None) -> tuple[Any, ...]:
    if not isinstance(values, (tuple, list)):
        raise SemanticError(f"{what} must be a tuple, got {values!r}",
                            "pass a tuple with one entry per dimension, e.g. (M, N)")
    values = tuple(values)
    if n is not None and len(values) != n:
        raise SemanticError(f"{what} needs {n} entries (one per dimension), got {len(values)}",
                            "pass one entry per dimension of the block")
    for v in values:
        if is_value(v):
            if v.type.is_tile or not v.type.element.is_int():
                raise SemanticError(f"{what} entries must be integer scalars, got {v.type}",
                                    "use integer scalars (cast with .to(tl.int32) or reduce a tile first)")
        elif isinstance(v, bool) or not isinstance(v, int):
            raise SemanticError(f"{what} entries must be integers, got {v!r}",
                                "use integers")
    return values


def _as_value(b: Builder, v: Any) -> Value:
    return v if is_value(v) else b.const(v, D.int32 if -(2**31) <= v < 2**31 else D.int64)


def _block_tiles(b: Builder, base: Value, strides: tuple, offsets: tuple, block_shape: tuple[int, ...],
                 shape: tuple | None, check: tuple[int, ...]) -> tuple[Value, Value | None]:
    """The pointer tile of a block at ``offsets`` and the mask of its in-bounds elements along ``check``."""
    from .semantic import RULES

    rank = len(block_shape)
    ptr = base
    mask = None
    for d, n in enumerate(block_shape):
        r = RULES["arange"](b, 0, n)
        for _ in range(d):
            r = RULES["expand_dims"](b, r, 0)
        for _ in range(rank - d - 1):
            r = RULES["expand_dims"](b, r, len(r.type.shape))
        idx = binary(b, "+", r, offsets[d])
        ptr = binary(b, "+", ptr, binary(b, "*", idx, strides[d]))
        if d in check:
            inside = binary(b, "&", compare(b, ">=", idx, 0), compare(b, "<", idx, shape[d]))
            mask = inside if mask is None else binary(b, "&", mask, inside)
    ptr = b.broadcast_to(ptr, block_shape)
    if mask is not None:
        mask = b.broadcast_to(mask, block_shape)
    return ptr, mask


class BlockPointer(Aggregate):
    """``tl.make_block_ptr``: a block of a strided 2-D (or N-D) tensor at an offset."""

    fields = ("base", "shape", "strides", "offsets")

    def __init__(self, base: Value, shape: tuple, strides: tuple, offsets: tuple, block_shape: tuple[int, ...],
                 order: tuple[int, ...]):
        self.base, self.shape, self.strides, self.offsets = base, shape, strides, offsets
        self.block_shape, self.order = block_shape, order

    @property
    def element_ty(self) -> Any:
        return self.base.type.element.element_ty

    def tiles(self, b: Builder, boundary_check: tuple[int, ...]) -> tuple[Value, Value | None]:
        return _block_tiles(b, self.base, self.strides, self.offsets, self.block_shape, self.shape, boundary_check)


class TensorDescriptor(Aggregate):
    """``tl.make_tensor_descriptor``: a strided tensor read and written in blocks with zero padding."""

    fields = ("base", "shape", "strides")

    def __init__(self, base: Value, shape: tuple, strides: tuple, block_shape: tuple[int, ...]):
        # lists, as Triton's (tl.static_assert(desc.block_shape == [M, N]) holds)
        self.base, self.shape, self.strides, self.block_shape = base, list(shape), strides, list(block_shape)

    @property
    def type(self) -> structs.tensor_descriptor_type:
        return structs.tensor_descriptor_type(self.base.type.element.element_ty, list(self.block_shape))

    def load(self, b: Builder, offsets: Any) -> Value:
        from .semantic import RULES

        offsets = _ints(b, offsets, "the offsets of a tensor descriptor load", len(self.block_shape))
        ptr, mask = _block_tiles(b, self.base, self.strides, offsets, self.block_shape, self.shape,
                                 tuple(range(len(self.block_shape))))
        return RULES["load"](b, ptr, mask=mask, other=0)

    def store(self, b: Builder, offsets: Any, value: Any) -> None:
        from .semantic import RULES

        offsets = _ints(b, offsets, "the offsets of a tensor descriptor store", len(self.block_shape))
        ptr, mask = _block_tiles(b, self.base, self.strides, offsets, self.block_shape, self.shape,
                                 tuple(range(len(self.block_shape))))
        if shape_of(value) not in ((), tuple(self.block_shape)):
            raise SemanticError(f"storing a tile of shape {list(shape_of(value))} through a descriptor with blocks of "
                                f"{list(self.block_shape)}",
                                "store a tile of exactly the descriptor's block shape")
        return RULES["store"](b, ptr, value, mask=mask)

    def _rows(self, b: Builder, x_offsets: Any, y_offset: Any, what: str) -> tuple[Value, Value]:
        """Pointer tile and in-bounds mask of rows ``x_offsets`` (a 1-D tile), columns ``y_offset + [0, N)``."""
        from .semantic import RULES

        if len(self.block_shape) != 2 or self.block_shape[0] != 1:
            raise SemanticError(f"descriptor {what} needs a 2-D descriptor whose blocks have 1 row, got blocks of "
                                f"{list(self.block_shape)}", "make the descriptor with block_shape=[1, N]")
        if not is_value(x_offsets) or len(x_offsets.type.shape) != 1 or \
                x_offsets.type.element.name not in ("int16", "int32"):
            got = x_offsets.type if is_value(x_offsets) else repr(x_offsets)
            raise SemanticError(f"the row offsets of a descriptor {what} must be a 1-D int16 or int32 tile, got {got}",
                                "pass a tile of row indices, e.g. tl.arange(0, 8) + row0")
        (y_offset,) = _ints(b, (y_offset,), f"the column offset of a descriptor {what}")
        n = self.block_shape[1]
        rows = RULES["expand_dims"](b, x_offsets, 1)
        cols = RULES["expand_dims"](b, binary(b, "+", RULES["arange"](b, 0, n), y_offset), 0)
        ptr = binary(b, "+", binary(b, "+", self.base, binary(b, "*", rows, self.strides[0])),
                     binary(b, "*", cols, self.strides[1]))
        inside = binary(b, "&", binary(b, "&", compare(b, ">=", rows, 0), compare(b, "<", rows, self.shape[0])),
                        binary(b, "&", compare(b, ">=", cols, 0), compare(b, "<", cols, self.shape[1])))
        shape = (x_offsets.type.shape[0], n)
        return b.broadcast_to(ptr, shape), b.broadcast_to(inside, shape)

    def gather(self, b: Builder, x_offsets: Any, y_offset: Any) -> Value:
        """Rows ``x_offsets`` of the tensor, columns ``[y_offset, y_offset + N)``; zero outside the tensor."""
        from .semantic import RULES

        ptr, mask = self._rows(b, x_offsets, y_offset, "gather")
        return RULES["load"](b, ptr, mask=mask, other=0)

    def scatter(self, b: Builder, value: Any, x_offsets: Any, y_offset: Any) -> None:
        """Write ``value`` to rows ``x_offsets``, columns ``[y_offset, y_offset + N)``, only inside the tensor."""
        from .semantic import RULES

        ptr, mask = self._rows(b, x_offsets, y_offset, "scatter")
        if shape_of(value) not in ((), tuple(ptr.type.shape)):
            raise SemanticError(f"scattering a tile of shape {list(shape_of(value))} to {list(ptr.type.shape)} "
                                "elements (rows x block columns)", "scatter a tile of shape [len(x_offsets), N]")
        return RULES["store"](b, ptr, value, mask=mask)


structs.tensor_descriptor.register(TensorDescriptor)


def make_block_ptr(b: Builder, base: Any, shape: Any, strides: Any, offsets: Any, block_shape: Any,
                   order: Any) -> BlockPointer:
    from .semantic import _shape_arg

    if not is_value(base) or not base.type.is_ptr or base.type.is_tile:
        raise SemanticError("tl.make_block_ptr expects a pointer argument as its base",
                            "pass a pointer kernel argument (an array) as base")
    block = _shape_arg(tuple(block_shape))
    rank = len(block)
    shape = tuple(_as_value(b, v) for v in _ints(b, shape, "shape", rank))
    strides = tuple(_as_value(b, v) for v in _ints(b, strides, "strides", rank))
    offsets = tuple(_as_value(b, v) for v in _ints(b, offsets, "offsets", rank))
    order = tuple(order) if isinstance(order, (tuple, list)) else ()
    if sorted(order) != list(range(rank)):
        raise SemanticError(f"order={order!r} must be a permutation of the {rank} dimensions",
                            "pass each dimension index exactly once, e.g. order=(1, 0)")
    return BlockPointer(base, shape, strides, offsets, block, order)


def advance(b: Builder, base: Any, offsets: Any) -> BlockPointer:
    if not isinstance(base, BlockPointer):
        raise SemanticError("tl.advance expects a block pointer made by tl.make_block_ptr",
                            "create the block pointer with tl.make_block_ptr first")
    deltas = _ints(b, offsets, "the offsets of tl.advance", len(base.block_shape))
    new = base.unflatten(base.flatten())
    new.offsets = tuple(_as_value(b, binary(b, "+", o, d) if is_value(d) or d else o)
                        for o, d in zip(base.offsets, deltas))
    return new


def make_tensor_descriptor(b: Builder, base: Any, shape: Any, strides: Any, block_shape: Any) -> TensorDescriptor:
    from .semantic import _shape_arg

    if not is_value(base) or not base.type.is_ptr or base.type.is_tile:
        raise SemanticError("tl.make_tensor_descriptor expects a pointer argument as its base",
                            "pass a pointer kernel argument (an array) as base")
    block = _shape_arg(tuple(block_shape))
    rank = len(block)
    shape = tuple(_as_value(b, v) for v in _ints(b, shape, "shape", rank))
    strides = tuple(_as_value(b, v) for v in _ints(b, strides, "strides", rank))
    return TensorDescriptor(base, shape, strides, block)


def padding_value(padding_option: Any, elem: Any) -> Any:
    if padding_option in (None, "", "zero"):
        return 0
    if padding_option == "nan":
        if not elem.is_floating():
            raise SemanticError("padding_option='nan' needs a floating-point tensor",
                                "use padding_option='zero' for integer tensors")
        return float("nan")
    raise SemanticError(f"unknown padding_option {padding_option!r}", "use 'zero' or 'nan'")

