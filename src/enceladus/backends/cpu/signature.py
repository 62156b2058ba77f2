"""Parsing of MSL kernel signatures (``kernel void NAME(...)``) into KernelSignature objects."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

from .errors import MSLSyntaxError

ADDRESS_SPACES = ("device", "constant", "threadgroup", "thread")

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
SCALAR_BUILTIN_TYPES = ("uint", "ushort")
VECTOR_BUILTIN_TYPES = ("uint", "ushort", "uint2", "ushort2", "uint3", "ushort3")


class KernelParam(NamedTuple):
    """One kernel parameter: ``(name, msl_type, address_space, attribute, index)``."""

    name: str
    msl_type: str  # declared type without the name, e.g. "device const half*"
    address_space: str | None
    attribute: str  # "buffer", "threadgroup", or a builtin such as "thread_position_in_grid"
    index: int | None


@dataclass(frozen=True)
class KernelSignature:
    """A parsed ``kernel void NAME(...)`` declaration."""

    name: str
    params: list[KernelParam]
    line: int  # 1-based line of the declaration in the MSL text

    @property
    def buffer_params(self) -> list[KernelParam]:
        return [p for p in self.params if p.attribute == "buffer"]

    @property
    def threadgroup_params(self) -> list[KernelParam]:
        return [p for p in self.params if p.attribute == "threadgroup"]

    def __str__(self) -> str:
        inner = ", ".join(
            f"{p.msl_type} {p.name} [[{p.attribute}{'' if p.index is None else f'({p.index})'}]]"
            for p in self.params
        )
        return f"kernel void {self.name}({inner})"


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_KERNEL = re.compile(r"(?:\bkernel|\[\[\s*kernel\s*\]\])\s+void\s+([A-Za-z_]\w*)\s*\(")
_ATTR = re.compile(r"\[\[\s*([A-Za-z_]\w*)\s*(?:\(\s*(\d+)\s*\))?\s*\]\]\s*$")
_DECL = re.compile(r"^(.*?)([A-Za-z_]\w*)\s*$", re.DOTALL)


def strip_comments(text: str) -> str:
    """Blank out comments, keeping every newline so that offsets and line numbers stay valid."""
    return _COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def matching_paren(text: str, open_pos: int) -> int:
    depth = 0
    for i in range(open_pos, len(text)):
        c = text[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
    raise MSLSyntaxError(f"unbalanced parentheses starting at line {text.count(chr(10), 0, open_pos) + 1}")


def split_top_level(text: str) -> list[str]:
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
    attr = _ATTR.search(text)
    if attr is None:
        raise MSLSyntaxError(
            f"kernel '{kernel}': parameter '{text}' has no attribute; give buffers an explicit "
            f"[[buffer(n)]] and builtins their [[...]] attribute (the cpu backend binds by attribute)"
        )
    decl = text[: attr.start()].strip()
    m = _DECL.match(decl)
    if m is None or not m.group(1).strip():
        raise MSLSyntaxError(f"kernel '{kernel}': cannot parse parameter '{text}'")
    msl_type, name = " ".join(m.group(1).split()), m.group(2)
    tokens = re.findall(r"[A-Za-z_]\w*", msl_type)
    space = next((t for t in tokens if t in ADDRESS_SPACES), None)
    kind, index = attr.group(1), (int(attr.group(2)) if attr.group(2) is not None else None)
    if kind in ("buffer", "threadgroup"):
        if index is None:
            raise MSLSyntaxError(f"kernel '{kernel}': parameter '{name}' needs an index: [[{kind}(n)]]")
        if not (0 <= index < 31):
            raise MSLSyntaxError(
                f"kernel '{kernel}': parameter '{name}': [[{kind}({index})]] is outside 0..30"
            )
        if not msl_type.endswith(("*", "&")):
            raise MSLSyntaxError(
                f"kernel '{kernel}': [[{kind}({index})]] parameter '{name}' must be a pointer or reference, "
                f"got '{msl_type}'"
            )
        expected = ("device", "constant") if kind == "buffer" else ("threadgroup",)
        if space not in expected:
            raise MSLSyntaxError(
                f"kernel '{kernel}': [[{kind}({index})]] parameter '{name}' must be in the "
                f"{' or '.join(expected)} address space, got '{msl_type}'"
            )
    elif kind in BUILTINS:
        allowed = VECTOR_BUILTIN_TYPES if BUILTINS[kind][1] == 3 else SCALAR_BUILTIN_TYPES
        base = msl_type.replace("const ", "").strip()
        if base not in allowed:
            raise MSLSyntaxError(
                f"kernel '{kernel}': builtin [[{kind}]] parameter '{name}' has type '{msl_type}'; "
                f"use one of {', '.join(allowed)}"
            )
    else:
        raise MSLSyntaxError(
            f"kernel '{kernel}': parameter '{name}' has attribute [[{kind}]], which the cpu backend does not "
            f"support; supported: buffer(n), threadgroup(n), {', '.join(BUILTINS)}"
        )
    return KernelParam(name, msl_type, space, kind, index)


def parse_kernels(msl: str) -> dict[str, KernelSignature]:
    """Every ``kernel void NAME(...)`` in ``msl``, by name, in source order."""
    text = strip_comments(msl)
    kernels: dict[str, KernelSignature] = {}
    for m in _KERNEL.finditer(text):
        name = m.group(1)
        close = matching_paren(text, m.end() - 1)
        params = [_parse_param(name, p) for p in split_top_level(text[m.end() : close])]
        slots = [(p.attribute, p.index) for p in params if p.index is not None]
        dup = {s for s in slots if slots.count(s) > 1}
        if dup:
            a, i = min(dup)
            raise MSLSyntaxError(f"kernel '{name}': two parameters are bound to [[{a}({i})]]")
        if name in kernels:
            raise MSLSyntaxError(f"kernel '{name}' is defined twice")
        kernels[name] = KernelSignature(name, params, text.count("\n", 0, m.start()) + 1)
    return kernels
