"""Every public tl builtin has a typing rule in the compiler or a refusal stating the Apple GPU limit."""

import pytest

import enceladus
import enceladus.language as tl
from builtin_surface import NOT_YET, TRITON_3_9_NAMES, public_builtins
from enceladus import CompilationError
from enceladus.compiler import semantic
from enceladus.compiler.frontend_expressions import _FRONTEND_BUILTINS, _library
from enceladus.compiler.refusals import REFUSED

# builtins the frontend applies itself (they take functions or print at compile time)
FRONTEND_BUILTINS = {"static_assert", "static_print", "reduce", "associative_scan", "map_elementwise"}


def test_library_and_rules_apart():
    """The frontend looks a builtin's name up in the typing rules before the library and its own builtins:
    no name may be in two of them."""
    library = _library()
    assert _FRONTEND_BUILTINS == FRONTEND_BUILTINS
    assert not set(library) & set(semantic.RULES)
    assert not FRONTEND_BUILTINS & (set(library) | set(semantic.RULES))


def test_every_builtin_has_a_typing_rule_or_a_refusal():
    library = _library()
    missing = sorted(q for q, name in public_builtins().items()
                     if name not in semantic.RULES and name not in library and name not in FRONTEND_BUILTINS
                     and name not in REFUSED)
    assert not missing, f"builtins with neither a typing rule nor a refusal: {missing}"


def test_every_refusal_states_the_limit_and_a_fix():
    for name, refusal in REFUSED.items():
        assert "Apple GPU" in refusal.reason or "Metal" in refusal.reason, name
        assert refusal.fix.strip(), name


def test_every_triton_name_is_exposed_refused_or_known_missing():
    unknown = sorted(n for n in TRITON_3_9_NAMES if not hasattr(tl, n) and n not in REFUSED and n not in NOT_YET)
    assert not unknown, f"Triton 3.9 names Enceladus neither has nor refuses: {unknown}"


@enceladus.jit
def uses_inline_asm(x_ptr):
    x = tl.load(x_ptr)
    y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(x_ptr, y)


def test_ptx_inline_asm_is_a_located_error_naming_the_difference():
    """tl.inline_asm_elementwise takes MSL expression text on Apple GPUs (tests/codegen/test_inline_msl.py)."""
    with pytest.raises(CompilationError) as info:
        enceladus.compile(uses_inline_asm, signature="*i32")
    err = info.value
    assert "this looks like PTX" in err.message and "Metal Shading Language expression" in err.message, err
    assert "MSL expression" in err.fix
    assert err.lineno is not None and "tl.inline_asm_elementwise" in err.source_line
