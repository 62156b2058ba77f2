"""Every builtin of the language has an interpreter implementation (one op, one entry)."""

import enceladus.language as tl
from enceladus.interpreter.launch import namespace
from enceladus.interpreter.ops import OPS
from enceladus.language.core import builtin_name


def test_every_builtin_is_interpreted() -> None:
    missing = sorted(name for name in dir(tl) if builtin_name(getattr(tl, name)) is not None and name not in OPS)
    assert not missing, f"builtins without an interpreter implementation: {missing}"
    math_missing = sorted(name for name in dir(tl.math)
                          if builtin_name(getattr(tl.math, name)) is not None and name not in OPS)
    assert not math_missing, f"tl.math builtins without an interpreter implementation: {math_missing}"


def test_namespace_mirrors_the_language() -> None:
    ns = namespace()
    for name in dir(tl):
        if not name.startswith("_"):
            assert hasattr(ns, name), name
    assert ns.math.exp.__wrapped__ is OPS["exp"]  # behind the guard that refuses fp8 tiles (interpreter/fp8.py)
