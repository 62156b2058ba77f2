"""A kernel's Python source, parsed once, with the offsets that map syntax-tree positions back to the file.

Light on purpose: ``@enceladus.jit`` makes one per kernel without loading the compiler.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import re
import textwrap
from dataclasses import dataclass
from typing import Any

from ..errors import CompilationError
from ..language.dtypes import derived


@dataclass
class KernelSource:
    """A Python function's parsed source, with the offsets that map AST positions back to the file."""

    fn: Any
    text_override: str | None = None  # the source when it is not in a file (exec, _unsafe_update_src)

    @derived  # parsed on first use (functools.cached_property would take a lock and read __dict__: see derived)
    def _parsed(self) -> tuple[ast.FunctionDef, list[str], int, int, str]:
        if self.text_override is not None:
            return _parse_text(self.text_override, self.fn)
        quick = _quick_source(self.fn)
        if quick is not None:
            return quick
        try:
            lines, start = inspect.getsourcelines(self.fn)
        except (OSError, TypeError) as e:
            raise CompilationError(
                f"cannot read the source of {self.fn.__qualname__}: {e}",
                fix="define kernels in a .py file (not in an interactive prompt or exec)",
            ) from None
        filename = inspect.getsourcefile(self.fn) or "<unknown>"
        parsed = _parse(lines, start, filename)
        if parsed is None:
            raise CompilationError(f"cannot parse the source of {self.fn.__qualname__}", kernel=self.fn.__name__,
                                   fix="define the kernel with `def` in a .py file (not in exec/eval strings or lambdas), or give its source explicitly")
        return parsed

    @property
    def tree(self) -> ast.FunctionDef:
        return self._parsed[0]

    @property
    def filename(self) -> str:
        return self._parsed[4]

    @derived
    def text(self) -> str:
        return "".join(self._parsed[1])

    def locate(self, node: ast.AST) -> tuple[int, int, str]:
        """(line in file, 0-based column in file, the source line) of ``node``."""
        _, lines, start, indent, _ = self._parsed
        lineno = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0) + indent
        idx = lineno - 1
        return start + idx, col, lines[idx] if 0 <= idx < len(lines) else ""


_WHITESPACE_ONLY_LINE = re.compile(r"^[ \t]+$", re.MULTILINE)  # the lines textwrap.dedent empties


def _parse(lines: list[str], start: int, filename: str) -> tuple[ast.FunctionDef, list[str], int, int, str] | None:
    """The function definition in ``lines`` (its decorators first), or None if they do not parse to one."""
    text = "".join(lines)
    if lines and lines[0][:1] not in ("", " ", "\t") and not _WHITESPACE_ONLY_LINE.search(text):
        dedented, indent = text, 0  # what textwrap.dedent gives back unchanged (no margin, no blank-ish lines)
    else:
        dedented = textwrap.dedent(text)
        indent = len(lines[0]) - len(lines[0].lstrip()) if dedented != text else 0
    try:
        tree = ast.parse(dedented)
    except SyntaxError:
        return None
    fdefs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if len(tree.body) != 1 or not fdefs:
        return None
    return fdefs[0], lines, start, indent, filename


def _parse_text(text: str, fn: Any) -> tuple[ast.FunctionDef, list[str], int, int, str]:
    """The definition of ``fn`` inside ``text`` (a module or function source given as a string)."""
    all_lines = textwrap.dedent(text).splitlines(keepends=True)
    try:
        tree = ast.parse("".join(all_lines))
    except SyntaxError as e:
        raise CompilationError(f"cannot parse the source of {fn.__qualname__}: {e}", kernel=fn.__name__,
                               fix="define the kernel with `def` in a .py file (not in exec/eval strings or lambdas), or give its source explicitly") from None
    fdefs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == fn.__name__]
    if not fdefs:
        raise CompilationError(f"the source given for {fn.__qualname__} does not define it", kernel=fn.__name__,
                               fix="pass source text that contains `def <kernel name>(...)` (or decorate the function itself)")
    node = fdefs[-1]
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    lines = all_lines[first - 1:node.end_lineno]
    filename = getattr(getattr(fn, "__code__", None), "co_filename", "<source>")
    parsed = _parse(lines, first, filename)
    if parsed is None:
        raise CompilationError(f"cannot parse the source of {fn.__qualname__}", kernel=fn.__name__,
                               fix="define the kernel with `def` in a .py file (not in exec/eval strings or lambdas), or give its source explicitly")
    return parsed


def _quick_source(fn: Any) -> tuple[ast.FunctionDef, list[str], int, int, str] | None:
    """The function's lines found by indentation in ``linecache`` (what ``inspect.getsourcelines`` does with
    the tokenizer, at a fraction of the cost). Any doubt (a line continued below the ``def``'s indentation,
    a multi-line string at column 0, a file that changed) makes the result fail to parse or not match the
    code object, and the caller falls back to ``inspect``."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    filename = code.co_filename
    all_lines = linecache.getlines(filename)
    first = code.co_firstlineno - 1  # the first decorator, or the def
    if not 0 <= first < len(all_lines):
        return None
    head = all_lines[first]
    indent = len(head) - len(head.lstrip())
    i = first
    while i < len(all_lines) and not all_lines[i].lstrip().startswith(("def ", "async def ")):
        i += 1  # decorators
    if indent == 0:  # a module-level function (nearly every kernel): the loop below, by one regex search
        end = _end_of_top_level_block(all_lines, i + 1)
        last = end - 1
        while last > i and (not all_lines[last].strip() or all_lines[last].lstrip().startswith("#")):
            last -= 1
    else:
        end = i + 1
        last = i
        while end < len(all_lines):
            line = all_lines[end]
            stripped = line.strip()
            if stripped and not stripped.startswith("#"):
                if len(line) - len(line.lstrip()) <= indent:
                    break
                last = end
            end += 1
    lines = all_lines[first:last + 1]
    parsed = _parse(lines, first + 1, filename)
    if parsed is None or parsed[0].name != code.co_name:
        return None
    return parsed


_UNINDENTED_CODE = re.compile(r"^[^\s#]", re.MULTILINE)  # a line whose first character is code (no indent, no '#')


def _end_of_top_level_block(all_lines: list[str], start: int) -> int:
    """The index of the first line from ``start`` on that starts with code (as ``_quick_source``'s loop finds it
    for indentation 0), or ``len(all_lines)``."""
    text = "".join(all_lines[start:])
    m = _UNINDENTED_CODE.search(text)
    return len(all_lines) if m is None else start + text.count("\n", 0, m.start())
