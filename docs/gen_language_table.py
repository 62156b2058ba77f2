"""Generate the builtin tables of docs/language.md from ``enceladus.language`` itself, so they cannot drift.

The mkdocs hook docs/hooks/language_tables.py calls ``rewrite`` at build time.

    python docs/gen_language_table.py          # rewrite the tables in docs/language.md
    python docs/gen_language_table.py --check  # exit 1 if they are out of date (tests/test_docs.py runs this)

"Compiler" is derived from ``enceladus.compiler.semantic.RULES`` (one typing rule per builtin) plus the few
builtins the frontend handles itself; "Interpreter" from ``enceladus.interpreter.ops.OPS``.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

PAGE = Path(__file__).resolve().parent / "language.md"
BEGIN = "<!-- BEGIN GENERATED: builtins (python docs/gen_language_table.py) -->"
END = "<!-- END GENERATED: builtins -->"

# Builtins the compiler's frontend implements directly rather than through a typing rule in RULES.
from enceladus.compiler.library import LIBRARY  # noqa: E402  (builtins written in the tile language)

FRONTEND_BUILTINS = {"reduce", "associative_scan", "static_assert", "static_print", "static_range", "range",
                     "map_elementwise"}

GROUPS = [
    ("Programs", ["program_id", "num_programs"]),
    ("Creation", ["arange", "full", "zeros", "zeros_like", "cast"]),
    ("Memory", ["load", "store"]),
    ("Atomics", ["atomic_add", "atomic_and", "atomic_cas", "atomic_max", "atomic_min", "atomic_or", "atomic_xchg",
                 "atomic_xor"]),
    ("Math", ["abs", "ceil", "cdiv", "clamp", "cos", "erf", "exp", "exp2", "fdiv", "floor", "fma", "log", "log2",
              "maximum", "minimum", "rsqrt", "sigmoid", "sin", "sqrt", "umulhi", "where"]),
    ("Reductions and scans", ["sum", "max", "min", "argmax", "argmin", "xor_sum", "reduce_or", "reduce", "cumsum", "cumprod",
                              "associative_scan", "sort", "bitonic_merge", "histogram"]),
    ("Shape", ["broadcast", "broadcast_to", "cat", "expand_dims", "flip", "gather", "interleave", "join", "permute",
               "ravel", "reshape", "split", "squeeze", "trans", "unsqueeze", "view", "swizzle2d"]),
    ("Matrix multiply", ["dot", "dot_scaled"]),
    ("Random numbers", ["rand", "randn", "randint", "randint4x", "rand4x", "randn4x", "philox", "philox_impl",
                        "uint_to_uniform_float", "pair_uniform_to_normal"]),
    ("Compiler hints", ["assume", "multiple_of", "max_contiguous", "max_constancy"]),
    ("Loops", ["range", "static_range"]),
    ("Debugging", ["static_assert", "static_print", "device_assert", "device_print", "debug_barrier"]),
]


def summary(obj: object) -> str:
    doc = inspect.getdoc(obj) or ""
    first = doc.split("\n\n")[0].replace("\n", " ").strip()
    return first.replace("|", "\\|") or "(no docstring)"


def support() -> tuple[list[str], dict[str, tuple[bool, bool]]]:
    """(builtin names of tl.__all__, name -> (compiler supports it, interpreter supports it))."""
    import enceladus.language as tl
    from enceladus.compiler import semantic
    from enceladus.interpreter.ops import OPS
    from enceladus.language.core import builtin_name

    names = []
    table = {}
    for name in sorted(tl.__all__):
        obj = getattr(tl, name)
        if builtin_name(obj) is None and name not in ("range", "static_range"):
            continue
        names.append(name)
        table[name] = (name in semantic.RULES or name in FRONTEND_BUILTINS or name in LIBRARY,
                       name in OPS or name in FRONTEND_BUILTINS)
    return names, table


def render() -> str:
    import enceladus.language as tl

    names, table = support()
    grouped = {n for _, members in GROUPS for n in members}
    groups = [(title, [n for n in members if n in table]) for title, members in GROUPS]
    rest = [n for n in names if n not in grouped]
    if rest:
        groups.append(("Other", rest))
    n_comp = sum(1 for n in names if table[n][0])
    lines = [BEGIN, "",
             f"{len(names)} builtins; the compiler supports {n_comp}, the interpreter all of them "
             "(✔ supported, — interpreter only: the compiler refuses it with a `CompilationError` that suggests "
             "`ENCELADUS_INTERPRET=1`).", ""]
    for title, members in groups:
        lines += [f"### {title}", "", "| builtin | compiler | interpreter | summary |", "|---|:-:|:-:|---|"]
        for n in members:
            comp, interp = table[n]
            lines.append(f"| `tl.{n}` | {'✔' if comp else '—'} | {'✔' if interp else '—'} | {summary(getattr(tl, n))} |")
        lines.append("")
    math_names = sorted(n for n in dir(tl.math) if not n.startswith("_") and callable(getattr(tl.math, n)))
    lines += ["`tl.math` holds the same math functions under their Triton names: "
              + ", ".join(f"`{n}`" for n in math_names) + ".", ""]
    lines += libdevice_lines()
    lines += [END]
    return "\n".join(lines)


def libdevice_lines() -> list[str]:
    """The table of ``enceladus.language.extra.libdevice``, and the functions refused (float64 only)."""
    from enceladus.compiler import semantic
    from enceladus.compiler.refusals import LIBDEVICE_REFUSED
    from enceladus.interpreter.ops import OPS
    from enceladus.language.core import builtin_name
    from enceladus.language.extra import libdevice

    lines = ["### libdevice", "",
             "`from enceladus.language.extra import libdevice` (Triton's `triton.language.extra.libdevice`).", "",
             "| function | compiler | interpreter | summary |", "|---|:-:|:-:|---|"]
    for n in sorted(x for x in dir(libdevice) if not x.startswith("_")):
        name = builtin_name(getattr(libdevice, n))
        if name is None:
            continue
        comp, interp = name in semantic.RULES, name in OPS
        lines.append(f"| `libdevice.{n}` | {'✔' if comp else '—'} | {'✔' if interp else '—'} | "
                     f"{summary(getattr(libdevice, n))} |")
    by_reason: dict[str, list[str]] = {}
    for n, refusal in sorted(LIBDEVICE_REFUSED.items()):
        by_reason.setdefault(refusal.reason, []).append(n)
    for reason, names in by_reason.items():
        lines += ["", f"Refused ({reason}): " + ", ".join(f"`{n}`" for n in names)
                  + ". The error names the float32 function to use instead."]
    return lines + [""]


def rewrite(text: str) -> str:
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[:start] + render() + text[end:]


def main() -> None:
    text = PAGE.read_text()
    new = rewrite(text)
    if "--check" in sys.argv:
        if new != text:
            print("docs/language.md is out of date: run python docs/gen_language_table.py", file=sys.stderr)
            sys.exit(1)
        return
    PAGE.write_text(new)


if __name__ == "__main__":
    main()
