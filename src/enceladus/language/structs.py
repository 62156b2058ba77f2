"""Kernel arguments made of several values: tuples and host-side tensor descriptors.

Shared by the runtime (which flattens them), the compiler and the interpreter (which rebuild them), so they
live here, below all three.

A launch passes them by their leaves (``name__0``, ``desc__base``, ``desc__shape1``...): each leaf is an
ordinary pointer or scalar argument with its own specialization, and the kernel sees the tuple or the
descriptor again (the structure is part of the kernel's specialization key).
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any

import numpy as np

_UNSET = object()

@dataclass
class TensorDescriptor:
    """A strided tensor a kernel reads and writes in ``block_shape`` blocks, as Triton's host ``TensorDescriptor``.

    ``base`` is the array (NumPy, ``enceladus.Tensor``, torch), ``shape`` and ``strides`` (in elements) describe
    the tensor, ``block_shape`` (powers of two) the blocks. In the kernel: ``desc.load([i, j])`` (zero outside the
    tensor) and ``desc.store([i, j], value)`` (only inside it).

    As in Triton, the fields can be assigned after construction (an autotuner config's ``pre_hook`` sets
    ``desc.block_shape = [BLOCK_M, BLOCK_K]`` on a descriptor made with a dummy block); every assignment is
    checked as the constructor checks, and each launch reads the descriptor as it is then.
    """

    base: Any
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    block_shape: tuple[int, ...]

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("shape", "strides", "block_shape"):
            try:
                value = tuple(value)
            except TypeError:
                raise ValueError(f"TensorDescriptor: {name} must be a sequence of ints, got {value!r}") from None
        old = self.__dict__.get(name, _UNSET)
        object.__setattr__(self, name, value)
        if "block_shape" in self.__dict__ and name != "base":  # constructed: check the descriptor as it is now
            try:
                self.__post_init__()
            except ValueError:
                if old is _UNSET:
                    self.__dict__.pop(name, None)
                else:
                    object.__setattr__(self, name, old)  # a refused assignment leaves the descriptor as it was
                raise

    def __post_init__(self) -> None:
        rank = len(self.block_shape)
        if rank == 0 or len(self.shape) != rank or len(self.strides) != rank:
            raise ValueError(f"TensorDescriptor: shape {self.shape}, strides {self.strides} and block_shape "
                             f"{self.block_shape} must have the same, nonzero length")
        for b in self.block_shape:
            if not isinstance(b, int) or b <= 0 or b & (b - 1):
                raise ValueError(f"TensorDescriptor: block_shape {self.block_shape} must be powers of two")
        for v in (*self.shape, *self.strides):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise ValueError(f"TensorDescriptor: shape and strides must be non-negative ints, got {v!r}")

    @classmethod
    def from_tensor(cls, tensor: Any, block_shape: Any) -> TensorDescriptor:
        """A descriptor of a whole array (strides taken from the array)."""
        a = _array_view(tensor)
        return cls(tensor, tuple(a.shape), tuple(s // a.itemsize for s in a.strides), tuple(block_shape))


class tensor_descriptor(abc.ABC):  # noqa: N801, B024  (Triton's name; a registry of classes, no methods)
    """The type of a tensor descriptor inside a kernel (``tl.tensor_descriptor``), for
    ``isinstance(desc, tl.tensor_descriptor)`` and annotations; the compiler and the interpreter register their
    descriptor values as its subclasses. ``desc.type`` is a ``tl.tensor_descriptor_type``."""


@dataclass(frozen=True)
class tensor_descriptor_type:  # noqa: N801  (Triton's name)
    """What ``desc.type`` gives inside a kernel: the element type and the block shape of a tensor descriptor."""

    element_ty: Any
    block_shape: list[int]

    @property
    def rank(self) -> int:
        return len(self.block_shape)


_array_view: Any = np.asarray  # the runtime installs its view of Tensors, torch and MLX arrays (set_array_view)


def set_array_view(view: Any) -> None:
    """Install ``view(array) -> np.ndarray`` (the runtime's ``as_numpy``) for ``TensorDescriptor.from_tensor``."""
    global _array_view
    _array_view = view


def is_struct(value: Any) -> bool:
    return isinstance(value, (tuple, TensorDescriptor))


def flatten(name: str, value: Any) -> tuple[list[tuple[str, Any]], Any]:
    """The leaves of an argument and its structure (hashable; ``("leaf",)`` for a plain value)."""
    if isinstance(value, TensorDescriptor):
        rank = len(value.block_shape)
        leaves = [(f"{name}__base", value.base)]
        leaves += [(f"{name}__shape{i}", int(s)) for i, s in enumerate(value.shape)]
        leaves += [(f"{name}__stride{i}", int(s)) for i, s in enumerate(value.strides)]
        return leaves, ("desc", rank, tuple(value.block_shape))
    if isinstance(value, tuple):
        from .core import constexpr

        leaves, parts = [], []
        fixed = _constexpr_fields(type(value))
        for i, item in enumerate(value):
            if i in fixed or getattr(item, "__enceladus_jit__", False) or isinstance(item, constexpr):
                # part of the structure (and of the kernel's specialization), not an argument
                parts.append(("const", item))
                continue
            sub, structure = flatten(f"{name}__{i}", item)
            leaves.extend(sub)
            parts.append(structure)
        if hasattr(type(value), "_fields"):  # a NamedTuple: the kernel sees its fields by name again
            return leaves, ("tuple", tuple(parts), type(value))
        return leaves, ("tuple", tuple(parts))
    return [(name, value)], ("leaf",)


def _constexpr_fields(cls: type) -> set[int]:
    """The positions of a NamedTuple's fields annotated ``tl.constexpr`` (Triton makes them compile-time values,
    e.g. a ``@jit`` function a kernel calls)."""
    fields = getattr(cls, "_fields", None)
    if not fields:
        return set()
    from .core import constexpr

    notes = getattr(cls, "__annotations__", {})
    return {i for i, f in enumerate(fields) if notes.get(f) is constexpr or notes.get(f) == "tl.constexpr"}


def leaf_names(name: str, structure: Any) -> list[str]:
    """The leaf names of a structure, in order (as ``flatten`` gives them)."""
    kind = structure[0]
    if kind == "leaf":
        return [name]
    if kind == "const":
        return []
    if kind == "desc":
        rank = structure[1]
        return [f"{name}__base", *(f"{name}__shape{i}" for i in range(rank)),
                *(f"{name}__stride{i}" for i in range(rank))]
    out = []
    for i, sub in enumerate(structure[1]):
        out.extend(leaf_names(f"{name}__{i}", sub))
    return out


def rebuild(name: str, structure: Any, leaf: Any, make_descriptor: Any) -> Any:
    """The argument again, from its leaves (``leaf(leaf_name)`` gives each leaf's value in the consumer's terms)."""
    kind = structure[0]
    if kind == "leaf":
        return leaf(name)
    if kind == "desc":
        rank, block = structure[1], structure[2]
        return make_descriptor(leaf(f"{name}__base"), tuple(leaf(f"{name}__shape{i}") for i in range(rank)),
                               tuple(leaf(f"{name}__stride{i}") for i in range(rank)), block)
    if kind == "const":  # a compile-time value: what a constexpr parameter would give
        from .core import constexpr

        return structure[1].value if isinstance(structure[1], constexpr) else structure[1]
    items = [rebuild(f"{name}__{i}", sub, leaf, make_descriptor) for i, sub in enumerate(structure[1])]
    return structure[2](*items) if len(structure) > 2 else tuple(items)
