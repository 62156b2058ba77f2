"""MSL kernel signatures (``kernel void NAME(...)``), parsed with every kernel-argument attribute Metal defines.

This is MSL knowledge shared by both backends (and the runtime), so it lives here, below them: the metal
backend accepts whatever Metal accepts; the cpu backend (``backends/cpu/signature.py``) refuses, by name, the
attributes it cannot emulate. The parsed classes, ``KernelParam`` and ``KernelSignature``, are defined in
``compiler/kernel.py``: a process that loads cached kernels builds them without importing this parser.
"""

from __future__ import annotations

import re

from .kernel import KernelParam, KernelSignature  # (defined there: cached kernels load without this module)
from .metal_limits import MAX_BUFFER_SLOTS, MAX_SAMPLER_SLOTS, MAX_TEXTURE_SLOTS, MAX_THREADGROUP_SLOTS

ADDRESS_SPACES = ("device", "constant", "threadgroup", "thread")

# Resource attributes [[name(n)]]: name -> (number of slots, address spaces of the argument, None = not a pointer)
RESOURCES: dict[str, tuple[int, tuple[str, ...] | None]] = {
    "buffer": (MAX_BUFFER_SLOTS, ("device", "constant")),
    "threadgroup": (MAX_THREADGROUP_SLOTS, ("threadgroup",)),
    "texture": (MAX_TEXTURE_SLOTS, None),
    "sampler": (MAX_SAMPLER_SLOTS, None),
}
# Builtin attributes of kernel arguments (MSL specification, "Attributes for kernel function input arguments"):
# name -> 3 for values that are (up to) 3-component grid vectors, 1 for scalars.
BUILTIN_DIMS: dict[str, int] = {
    "dispatch_quadgroups_per_threadgroup": 1,
    "dispatch_simdgroups_per_threadgroup": 1,
    "dispatch_threads_per_threadgroup": 3,
    "grid_origin": 3,
    "grid_size": 3,
    "quadgroup_index_in_threadgroup": 1,
    "quadgroups_per_threadgroup": 1,
    "simdgroup_index_in_threadgroup": 1,
    "simdgroups_per_threadgroup": 1,
    "thread_execution_width": 1,
    "thread_index_in_quadgroup": 1,
    "thread_index_in_simdgroup": 1,
    "thread_index_in_threadgroup": 1,
    "thread_position_in_grid": 3,
    "thread_position_in_threadgroup": 3,
    "threadgroup_position_in_grid": 3,
    "threadgroups_per_grid": 3,
    "threads_per_grid": 3,
    "threads_per_simdgroup": 1,
    "threads_per_threadgroup": 3,
}
OTHER_ATTRIBUTES = ("stage_in",)  # per-thread input assembled from a stage-input descriptor
SCALAR_BUILTIN_TYPES = ("uint", "ushort")
VECTOR_BUILTIN_TYPES = ("uint", "ushort", "uint2", "ushort2", "uint3", "ushort3")


class MSLSignatureError(ValueError):
    """A kernel signature Metal would reject (or that cannot be parsed); the message names the kernel and argument."""


# patterns, compiled by re's own cache on first use (cached kernels load without parsing any MSL)
_COMMENT = r"(?s)//[^\n]*|/\*.*?\*/"
_KERNEL = r"(?:\bkernel|\[\[\s*kernel\s*\]\])\s+void\s+([A-Za-z_]\w*)\s*\("
_ATTR = r"\[\[\s*([A-Za-z_]\w*)\s*(?:\(\s*(\d+)\s*\))?\s*\]\]\s*$"
_DECL = r"(?s)^(.*?)([A-Za-z_]\w*)\s*$"


