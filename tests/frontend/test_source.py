"""Reading a kernel's source: the indentation-based fast path must agree with ``inspect`` or defer to it."""

import inspect
import textwrap

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from enceladus.compiler.kernel import KernelAsm
from enceladus.compiler.source import KernelSource, _quick_source
from enceladus.errors import CompilationError
from enceladus.runtime import serialize

CASES = {
    "plain": '''
def f(x):
    return x + 1
''',
    "decorated_and_commented": '''
def deco(*a):
    return lambda fn: fn

@deco(1,
      2)
def f(x):
    # a comment
    y = x

# a comment at column 0 inside the body is still the body
    return y
# trailing comment
z = 3
''',
    "docstring_at_column_0": '''
def f(x):
    """A docstring
with a line at column 0
"""
    return x
''',
    "continuation_below_indent": '''
def f(x):
    y = (x +
1)
    return y
''',
    "backslash": '''
def f(x):
    y = x + \\
1
    return y
''',
    "nested_in_class": '''
class C:
    @staticmethod
    def f(x):
        return x * 2

    def g(self):
        return 0
''',
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_quick_source_agrees_with_inspect(tmp_path, name):
    path = tmp_path / f"mod_{name}.py"
    path.write_text(textwrap.dedent(CASES[name]).lstrip())
    ns: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), ns)
    fn = ns["C"].f if "C" in ns else ns["f"]
    lines, start = inspect.getsourcelines(fn)
    parsed = KernelSource(fn)._parsed
    assert parsed[1] == lines and parsed[2] == start
    assert parsed[0].name == "f"
    quick = _quick_source(fn)
    # the fast path either finds exactly what inspect finds or declines (and inspect is used)
    assert quick is None or (quick[1] == lines and quick[2] == start)
    if name in ("plain", "decorated_and_commented", "nested_in_class"):
        assert quick is not None


def test_quick_source_declines_a_changed_file(tmp_path):
    path = tmp_path / "mod_changed.py"
    path.write_text("def f(x):\n    return x\n")
    ns: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), ns)
    import linecache

    linecache.cache[str(path)] = (0, None, ["def g(x):\n", "    return x\n"], str(path))
    try:
        assert _quick_source(ns["f"]) is None  # another function's text is never taken for this one
    finally:
        linecache.cache.pop(str(path), None)


def test_kernel_asm_makes_lazy_texts_on_first_use():
    calls = []
    asm = KernelAsm({"msl": "kernel"}, lazy={"ir": lambda: calls.append(1) or "ir text"})
    assert "ir" in asm and len(asm) == 2 and asm.names() == ["msl", "ir"]
    assert calls == []
    assert asm["ir"] == "ir text" and asm["ir"] == "ir text"
    assert calls == [1]
    assert dict(asm) == {"msl": "kernel", "ir": "ir text"}
    with pytest.raises(KeyError):
        asm["nothing"]


@enceladus.jit
def _scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def test_compiled_ir_is_formatted_on_demand_and_serialized():
    ck = enceladus.compile(_scale, "*fp32:16,*fp32:16,i32", {"BLOCK": 64})
    assert isinstance(ck.asm, KernelAsm) and not dict.__contains__(ck.asm, "ir")
    assert ck.asm["ir"].startswith("func @_scale(") and "program_id" in ck.asm["ir"]
    again = serialize.from_json(serialize.to_json(enceladus.compile(_scale, "*fp32:16,*fp32:16,i32", {"BLOCK": 64})))
    assert again.asm["ir"] == ck.asm["ir"] and again.asm["ir_layouts"] == ck.asm["ir_layouts"]
    assert again.asm["msl"] == ck.asm["msl"]


def test_kernel_read_by_the_fast_path_runs():
    x = np.arange(100, dtype=np.float32)
    out = np.zeros_like(x)
    _scale[(2,)](x, out, x.size, BLOCK=64)
    np.testing.assert_array_equal(out, 2 * x)


def test_error_in_an_indented_kernel_points_at_the_file_position():
    def make():
        @enceladus.jit
        def bad(x_ptr):
            tl.store(x_ptr, not_defined_anywhere)  # noqa: F821
        return bad

    with pytest.raises(CompilationError) as info:
        make()[(1,)](np.zeros(1, np.float32))
    err = info.value
    with open(__file__) as f:
        lines = f.read().splitlines()
    assert err.filename == __file__
    assert "not_defined_anywhere" in lines[err.lineno - 1]
    assert lines[err.lineno - 1][err.col:].startswith("not_defined_anywhere"), (err.col, str(err))


def _end_by_lines(all_lines, start):
    """The first line from ``start`` on with code at indentation 0, found line by line (the loop it replaces)."""
    for end in range(start, len(all_lines)):
        stripped = all_lines[end].strip()
        if stripped and not stripped.startswith("#") and len(all_lines[end]) == len(all_lines[end].lstrip()):
            return end
    return len(all_lines)


@pytest.mark.parametrize("lines", [
    ["    x = 1\n", "\n", "# note\n", "y = 2\n"],
    ["    x = 1\n", "  \n", "\t# indented note\n", "\x0c\n", "\x0cz = 3\n", "w\n"],
    ["    x = 1\n", "\x1c\n", "#\n", "    '''\n", "text\n", "'''\n"],
    ["    x = 1\n", "\n"],
    [],
    ["def f():\n", "    pass"],
])
def test_end_of_a_top_level_block_as_the_line_loop_finds_it(lines):
    from enceladus.compiler.source import _end_of_top_level_block

    for start in range(len(lines) + 1):
        assert _end_of_top_level_block(lines, start) == _end_by_lines(lines, start)
