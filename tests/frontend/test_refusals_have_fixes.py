"""Every refusal the compiler can raise carries a suggested fix (docs/index.md promises it).

The corpora (bad_corpus.py, bad_kernels.py) check refusals at run time; this test checks every place in
the compiler that builds a refusal — ``SemanticError(message, fix)``, ``self.error(node, message, fix)``,
``CompilationError(..., fix=...)``, ``OutOfResources(..., fix=...)`` — so a new refusal without a fix
fails here even before a corpus kernel triggers it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import enceladus

SRC = Path(enceladus.__file__).parent
SCANNED = ("compiler", "language")
# constructor name -> index of the positional argument that is the fix
FIX_POSITION = {"SemanticError": 1, "error": 2, "CompilationError": None, "OutOfResources": None}


def refusals_without_a_fix(source: str, filename: str) -> list[str]:
    """``file:line`` of each refusal built in ``source`` without a fix (or with an empty one)."""
    missing = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
        if name not in FIX_POSITION or (name == "error" and not isinstance(f, ast.Attribute)):
            continue
        pos = FIX_POSITION[name]
        fix = next((k.value for k in node.keywords if k.arg == "fix"), None)
        if fix is None and pos is not None and len(node.args) > pos:
            fix = node.args[pos]
        if any(k.arg is None for k in node.keywords) or any(isinstance(a, ast.Starred) for a in node.args):
            continue  # forwarded arguments (**kw): the fix is checked where they are built
        empty = fix is None or (isinstance(fix, ast.Constant) and not fix.value)
        if empty:
            missing.append(f"{filename}:{node.lineno}")
    return sorted(missing, key=lambda s: (s.rsplit(":", 1)[0], int(s.rsplit(":", 1)[1])))


def test_every_refusal_in_the_compiler_has_a_fix():
    missing = []
    for package in SCANNED:
        for path in sorted((SRC / package).rglob("*.py")):
            missing += refusals_without_a_fix(path.read_text(), str(path.relative_to(SRC)))
    assert not missing, "refusals without a suggested fix: " + ", ".join(missing)


def test_a_refusal_without_a_fix_is_found():
    source = ('def f(b, x):\n'
              '    if x:\n'
              '        raise SemanticError("tl.xor_sum needs an integer tile")\n'
              '    raise self.error(node, "no fix either")\n'
              'def g():\n'
              '    raise SemanticError("fine", "use an integer tile")\n'
              'def h():\n'
              '    raise CompilationError("empty", fix="")\n')
    assert refusals_without_a_fix(source, "m.py") == ["m.py:3", "m.py:4", "m.py:8"]
