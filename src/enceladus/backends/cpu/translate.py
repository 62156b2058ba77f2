"""The documented mechanical rewrite of MSL into a C++ translation unit, plus the generated launchers.

The rewrite keeps every line where it was (``#line`` maps compiler errors back to the MSL):

1. comments are blanked;
2. Metal attributes ``[[...]]`` (``[[buffer(0)]]``, ``[[kernel]]``, ...) are removed — the launcher
   binds parameters by the parsed attributes instead;
3. a function-scope ``threadgroup T name[N]...;`` becomes a reference to one instance per running
   threadgroup: ``T (&name)[N] = metal::__enc::threadgroup_static<T[N]>(slot, "name");``;
4. half and bfloat literals (``1.5h``, ``2bf``) become ``half(1.5f)`` / ``bfloat(2.0f)``;
5. ``#pragma unroll full`` becomes ``#pragma unroll`` (clang has no ``full`` form).

Checked builds (the default) also rewrite every ``device``/``constant``/``threadgroup`` pointer type
(``device const float*``, also in casts and helper functions) to ``::metal::__enc::cptr<const float>`` and
function-scope threadgroup arrays to ``::metal::__enc::tg_array<T[N]>`` (include/enceladus/checked.h): each
access is checked against what its argument or variable may touch. Debug builds (``race_check``) keep
race.h's threadgroup proxies and check device pointers the same way.

Checked builds also compute the int32 arithmetic the compiler lists as feeding pointer offsets
(``offset_checks``: ``[msl_line, expression, op, left, right]``, from ``metadata["offset_checks"]`` of a
generated kernel) with ``::metal::__enc::ofs32_<op>(left, right)``, which reports a result outside int32 instead
of wrapping (``apply_offset_checks``).

Files that include ``<metal_tensor>`` or ``<MetalPerformancePrimitives/...>`` are compiled as C++20:
``matmul2d<descriptor, scope>`` takes its descriptor (a struct) as a template argument.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .signature import BUILTINS, KernelParam, KernelSignature, strip_comments

_STD_ATTRS = {"likely", "unlikely", "maybe_unused", "nodiscard", "fallthrough", "noreturn", "deprecated"}
_ATTRIBUTE = re.compile(r"\[\[\s*([A-Za-z_]\w*)[^\]]*\]\]")
_TG_DECL = re.compile(
    r"(?P<lead>(?:^|[;{}])\s*)threadgroup\s+(?P<type>[A-Za-z_][\w:<>, ]*?)\s+(?P<name>[A-Za-z_]\w*)"
    r"\s*(?P<dims>(?:\[[^\]\[;]+\]\s*)*);",
    re.MULTILINE,
)
_LITERAL = re.compile(
    r"(?<![\w.])(\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+(?:[eE][+-]?\d+)?)(h|bf)\b"
)
# Calls that need the fiber scheduler; kernels without them run as a plain loop per threadgroup. Any
# simdgroup_matrix counts (its operations find their SIMD group's state on the fiber stack, matrix.h).
_NEEDS_FIBERS = re.compile(
    r"\b(threadgroup_barrier|simdgroup_barrier|simd_\w+|quad_\w+|simdgroup_load|simdgroup_store|"
    r"simdgroup_multiply\w*)\s*\(|\bmatmul2d\b|\bsimdgroup_(matrix|float8x8|half8x8|bfloat8x8)\b"
)
# simdgroup_matrix in the file: each fiber launcher finds its SIMD group's state once (see launcher).
_SIMDGROUP_MATRIX = re.compile(
    r"\b(simdgroup_load|simdgroup_store|simdgroup_multiply\w*|make_filled_simdgroup_matrix)\s*\(|"
    r"\bsimdgroup_(matrix|float8x8|half8x8|bfloat8x8)\b"
)
_UNROLL_FULL = re.compile(r"^(\s*#\s*pragma\s+unroll)\s+full\b", re.MULTILINE)
_TENSOR_INCLUDE = re.compile(r"^\s*#\s*include\s*<(?:metal_tensor|MetalPerformancePrimitives/)", re.MULTILINE)


def uses_tensor_ops(msl: str) -> bool:
    """Whether the file includes Metal 4 tensor headers (compiled as C++20, see the module docstring)."""
    return _TENSOR_INCLUDE.search(strip_comments(msl)) is not None


def needs_fibers(msl: str) -> bool:
    """Whether any code in the file synchronizes threads (conservative: any call anywhere counts)."""
    return _NEEDS_FIBERS.search(strip_comments(msl)) is not None


def _strip_attr(m: re.Match[str]) -> str:
    return m.group(0) if m.group(1) in _STD_ATTRS else " " * len(m.group(0))


def _literal(m: re.Match[str]) -> str:
    num, suffix = m.group(1), m.group(2)
    if not any(c in num for c in ".eE"):
        num += ".0"
    return f"{'half' if suffix == 'h' else 'bfloat'}({num}f)"


_TYPE = r"[A-Za-z_][\w:]*(?:\s*<[^<>;()]*>)?"
_TG_POINTER = re.compile(rf"\bthreadgroup\s+(const\s+)?({_TYPE})\s*\*")
_CONST_TG_POINTER = re.compile(rf"\bconst\s+threadgroup\s+({_TYPE})\s*\*")
_QUALS = r"(?:(?:const|volatile)\s+)*"


def _space_pointer(spaces: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w:])((?:const\s+)?)\b(?:{spaces})\s+({_QUALS})({_TYPE})\s*({_QUALS})\*")


_CHECKED_POINTER = _space_pointer("device|constant|threadgroup")
_CHECKED_DEVICE_POINTER = _space_pointer("device|constant")


def _cptr(m: re.Match[str]) -> str:
    quals = (m.group(1) + m.group(2) + m.group(4)).split()
    const = "const " if "const" in quals else ""
    volatile = "volatile " if "volatile" in quals else ""
    return f"::metal::__enc::cptr<{const}{volatile}{' '.join(m.group(3).split())}> "


def rewrite_msl(msl: str, race_check: bool = False, checked: bool = True) -> str:
    """The MSL text rewritten as C++ (same line structure). ``checked``: pointers become checked pointers
    (include/enceladus/checked.h); ``race_check``: threadgroup memory goes through the tracking proxies of
    include/enceladus/race.h (debug mode; device pointers are checked)."""
    text = strip_comments(msl)
    text = _ATTRIBUTE.sub(_strip_attr, text)
    slot = iter(range(1 << 30))

    def tg_decl(m: re.Match[str]) -> str:
        t, name, dims = " ".join(m.group("type").split()), m.group("name"), "".join(m.group("dims").split())
        if race_check:
            return (
                f"{m.group('lead')}::metal::__enc::tg_var<{t}{dims}> {name}"
                f'(&::metal::__enc::threadgroup_static<{t}{dims}>({next(slot)}, "{name}"), "{name}");'
            )
        static = f'::metal::__enc::threadgroup_static<{t}{dims}>({next(slot)}, "{name}")'
        if checked and 1 <= dims.count("[") <= 2:
            return f'{m.group("lead")}::metal::__enc::tg_array<{t}{dims}> {name}({static}, "{name}");'
        ref = f"(&{name}){dims}" if dims else f"&{name}"
        return f"{m.group('lead')}{t} {ref} = {static};"

    text = _TG_DECL.sub(tg_decl, text)
    if race_check:
        text = _CONST_TG_POINTER.sub(lambda m: f"::metal::__enc::tg_ptr<const {m.group(1)}> ", text)
        text = _TG_POINTER.sub(lambda m: f"::metal::__enc::tg_ptr<{m.group(1) or ''}{m.group(2)}> ", text)
        text = _CHECKED_DEVICE_POINTER.sub(_cptr, text)
    elif checked:
        text = _CHECKED_POINTER.sub(_cptr, text)
    text = _LITERAL.sub(_literal, text)
    text = _UNROLL_FULL.sub(r"\1     ", text)
    return text


_OFFSET_OPS = ("add", "sub", "mul", "shl")
_RAW_CAST = re.compile(r"\(::metal::__enc::cptr<([^<>]*)> \)(?=::metal::__enc::raw\()")


def _listed_line(entry: Any, lines: list[str], what: str, fields: str, matches: Callable[[Any, str], Any]) -> int:
    """The MSL line (1-based) that an offset or tile check names, after checking the entry's shape (five fields)
    and that ``matches(entry, text of that line)``: a mismatch is an internal error, never a silently dropped
    check."""
    try:
        line = int(entry[0])
        if len(entry) != 5:
            raise ValueError(entry)
    except (TypeError, ValueError, IndexError, KeyError) as exc:
        raise ValueError(f"malformed {what} check {entry!r}: expected [msl_line, {fields}] "
                         f"(metadata['{what}_checks'] of a generated kernel)") from exc
    try:
        ok = 1 <= line <= len(lines) and matches(entry, lines[line - 1])
    except (TypeError, ValueError, IndexError) as exc:
        raise ValueError(f"malformed {what} check {entry!r}: expected [msl_line, {fields}]") from exc
    if not ok:
        raise ValueError(f"internal error: {what} check {entry!r} does not match MSL line {line} "
                         f"({lines[line - 1].strip() if 1 <= line <= len(lines) else 'no such line'!r}); "
                         "please report it with the kernel")
    return line


def apply_tile_checks(text: str, tile_checks: list | tuple) -> str:
    """``text`` (rewritten MSL) with each listed tile access (``[msl_line, start, n, align, pointer expressions]``:
    every pointer of the access lies in ``[start, start + n)`` elements, by the compiler's proof) made into
    ``if (tile_in_bounds(start, n, align)) <the line on raw pointers> else <the line as it was>``: one test per
    tile when the whole extent is in bounds and aligned; otherwise each access is checked as before, so the same
    violations are reported. A pointer expression missing from its line is an internal error."""
    if not tile_checks:
        return text
    lines = text.split("\n")
    for entry in tile_checks:
        line = _listed_line(entry, lines, "tile", "start, n, align, pointer expressions",
                            lambda e, t: e[4] and any(p in t for p in e[4]) and int(e[3]) > 0
                            and int(e[3]) & (int(e[3]) - 1) == 0 and int(e[2]) > 0)
        start, n, align, exprs = entry[1], int(entry[2]), int(entry[3]), entry[4]
        checked = lines[line - 1]
        body = checked.lstrip()
        pointers = re.compile("|".join(re.escape(e) for e in sorted(exprs, key=len, reverse=True)))
        # the casts of those pointers to vector types: raw pointer casts
        raw = _RAW_CAST.sub(r"(\1*)", pointers.sub(lambda m: f"::metal::__enc::raw({m.group(0)})", body))
        lines[line - 1] = (f"{checked[:len(checked) - len(body)]}if (__builtin_expect(::metal::__enc::tile_in_bounds("
                           f"{start}, {n}, {align}), 1)) {{ {raw} }} else {{ {body} }}")
    return "\n".join(lines)


def apply_offset_checks(text: str, offset_checks: list | tuple) -> str:
    """``text`` (rewritten MSL, same lines as the MSL) with each listed expression on its line replaced by its
    overflow-checked form. An expression missing from its line is an internal error, never a silently dropped
    check."""
    if not offset_checks:
        return text
    lines = text.split("\n")
    for entry in offset_checks:
        line = _listed_line(entry, lines, "offset", "expression, op, left, right",
                            lambda e, t: e[2] in _OFFSET_OPS and e[1] in t)
        expr, op, left, right = entry[1:]
        text = lines[line - 1]
        checked = f"::metal::__enc::ofs32_{op}({left}, {right})"
        tile = _TILE_LOOP.match(text)
        if tile and text.rstrip().endswith(f"= {expr};") and text.count(expr) == 1:
            # a tile: the arithmetic stays as it is (it vectorizes); after it, on the same line, one OR over
            # the elements' overflow tests, and the reporting form only when one of them is bad
            n = tile.group(1)
            text = (f"{text.rstrip()} {{ bool __enc_bad = false; for (int e = 0; e < {n}; ++e) __enc_bad |= "
                    f"::metal::__enc::ofs32_bad_{op}({left}, {right}); if (__builtin_expect(__enc_bad, 0)) "
                    f"for (int e = 0; e < {n}; ++e) (void){checked}; }}")
        else:
            text = text.replace(expr, checked)
        lines[line - 1] = text
    return "\n".join(lines)


_TILE_LOOP = re.compile(r"^\s*for \(int e = 0; e < (\d+); \+\+e\) \w+\[e\] = ")


def _element(msl_type: str) -> str:
    """``device const half*`` -> ``const half``: the pointee or referenced type without the address space."""
    return " ".join(t for t in msl_type[:-1].split() if t not in ("device", "constant", "threadgroup"))


def _arg(p: KernelParam, race_check: bool = False, checked: bool = False) -> str:
    if race_check and p.attribute == "threadgroup" and p.msl_type.endswith("*"):
        elem = _element(p.msl_type)
        return f'::metal::__enc::tg_ptr<{elem}>(({elem}*)(__t->tg_buffers[{p.index}]), "{p.name}")'
    if checked and p.attribute in ("buffer", "threadgroup"):
        elem = _element(p.msl_type)
        table, args = ("buffers", "args") if p.attribute == "buffer" else ("tg_buffers", "tg_args")
        if p.msl_type.endswith("&"):
            return f'::metal::__enc::checked_ref<{elem}>(__t->{table}[{p.index}], &__t->{args}[{p.index}], "{elem}")'
        return f"::metal::__enc::cptr<{elem}>(({elem}*)(__t->{table}[{p.index}]), &__t->{args}[{p.index}])"
    if p.attribute in ("buffer", "threadgroup"):
        table = "buffers" if p.attribute == "buffer" else "tg_buffers"
        if p.msl_type.endswith("&"):
            return f"*({p.msl_type[:-1].strip()}*)(__t->{table}[{p.index}])"
        return f"({p.msl_type})(__t->{table}[{p.index}])"
    field, dims = BUILTINS[p.attribute]
    base = p.msl_type.replace("const ", "").strip()
    if dims == 1:
        value = field if field.isdigit() else f"__t->{field}"
        return f"({base})({value})"
    n = int(base[-1]) if base[-1].isdigit() else 1
    comps = ", ".join(f"__t->{field}[{i}]" for i in range(n))
    return f"({base})({comps})" if n == 1 else f"{base}({comps})"


def _private_args(p: KernelParam) -> bool:
    """Whether ``p`` is a generated kernel's packed scalars, ``constant K_args& enc_args [[buffer(k)]]``
    (codegen_msl/emitter.py). Every launch binds them to bytes of its own (runtime.cpp copies the launch's
    scalars into its private buffer; the debug path packs a new array) that no other argument can reach, and
    the kernel only reads them (``constant``), so a copy holds the same bytes for the whole launch. The copy is
    what lets the compiler keep them in registers: through the reference, any store of the kernel (to a buffer
    the compiler cannot tell apart from them) forces a reload in the next thread. Hand-written MSL keeps the
    reference: a ``constant`` struct there may be any buffer, which the kernel may also write."""
    return p.name == "enc_args" and p.attribute == "buffer" and p.msl_type.endswith("&") \
        and p.msl_type.split()[0] == "constant"


def uses_simdgroup_matrix(msl: str) -> bool:
    """Whether the file uses simdgroup_matrix (conservative: any mention anywhere counts)."""
    return _SIMDGROUP_MATRIX.search(strip_comments(msl)) is not None


# The lookup's result must be used (an empty asm statement reads it): a const call whose result is unused is dropped
# before the calls in the kernel are merged with it.
_SGM_LOOKUP = '  { const ::metal::__enc::sgm_ctx __c = ::metal::__enc::sgm_get(); __asm__ volatile("" : : "r"(__c.g)); }\n'


def launcher(sig: KernelSignature, race_check: bool = False, checked: bool = False, group: bool = False,
             matrix: bool = False, generated: bool = False) -> str:
    """C++ entry of a kernel: ``enceladus_thread_NAME(const EncThread*)`` (kernels on fibers: one call per thread)
    binds buffers and builtins, then calls the kernel; ``enceladus_group_NAME(EncThread*)`` (``group``: kernels
    without barriers or SIMD-group calls) runs every thread of a threadgroup in one loop: the runtime fills
    ``*__g`` for thread (0,0,0) and the loop moves it to each thread in turn (the runtime reads it for messages).
    The kernel function is inlined into its launcher (translation_unit redefines ``kernel``).

    ``matrix`` (the file uses simdgroup_matrix): the fiber launcher looks up its SIMD group's state
    (``sgm_get``, matrix.h) before the kernel runs. The lookup is a ``const`` function, so every call of it
    inlined into the kernel is that same value: the compiler drops them all, even those in loops where it could
    not move one out (a bounds check that may fail the launch comes first in the loop body).

    ``generated`` (the compiler's own kernel): the group loop reads the packed scalars (``constant K_args&
    enc_args``) from a copy made once per group, so that they stay in registers across threads (see
    :func:`_private_args`)."""
    args = ",\n      ".join(_arg(p, race_check, checked) for p in sig.params)
    if not group:
        return (
            f'extern "C" __attribute__((visibility("default"))) void enceladus_thread_{sig.name}(const EncThread* __t) {{\n'
            f"  (void)__t;\n{_SGM_LOOKUP if matrix else ''}  {sig.name}({args});\n}}\n"
        )
    # Buffers are bound once per group (locals: kernel stores cannot make the compiler reload them); the
    # builtins come from a local copy of *__g (kept in registers) that moves with the loop, as does *__g.
    bound = [p.attribute in ("buffer", "threadgroup") for p in sig.params]
    hoisted = "".join(f"  {_element(p.msl_type) if generated and _private_args(p) else 'auto&&'} __p{i} = "
                      f"{_arg(p, race_check, checked)};\n" for i, p in enumerate(sig.params) if bound[i])
    call_args = ",\n          ".join(f"__p{i}" if bound[i] else _arg(p, race_check, checked)
                                     for i, p in enumerate(sig.params))
    return (
        f'extern "C" __attribute__((visibility("default"))) void enceladus_group_{sig.name}(EncThread* __g) {{\n'
        f"  const unsigned __n0 = __g->tptg[0], __n1 = __g->tptg[1], __n2 = __g->tptg[2];\n"
        f"  const unsigned __b0 = __g->tpig[0], __b1 = __g->tpig[1], __b2 = __g->tpig[2];\n"
        f"  EncThread __l = *__g;\n"
        f"  const EncThread* __t = &__l;\n"
        f"{hoisted}"
        f"  for (unsigned __z = 0; __z < __n2; ++__z)\n"
        f"    for (unsigned __y = 0; __y < __n1; ++__y)\n"
        f"      for (unsigned __x = 0; __x < __n0; ++__x) {{\n"
        f"        ::metal::__enc::set_thread_position(&__l, __x, __y, __z, __b0, __b1, __b2);\n"
        f"        __g->tiitg = __l.tiitg;  // what the runtime reports\n"
        f"        {sig.name}({call_args});\n"
        f"      }}\n}}\n"
    )


# Ends the part of every translation unit that the build compiles through a precompiled header (the compatibility
# headers; build.precompiled_prelude). race.h and ubsan.h stay out: clang would emit their out-of-line functions
# in another order from a precompiled header, and the library would no longer be byte for byte the same.
PRELUDE_END = "#include <metal_stdlib>\n"


def translation_unit(msl: str, kernels: dict[str, KernelSignature], race_check: bool = False,
                     ubsan: bool = False, checked: bool = True, offset_checks: list | tuple = (),
                     tile_checks: list | tuple = ()) -> str:
    """The full C++ translation unit: prelude, rewritten MSL, launchers (``race_check``: debug build; ``ubsan``:
    the sanitizer handlers of include/enceladus/ubsan.h; ``checked``: every access checked, debug builds too;
    ``offset_checks``: int32 offset arithmetic computed with an overflow check, in checked builds;
    ``tile_checks``: tile accesses of proven extent checked once per tile, in checked builds)."""
    checked = checked or race_check
    group = not needs_fibers(msl)
    # device-memory race tracking for the compiler's own kernels (whose accesses it knows: `*p`, `p[i]` of scalars
    # and vectors), not for hand-written MSL, where `p[i].field` cannot go through a proxy
    generated = msl.startswith("// Generated by Enceladus")
    device_races = race_check and generated
    body = rewrite_msl(msl, race_check, checked)
    if checked:
        # tiles first: an offset expression inside a tile access's pointer is then checked on both of its paths;
        # none in device-race builds (a tile checked once goes through raw pointers, which the tracking cannot see)
        body = apply_offset_checks(apply_tile_checks(body, () if device_races else tile_checks), offset_checks)
    parts = [
        "// Generated by enceladus.backends.cpu from MSL; see translate.py for the rewrite rules.\n",
        ("#define ENCELADUS_DEVICE_RACE 1\n" if device_races else "")
        + PRELUDE_END + ("#include <enceladus/race.h>\n" if race_check else "")
        + ("#include <enceladus/ubsan.h>\n" if ubsan else "")
        # each kernel has one caller, its launcher: inlined there (no by-value copies of its arguments)
        + "#undef kernel\n#define kernel __attribute__((always_inline)) inline\n",
        '#line 1 "kernel.metal"\n',
        body,
        '\n#line 1 "enceladus_launcher.cpp"\n',
        (
            'extern "C" __attribute__((visibility("default"))) unsigned enceladus_bind(const EncRuntimeApi* api) {\n'
            "  ::metal::__enc::rt = api;\n  return ENC_ABI_VERSION;\n}\n"
        ),
    ]
    matrix = not group and uses_simdgroup_matrix(msl)
    parts.extend(launcher(sig, race_check, checked, group, matrix, generated) for sig in kernels.values())
    return "".join(parts)
