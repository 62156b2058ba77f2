"""Every public tl builtin has an interpreter rule or a refusal stating the Apple GPU limit; both paths refuse
the same names."""

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from builtin_surface import public_builtins
from enceladus.compiler.refusals import REFUSED as COMPILER_REFUSED
from enceladus.errors import CompilationError
from enceladus.interpreter.ops import OPS
from enceladus.interpreter.refusals import REFUSED


def test_every_builtin_has_an_interpreter_rule_or_a_refusal():
    missing = sorted(q for q, name in public_builtins().items() if name not in OPS and name not in REFUSED)
    assert not missing, f"builtins with neither an interpreter rule nor a refusal: {missing}"


def test_both_paths_refuse_the_same_builtins():
    assert set(REFUSED) == set(COMPILER_REFUSED)
    for name, (reason, fix) in REFUSED.items():
        assert ("Apple GPU" in reason or "Metal" in reason) and fix.strip(), name


@enceladus.jit(interpret=True)
def uses_inline_asm(x_ptr):
    x = tl.load(x_ptr)
    y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(x_ptr, y)


def test_ptx_inline_asm_says_why_and_what_to_do():
    x = np.zeros(1, np.int32)
    with pytest.raises(CompilationError) as info:
        uses_inline_asm[(1,)](x)
    assert "this looks like PTX" in str(info.value) and "Metal Shading Language expression" in str(info.value)
