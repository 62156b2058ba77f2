"""Every refusal of the compiler is a CompilationError pointing at the offending expression, with a fix."""

import inspect

import numpy as np
import pytest

import enceladus
from enceladus import CompilationError

from . import bad_kernels as bk

# kernel -> (signature, constexprs, words the message must contain, words the fix must contain)
CASES = {
    "uses_list": ("*fp32", {}, "lists are not supported", "tuple"),
    "calls_unknown": ("*fp32", {}, "not defined", None),
    "tile_if": ("*fp32", {"BLOCK": 16}, "must be a scalar", "tl.where"),
    "arange_not_pow2": ("*fp32", {}, "not a power of two", "tl.arange(0, 128)"),
    "ptr_plus_float": ("*fp32", {}, "floating-point", "integers"),
    "pow_on_tile": ("*fp32", {"BLOCK": 16}, "'**' is not defined", "x * x"),
    "literal_out_of_range": ("*u8", {"BLOCK": 16}, "Scalar 300 is out of range for type uint8", "wider"),
    "mismatched_shapes": ("*i32", {}, "cannot be broadcast", "x[:, None]"),
    "store_tile_through_scalar": ("*i32", {}, "through a single pointer", "tl.arange"),
    "float_bitwise": ("*fp32", {"BLOCK": 16}, "needs integer operands", "cast"),
    "try_except": ("*fp32", {}, "Try is not supported", "masks"),
    "lambda_in_kernel": ("*fp32", {}, "Lambda is not supported", "@enceladus.jit"),
    "list_comprehension": ("*fp32", {}, "ListComp is not supported", "tl.arange"),
    "mutable_global": ("*fp32", {}, "mutable list", "argument"),
    "and_on_tiles": ("*fp32", {"BLOCK": 16}, "'and' needs boolean operands", "&"),
    "slicing_a_tile": ("*fp32", {"BLOCK": 16}, "indexed with None and ':'", "masks"),
    "returns_value": ("*fp32", {}, "cannot return a value", "tl.store"),
    "static_assert_fails": ("*fp32", {"BLOCK": 16}, "BLOCK must be at least 64", None),
    "exp_of_int": ("*fp32", {"BLOCK": 16}, "Expected dtype ['fp32', 'fp64'] but got int32", "tl.float32"),
    "mask_not_bool": ("*fp32", {"BLOCK": 16}, "must be a boolean tile", "offs < n"),
    "floordiv_float": ("*fp32", {"BLOCK": 16}, "not defined on floating-point", "tl.floor"),
    "signedness_division": ("*i32, *u32", {"BLOCK": 16}, "different signedness", "same signedness"),
    "print_in_kernel": ("*fp32", {}, "print() is not supported", "ENCELADUS_INTERPRET"),
    "while_loop": ("*fp32", {}, "never ends", "runtime condition"),
    "undefined_name": ("*fp32", {}, "'undefined_thing' is not defined", None),
    "recursive": ("*fp32", {}, "recursive call", "loop"),
    "matmul_operator": ("*fp32", {"BLOCK": 16}, "'@' is not defined", "tl.dot"),
    "chained_compare": ("*fp32", {"BLOCK": 16}, "chained comparisons", "&"),
    "bad_program_id_axis": ("*i32", {}, "must be 0, 1 or 2", None),
    "unknown_tl_attr": ("*i32", {}, "has no attribute 'no_such_builtin'", "language reference"),
}


def marked_line(fn) -> int:
    lines, start = inspect.getsourcelines(fn.fn)
    for i, line in enumerate(lines):
        if "# <- here" in line:
            return start + i
    raise AssertionError("no marked line")


@pytest.mark.parametrize("name", sorted(CASES))
def test_refusal_points_at_the_expression(name):
    kernel = getattr(bk, name)
    signature, constexprs, message, fix = CASES[name]
    with pytest.raises(CompilationError) as info:
        enceladus.compile(kernel, signature=signature, constexprs=constexprs)
    err = info.value
    assert message in err.message, err
    assert err.fix, f"refusal without a fix: {err}"  # every refusal carries one (docs/index.md)
    if fix is not None:
        assert fix in err.fix, err
    assert err.filename.endswith("bad_kernels.py")
    assert err.lineno == marked_line(kernel), str(err)
    assert err.source_line and err.source_line.strip().split("#")[0].strip() in str(err)
    # the caret sits under a character of the offending line
    rendered = str(err).splitlines()
    caret = next(i for i, line in enumerate(rendered) if line.strip() == "^")
    assert rendered[caret - 1].strip() == err.source_line.strip()
    assert 0 <= err.col < len(err.source_line)


def test_error_message_renders_location_caret_and_fix():
    with pytest.raises(CompilationError) as info:
        enceladus.compile(bk.tile_if, signature="*fp32", constexprs={"BLOCK": 16})
    text = str(info.value)
    assert "bad_kernels.py:" in text and "in kernel 'tile_if'" in text
    assert "    if x > 0:" in text
    assert "fix: use tl.where" in text
    # the caret points at the condition `x > 0`
    lines = text.splitlines()
    src = next(line for line in lines if "if x > 0" in line)
    caret = lines[lines.index(src) + 1]
    assert caret.index("^") == src.index("x > 0")


def test_launch_reports_compilation_error_too():
    x = np.zeros(16, np.float32)
    with pytest.raises(CompilationError, match="not a power of two"):
        bk.arange_not_pow2[(1,)](x)


@pytest.mark.parametrize("num_warps", [0, 3, 64])
def test_num_warps_out_of_range(num_warps):
    with pytest.raises(CompilationError, match="num_warps"):
        enceladus.compile(bk.returns_value.__class__(bk.static_assert_fails.fn), signature="*fp32",
                          constexprs={"BLOCK": 64}, num_warps=num_warps)
