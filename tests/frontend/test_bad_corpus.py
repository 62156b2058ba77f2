"""The bad-kernel corpus: every kernel in bad_corpus.py is refused with a CompilationError whose location
(file, line, column) points at the offending expression and whose message carries a fix.

Together with bad_kernels.py / test_errors.py (30 kernels) this is the corpus of refusals.
"""

from __future__ import annotations

import inspect

import pytest

import enceladus
from enceladus import CompilationError

from . import bad_corpus as bc

# name -> (signature, constexprs, message words, fix words, text the caret must fall on[, skip reason])
CASES: dict[str, tuple] = {
    # unsupported Python
    "dict_literal": ("*fp32", {}, "Dict is not supported", "dicts", '{"a": 1}'),
    "set_comprehension": ("*fp32", {}, "SetComp is not supported", "comprehensions", "{i for i in range(3)}"),
    "dict_comprehension": ("*fp32", {}, "DictComp is not supported", "comprehensions", "{i: i for"),
    "generator_expression": ("*fp32", {}, "GeneratorExp is not supported", "generator", "(i for i in range(3))"),
    "with_block": ("*fp32", {}, "With is not supported", "'with'", "with open"),
    "del_statement": ("*fp32", {}, "Delete is not supported", "'del'", "del y"),
    "generator_kernel": ("*fp32", {}, "Yield is not supported", "yield", "yield 1"),
    "f_string": ("*fp32", {}, "JoinedStr is not supported", "f-strings", 'f"{x_ptr}"'),
    "star_star_kwargs": ("*fp32", {}, "**kwargs are not supported", "keyword", "**kw"),
    "global_statement": ("*fp32", {}, "Global is not supported", "arguments", "global GLOBAL_DICT"),
    "global_dict": ("*fp32", {}, "mutable dict", "kernel argument", "GLOBAL_DICT"),
    "global_ndarray": ("*fp32", {}, "mutable ndarray", "kernel argument", "GLOBAL_ARRAY"),
    "class_in_kernel": ("*fp32", {}, "ClassDef is not supported", "outside kernels", "class A"),
    "nested_def": ("*fp32", {}, "FunctionDef is not supported", "@enceladus.jit", "def f"),
    "import_in_kernel": ("*fp32", {}, "Import is not supported", "outside the kernel", "import math"),
    "raise_in_kernel": ("*fp32", {}, "Raise is not supported", "tl.static_assert", "raise"),
    "assert_statement": ("*fp32, i32", {}, "message of an assert must be a constant string", "string literal",
                         ", n"),
    "walrus": ("*fp32", {}, "NamedExpr is not supported", "separate assignment", "y := 3"),
    "break_in_loop": ("*fp32, i32", {}, "Break is not supported", "while loop", "break"),
    "continue_in_loop": ("*fp32, i32", {}, "Continue is not supported", "guard", "continue"),
    "lambda_as_combine_fn": ("*fp32", {}, "Lambda is not supported", "@enceladus.jit", "lambda a, b"),
    "abs_builtin_on_tile": ("*fp32", {"BLOCK": 16}, "cannot call 'abs' on tiles", "tl.* builtins", "abs(x)"),
    "numpy_call_on_tile": ("*fp32", {}, "cannot call 'sum' on tiles", "tl.* builtins", "np.sum(x)"),
    "plain_python_call": ("*fp32", {}, "'python_helper' cannot be called", "@enceladus.jit", "python_helper(1.0)"),
    "attribute_assignment": ("*fp32", {}, "can be assigned", "tl.where", "x.dtype = tl.float32"),
    "while_true": ("*fp32", {}, "never ends", "runtime condition", "True"),
    "conditional_expression_on_tile": ("*fp32", {}, "must be a scalar", "tl.where", "x > 2"),
    "mutual_recursion": ("*fp32", {}, "recursive call", "loop", "rec_a(x)"),
    "string_value": ("*fp32", {}, "string", "number", "s)"),
    # type errors
    "pointer_times_int": ("*fp32", {}, "operator * is not defined", "pointer + integer", "x_ptr * 2"),
    "pointer_plus_pointer": ("*fp32, *fp32", {}, "operator + is not defined", "pointer + integer",
                             "x_ptr + y_ptr"),
    "pointer_modulo": ("*fp32", {}, "operator % is not defined", "pointer + integer", "x_ptr % 2"),
    "pointer_to_float": ("*fp32", {}, "cannot convert *fp32 to fp32", ".to(tl.int64)", "x_ptr.to(tl.float32)"),
    "load_through_int": ("*fp32, i32", {}, "expects a pointer", "x_ptr + offs", "tl.load(n)"),
    "store_through_literal": ("*fp32", {}, "expects a pointer", "out_ptr + offs", "tl.store"),
    "store_2d_tile_through_scalar": ("*fp32", {}, "shape [4, 4] through a single pointer", "tl.arange",
                                     "tl.store"),
    "shift_by_float": ("*fp32", {}, "needs integer operands", "cast", "x << 1.5"),
    "bitcast_to_other_width": ("*fp32", {}, "cannot bitcast int32 (32 bits) to int16", "same width",
                               "a.to(tl.int16, bitcast=True)"),
    "float64_tile": ("*fp32", {}, "no float64", "tl.float32", "tl.full"),
    "cast_to_float64": ("*fp32", {}, "no float64", "tl.float32", "tl.arange(0, 4).to(tl.float64)"),
    "where_mismatched_shapes": ("*fp32", {}, "cannot be broadcast", "x[:, None]", "tl.where(a > 1, a, b)"),
    "mask_of_other_shape": ("*fp32", {}, "cannot be broadcast", "x[:, None]", "tl.store"),
    "dot_mismatched_shapes": ("*fp32", {}, "do not agree", "tl.trans", "tl.dot(a, b)"),
    "literal_beyond_64_bits": ("*fp32", {}, "out of range", "wider", "x + 2**70"),
    "branches_of_different_types": ("*fp32, i32", {}, "in one branch and", "same type", "if n > 0"),
    "branches_scalar_and_tile": ("*fp32, i32", {}, "in one branch and", "same type", "if n > 0"),
    "loop_changes_type": ("*fp32, i32", {}, "starts as int32 but becomes fp32", ".to(tl.float32)", "for i"),
    "loop_changes_shape": ("*fp32, i32", {}, "starts as tile<4xfp32> but becomes tile<8xfp32>", "same",
                           "for i"),
    "variable_from_one_branch": ("*fp32, i32", {}, "'y' is not defined", "both branches", "y"),
    "reduce_axis_out_of_range": ("*fp32", {}, "axis 2 is out of range", "axis", "tl.sum(x, axis=2)"),
    "reshape_changes_numel": ("*fp32", {}, "(16 elements) to [4, 8] (32 elements)", "elements",
                              "tl.reshape"),
    "trans_of_1d": ("*fp32", {}, "needs a 2-D tile", "tl.trans(x, 0, 2, 1)", "tl.trans(tl.arange(0, 16))"),
    "unknown_keyword": ("*fp32", {}, "unexpected keyword argument 'foo'", "language reference", "tl.store"),
    "call_with_missing_argument": ("*fp32", {}, "missing a required argument: 'b'", "argument",
                                   "callee(x_ptr)"),
    # constexpr misuse
    "arange_runtime_end": ("*fp32, i32", {}, "must be a constexpr integer", "tl.constexpr", "tl.arange(0, n)"),
    "full_runtime_shape": ("*fp32, i32", {}, "must be a constexpr integer", "tl.constexpr", "tl.full"),
    "static_range_runtime": ("*fp32, i32", {}, "needs constexpr bounds", "range(...)", "tl.static_range(n)"),
    "static_assert_runtime": ("*fp32, i32", {}, "needs a constexpr condition", "constexprs", "tl.static_assert"),
    "constexpr_called": ("*fp32", {"B": 16}, "cannot be called inside a kernel", "tl.* builtins", "B(1)"),
    "constexpr_division_by_zero": ("*fp32", {"B": 16}, "division or modulo by zero", "zero", "B // 0"),
    "range_step_zero": ("*fp32, i32", {}, "must not be zero", "step", "range(0, n, 0)"),
    "xor_sum_of_float": ("*fp32", {}, "tl.xor_sum needs an integer tile", "bitcast", "tl.xor_sum(x, 0)"),
    "for_else": ("*fp32, i32", {}, "for/else is not supported", "flag", "for i"),
    # shapes and resources
    "full_not_pow2": ("*fp32", {}, "must be powers of two", "next_power_of_2", "tl.full"),
    "zeros_not_pow2": ("*fp32", {}, "must be powers of two", "next_power_of_2", "tl.zeros"),
    "reshape_to_not_pow2": ("*fp32", {}, "powers of two", "next_power_of_2", "tl.reshape(v, (8, 2, 3))"),
    "tile_too_large": ("*fp32", {}, "more than 1048576 elements", "smaller blocks", "tl.arange(0, 2**21)"),
    "threadgroup_memory_over_32k": ("*fp32", {}, "bytes of threadgroup memory", "smaller block sizes",
                                    "tl.reshape(x, (128, 128))"),
    "too_many_buffers": (",".join(["*fp32"] * 32), {}, "needs 32 buffer slots; Metal allows 31",
                         "fewer pointer arguments", "p0"),
    # builtins (or forms of them) only the interpreter implements
    "atomic_add_64_bit": ("*i64", {}, "tl.atomic_add on int64 is not available on Apple GPUs", "32-bit counters",
                          "tl.atomic_add"),
    "atomic_max_short": ("*i16", {}, "tl.atomic_max on int16 is not supported", "int32 buffer",
                         "tl.atomic_max"),
    "sort_tile": ("*i32", {}, "tl.sort supports 1-D and 2-D tiles", "reshape to 2-D", "tl.sort"),
    "histogram_tile": ("*i32", {}, "tl.histogram needs a 1-D integer tile", "tl.ravel", "tl.histogram"),
    "gather_tile": ("*i32", {}, "must have the rank of the source", "x[:, None]", "tl.gather"),
}


