"""How the name-list test knows that a test exercises a name: a static reading of the test's source.

A registry entry ``"tests/codegen/test_x.py::test_y"`` for a name counts when

- the file exists and defines ``test_y`` at module level;
- ``test_y`` runs kernels on every path: it calls ``run_on_all_paths`` (which checks each path against a
  NumPy reference), directly or through a function of the same module;
- the name is used by ``test_y`` or by a ``@jit`` kernel it launches: as an attribute (``tl.name``,
  ``libdevice.name``, ``x.name``) or as a string (``getattr(libdevice, OP)`` with ``OP="name"`` in a
  ``parametrize`` list or a module-level table the test reads). Kernels are found in the test module and in the modules it imports from
  (``from . import math_kernels as mk``, ``from .kernels import k``), and one level of kernels they call.

It is a reading, not a run: the tests themselves are run by the suite.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

TESTS = Path(__file__).resolve().parent


@functools.cache
def _module(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text())
    except (OSError, SyntaxError):
        return None


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _imports(path: Path, tree: ast.Module) -> dict[str, tuple[Path, str | None]]:
    """Local name -> (module file, attribute or None for the module itself), for imports of test modules."""
    out: dict[str, tuple[Path, str | None]] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            base = path.parent if node.level else TESTS
            for _ in range(max(node.level - 1, 0)):
                base = base.parent
            parts = (node.module or "").split(".") if node.module else []
            target = base.joinpath(*parts)
            for alias in node.names:
                local = alias.asname or alias.name
                if (target / f"{alias.name}.py").exists():
                    out[local] = (target / f"{alias.name}.py", None)
                elif target.with_suffix(".py").exists():
                    out[local] = (target.with_suffix(".py"), alias.name)
    return out


# modules whose attributes are not the tile language's (np.float32 is not tl.float32)
_OTHER_MODULES = {"np", "numpy", "torch", "math", "pytest", "os", "sys", "struct", "random", "itertools"}


_TL_ROOTS = {"tl", "libdevice", "triton", "language", "enceladus"}


def _root(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _used(nodes: list[ast.AST], kernel: bool = True) -> set[str]:
    """Names used under the nodes: string constants, and attributes — in a kernel any attribute except of
    NumPy, torch, math... (``x.to``, ``tl.sum``); in a test's own body only ``tl.x`` / ``libdevice.x`` chains
    (``np_array.max()`` there is NumPy's, not the tile language's)."""
    out: set[str] = set()
    for root in nodes:
        for n in ast.walk(root):
            if isinstance(n, ast.Attribute):
                base = _root(n.value)
                if kernel and base not in _OTHER_MODULES or not kernel and base in _TL_ROOTS:
                    out.add(n.attr)
            elif isinstance(n, ast.Constant) and isinstance(n.value, str):
                out.add(n.value)
    return out


def _callees(fn: ast.FunctionDef) -> set[tuple[str, str | None]]:
    """(name, attribute) pairs the function refers to: ``k`` -> ("k", None), ``mk.k`` -> ("mk", "k")."""
    out: set[tuple[str, str | None]] = set()
    for n in ast.walk(fn):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name):
            out.add((n.value.id, n.attr))
        elif isinstance(n, ast.Name):
            out.add((n.id, None))
    return out


def _resolve(path: Path, tree: ast.Module, ref: tuple[str, str | None]) -> tuple[Path, ast.FunctionDef] | None:
    name, attr = ref
    local = _functions(tree)
    if attr is None and name in local:
        return path, local[name]
    imported = _imports(path, tree).get(name)
    if imported is None:
        return None
    file, member = imported
    if file.name == "paths.py":  # the harness (run_on_all_paths), not a kernel
        return None
    other = _module(file)
    if other is None:
        return None
    wanted = member if member is not None else attr
    fn = _functions(other).get(wanted) if wanted else None
    return (file, fn) if fn is not None else None


def _module_constants(tree: ast.Module, fn: ast.FunctionDef) -> set[str]:
    """What the module-level assignments the function reads by name use (``UNARY = {"tanh": ...}``)."""
    read = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id in read for t in targets):
                out |= _used([node.value], kernel=False)
    return out


def _runs_all_paths(path: Path, tree: ast.Module, fn: ast.FunctionDef, depth: int = 1) -> bool:
    if any(isinstance(n, ast.Name) and n.id == "run_on_all_paths" for n in ast.walk(fn)):
        return True
    if depth == 0:
        return False
    local = _functions(tree)
    return any(r[1] is None and r[0] in local and r[0] != fn.name
               and _runs_all_paths(path, tree, local[r[0]], depth - 1) for r in _callees(fn))


def exercised_names(test_id: str) -> set[str] | str:
    """The names a registered test exercises, or a string saying why the entry does not count."""
    file, _, func = test_id.partition("::")
    path = TESTS.parent / file
    tree = _module(path)
    if tree is None:
        return f"{file} does not exist or does not parse"
    fn = _functions(tree).get(func)
    if fn is None:
        return f"{file} defines no function {func}"
    if not _runs_all_paths(path, tree, fn):
        return f"{test_id} does not call run_on_all_paths (every path against a NumPy reference)"
    names = _used([fn, *fn.decorator_list], kernel=False) | _module_constants(tree, fn)
    seen: set[int] = set()
    frontier = [(path, tree, fn)]
    for _ in range(2):  # the kernels the test launches, and the @jit functions they call
        nxt = []
        for p, t, f in frontier:
            for ref in _callees(f):
                found = _resolve(p, t, ref)
                if found is None or id(found[1]) in seen or found[1] is fn:
                    continue
                seen.add(id(found[1]))
                kp, kfn = found
                names |= _used([kfn])
                nxt.append((kp, _module(kp), kfn))
        frontier = nxt
    return names


def candidates(name: str) -> list[str]:
    """Every test that exercises ``name`` (for writing registry entries): ``python tests/name_coverage.py NAME``."""
    out = []
    for path in sorted(TESTS.rglob("test_*.py")):
        tree = _module(path)
        if tree is None or "run_on_all_paths" not in path.read_text():
            continue
        for fname in _functions(tree):
            if fname.startswith("test_"):
                test_id = f"{path.relative_to(TESTS.parent)}::{fname}"
                used = exercised_names(test_id)
                if isinstance(used, set) and name in used:
                    out.append(test_id)
    return out


if __name__ == "__main__":
    import sys

    for arg in sys.argv[1:]:
        print(arg, *candidates(arg), sep="\n  ")
