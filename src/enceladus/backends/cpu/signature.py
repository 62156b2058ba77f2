"""The kernel signatures the cpu backend can run: Metal's signature parser (``compiler/msl_signature.py``),
then a refusal, naming the attribute, of every argument attribute the cpu backend cannot emulate."""

from __future__ import annotations

from ...compiler.msl_signature import (  # noqa: F401  (re-exported for the translator and the library)
    ADDRESS_SPACES,
    KernelParam,
    KernelSignature,
    MSLSignatureError,
    matching_paren,
    split_top_level,
    strip_comments,
)
from ...compiler.msl_signature import parse_kernels as parse_msl_kernels
from .errors import MSLSyntaxError

# Builtin attribute -> (EncThread field, dimensions the value has: 3 for grid vectors, 1 for scalars).
BUILTINS: dict[str, tuple[str, int]] = {
    "thread_position_in_grid": ("tpig", 3),
    "threadgroup_position_in_grid": ("tgpig", 3),
    "threadgroups_per_grid": ("tpg", 3),
    "threads_per_threadgroup": ("tptg", 3),
    "thread_position_in_threadgroup": ("tpitg", 3),
    "threads_per_grid": ("gsize", 3),
    "thread_index_in_threadgroup": ("tiitg", 1),
    "thread_index_in_simdgroup": ("lane", 1),
    "simdgroup_index_in_threadgroup": ("sg", 1),
    "simdgroups_per_threadgroup": ("nsg", 1),
    "threads_per_simdgroup": ("32", 1),
    "thread_execution_width": ("32", 1),
}
EMULATED = ("buffer", "threadgroup", *BUILTINS)


def parse_kernels(msl: str) -> dict[str, KernelSignature]:
    """Every ``kernel void NAME(...)`` in ``msl``, by name; refuses what the cpu backend cannot emulate."""
    try:
        kernels = parse_msl_kernels(msl)
    except MSLSignatureError as e:
        raise MSLSyntaxError(str(e)) from None
    for sig in kernels.values():
        for p in sig.params:
            if p.attribute not in EMULATED:
                raise MSLSyntaxError(
                    f"kernel '{sig.name}': parameter '{p.name}' has attribute [[{p.attribute}]], which the cpu "
                    f"backend does not support (it cannot emulate it; Metal accepts it); supported: buffer(n), "
                    f"threadgroup(n), {', '.join(BUILTINS)}")
    return kernels