def strip_comments(text: str) -> str:
    """Blank out comments, keeping every newline so that offsets and line numbers stay valid."""
    return re.sub(_COMMENT, lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def matching_paren(text: str, open_pos: int) -> int:
    """The index of the parenthesis closing the one at ``open_pos``."""
    depth = 0
    for i in range(open_pos, len(text)):
        c = text[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
    raise MSLSignatureError(f"unbalanced parentheses starting at line {text.count(chr(10), 0, open_pos) + 1}")


def split_top_level(text: str) -> list[str]:
    """``text`` split at the commas outside parentheses, angle brackets and square brackets."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "(<[":
            depth += 1
        elif c in ")>]":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _parse_param(kernel: str, raw: str) -> KernelParam:
    text = " ".join(raw.split())
    attr = re.search(_ATTR, text)
    if attr is None:
        raise MSLSignatureError(
            f"kernel '{kernel}': parameter '{text}' has no attribute; give buffers an explicit "
            f"[[buffer(n)]] and builtins their [[...]] attribute"
        )
    decl = text[: attr.start()].strip()
    m = re.match(_DECL, decl)
    if m is None or not m.group(1).strip():
        raise MSLSignatureError(f"kernel '{kernel}': cannot parse parameter '{text}'")
    msl_type, name = " ".join(m.group(1).split()), m.group(2)
    tokens = re.findall(r"[A-Za-z_]\w*", msl_type)
    space = next((t for t in tokens if t in ADDRESS_SPACES), None)
    kind, index = attr.group(1), (int(attr.group(2)) if attr.group(2) is not None else None)
    if kind in RESOURCES:
        slots, spaces = RESOURCES[kind]
        if index is None:
            raise MSLSignatureError(f"kernel '{kernel}': parameter '{name}' needs an index: [[{kind}(n)]]")
        if not (0 <= index < slots):
            raise MSLSignatureError(
                f"kernel '{kernel}': parameter '{name}': [[{kind}({index})]] is outside 0..{slots - 1}")
        if spaces is not None:
            if not msl_type.endswith(("*", "&")):
                raise MSLSignatureError(
                    f"kernel '{kernel}': [[{kind}({index})]] parameter '{name}' must be a pointer or reference, "
                    f"got '{msl_type}'")
            if space not in spaces:
                raise MSLSignatureError(
                    f"kernel '{kernel}': [[{kind}({index})]] parameter '{name}' must be in the "
                    f"{' or '.join(spaces)} address space, got '{msl_type}'")
    elif kind in BUILTIN_DIMS:
        allowed = VECTOR_BUILTIN_TYPES if BUILTIN_DIMS[kind] == 3 else SCALAR_BUILTIN_TYPES
        base = msl_type.replace("const ", "").strip()
        if base not in allowed:
            raise MSLSignatureError(
                f"kernel '{kernel}': builtin [[{kind}]] parameter '{name}' has type '{msl_type}'; "
                f"use one of {', '.join(allowed)}")
    elif kind not in OTHER_ATTRIBUTES:
        raise MSLSignatureError(
            f"kernel '{kernel}': parameter '{name}' has attribute [[{kind}]], which Metal does not define for "
            f"kernel arguments; see the MSL specification's attributes for kernel function input arguments")
    return KernelParam(name, msl_type, space, kind, index)


def parse_kernels(msl: str) -> dict[str, KernelSignature]:
    """Every ``kernel void NAME(...)`` in ``msl``, by name, in source order."""
    text = strip_comments(msl)
    kernels: dict[str, KernelSignature] = {}
    for m in re.finditer(_KERNEL, text):
        name = m.group(1)
        close = matching_paren(text, m.end() - 1)
        params = [_parse_param(name, p) for p in split_top_level(text[m.end() : close])]
        slots = [(p.attribute, p.index) for p in params if p.index is not None]
        dup = {s for s in slots if slots.count(s) > 1}
        if dup:
            a, i = min(dup)
            raise MSLSignatureError(f"kernel '{name}': two parameters are bound to [[{a}({i})]]")
        if name in kernels:
            raise MSLSignatureError(f"kernel '{name}' is defined twice")
        kernels[name] = KernelSignature(name, params, text.count("\n", 0, m.start()) + 1)
    return kernels
