"""The layering rules of docs/architecture.md, enforced on every import in src/enceladus.

Imports flow one way: ``language`` <- ``compiler`` <- ``backends`` <- ``runtime`` <- public API / CLI. The
backends never import the runtime or each other; the compiler never imports the runtime; the interpreter (an
independent implementation of the language) imports only ``language`` and ``errors``. Lazy imports inside
functions count too.
"""

from __future__ import annotations

import ast
import os

import enceladus

SRC = os.path.dirname(enceladus.__file__)

# layer -> the enceladus packages it may import (besides itself)
ALLOWED = {
    "errors": set(),
    "cachedir": set(),  # the one cache-directory module (disk cache and cpu build cache)
    "language": {"errors"},
    "compiler": {"language", "errors"},
    "backends.cpu": {"language", "errors", "compiler", "cachedir"},
    "backends.metal": {"language", "errors", "compiler"},
    "interpreter": {"language", "errors"},
    # the runtime also uses two utilities of the public surface, lazily: do_bench (autotuner), layout drawings
    "runtime": {"language", "errors", "cachedir", "compiler", "backends.cpu", "backends.metal", "interpreter",
                "testing", "tools"},
}
# the public API, CLI and Triton compatibility entry: may import anything
TOP = {"__init__", "cli", "selftest", "testing", "tools", "triton", "__main__"}


def layer_of(module: str) -> str:
    """``enceladus.backends.cpu.library`` -> ``backends.cpu``; ``enceladus.compiler.ir`` -> ``compiler``."""
    parts = module.split(".")[1:]
    if not parts:
        return "__init__"
    if parts[0] == "backends" and len(parts) > 1:
        return "backends." + parts[1]
    return parts[0]


def _module_name(path: str) -> str:
    rel = os.path.relpath(path, os.path.dirname(SRC))[:-3].replace(os.sep, ".")
    return rel[: -len(".__init__")] if rel.endswith(".__init__") else rel


def _imports(path: str, module: str | None = None, text: str | None = None) -> list[tuple[int, str]]:
    """Every enceladus module ``path`` imports (absolute names), with line numbers."""
    module = module or _module_name(path)
    package = module if path.endswith("__init__.py") else module.rsplit(".", 1)[0]
    if text is None:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    tree = ast.parse(text, path)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "enceladus"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "enceladus":
                continue
            if node.module is None or target.count(".") < 2:  # `from . import x`, `from .. import compiler`
                out += [(node.lineno, f"{target}.{a.name}") for a in node.names]
            else:
                out.append((node.lineno, target))
    return out


def violations() -> list[str]:
    """Every import in src/enceladus that breaks the layering rules."""
    bad = []
    for root, _, files in os.walk(SRC):
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(root, f)
            here = layer_of(_module_name(path))
            if here in TOP:
                continue
            allowed = ALLOWED[here] | {here}
            for lineno, target in _imports(path):
                there = layer_of(target)
                if there == "backends":  # `from .. import backends`: the package itself
                    continue
                if there not in allowed:
                    bad.append(f"{os.path.relpath(path, SRC)}:{lineno}: {here} imports {target} ({there})")
    return bad


def test_every_layer_is_known():
    assert set(ALLOWED) | TOP >= {layer_of(_module_name(os.path.join(r, f)))
                                  for r, _, fs in os.walk(SRC) for f in fs if f.endswith(".py")}


def test_imports_follow_the_layering_rules():
    bad = violations()
    assert not bad, "imports that break docs/architecture.md's layering rules:\n" + "\n".join(bad)


def test_the_scanner_sees_relative_and_lazy_imports():
    """The checker itself: relative, absolute and lazy (function-level) imports resolve to their layer."""
    text = """
from ...runtime import arguments
import enceladus.backends.cpu
from .. import cpu


def f():
    from ...runtime.stream import synchronize
"""
    found = _imports("launcher.py", "enceladus.backends.metal.launcher", text)
    assert [(n, layer_of(t)) for n, t in found] == [(2, "runtime"), (3, "backends.cpu"), (4, "backends.cpu"),
                                                    (8, "runtime")]
    assert layer_of("enceladus") == "__init__"


def _dunder_strings(path: str) -> set[str]:
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and len(n.value) > 4 and n.value.startswith("__") and n.value.endswith("__") and n.value.strip("_").isidentifier()}


# dunder names the compiler may spell: Python's own protocol attributes, never keys of our own making
PYTHON_DUNDERS = {"__defaults__", "__kwdefaults__", "__enceladus_jit__", "__enceladus_host_const__", "__code__",
                  "__name__", "__qualname__", "__module__", "__array__", "__getitem__", "__init__", "__call__"}


def test_the_compiler_reads_no_magic_keys():
    """Launch options and probe findings reach the compiler as arguments (structs=, dot_backend=, enable_fp_fusion=,
    device=), never as "__x__" entries of the constexprs or of other dicts."""
    found = {}
    for root, _dirs, files in os.walk(os.path.join(SRC, "compiler")):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(root, name)
                extra = _dunder_strings(path) - PYTHON_DUNDERS
                if extra:
                    found[os.path.relpath(path, SRC)] = sorted(extra)
    assert not found, f"magic keys in the compiler: {found}"