def marked_line(fn) -> tuple[int, str]:
    lines, start = inspect.getsourcelines(fn.fn)
    for i, line in enumerate(lines):
        if "# <- here" in line:
            return start + i, line
    raise AssertionError(f"{fn.__name__}: no marked line")


def expected_location(name: str) -> tuple[int, str]:
    kernel = getattr(bc, name)
    if name == "mutual_recursion":  # the call that closes the cycle, inside the second callee
        kernel = bc.rec_b
    return marked_line(kernel)


def test_corpus_is_large_enough():
    from . import test_errors

    assert len(CASES) + len(test_errors.CASES) >= 40
    kernels = {n for n, v in vars(bc).items() if isinstance(v, enceladus.JITFunction)}
    assert kernels - set(CASES) == {"rec_a", "rec_b", "callee"}, "every corpus kernel has a case"


@pytest.mark.parametrize("name", sorted(CASES))
def test_refused_at_the_offending_expression_with_a_fix(name):
    signature, constexprs, message, fix, at, *skip = CASES[name]
    if skip:
        pytest.skip(skip[0])
    with pytest.raises(CompilationError) as info:
        enceladus.compile(getattr(bc, name), signature=signature, constexprs=constexprs)
    err = info.value
    assert message in err.message, str(err)
    assert err.fix and fix in err.fix, f"fix {err.fix!r} lacks {fix!r}"
    assert f"fix: {err.fix}" in str(err)
    assert err.filename and err.filename.endswith("bad_corpus.py"), err.filename
    line_no, line = expected_location(name)
    assert err.lineno == line_no, str(err)
    start = line.index(at)
    assert start <= err.col < start + len(at), f"caret at column {err.col}, expected within {at!r}:\n{err}"
    rendered = str(err).splitlines()
    caret = next(i for i, ln in enumerate(rendered) if ln.strip() == "^")
    assert rendered[caret].index("^") - rendered[caret - 1].index(line.strip()[0]) == err.col - (
        len(line) - len(line.lstrip()))


def test_star_args_parameters_are_refused_when_decorated():
    def star(x_ptr, *rest):
        pass

    with pytest.raises(TypeError, match=r"kernel 'star': \*args/\*\*kwargs parameters are not supported"):
        enceladus.jit(star)


@pytest.mark.parametrize("num_warps", [0, -1, 3, 48, 64, 128])
def test_num_warps_out_of_range_names_the_allowed_values(num_warps):
    with pytest.raises(CompilationError) as info:
        enceladus.compile(bc.dict_literal.__class__(bc.callee.fn), signature="*fp32, fp32", num_warps=num_warps)
    assert f"num_warps={num_warps} is not supported" in info.value.message
    assert "power of two from 1 to 32" in info.value.fix
