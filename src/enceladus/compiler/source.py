"""A kernel's Python source, parsed once, with the offsets that map syntax-tree positions back to the file.

Light on purpose: ``@enceladus.jit`` makes one per kernel without loading the compiler.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ..errors import CompilationError


@dataclass
class KernelSource:
    """A Python function's parsed source, with the offsets that map AST positions back to the file."""

    fn: Any

    @cached_property
    def _parsed(self) -> tuple[ast.FunctionDef, list[str], int, int, str]:
        try:
            lines, start = inspect.getsourcelines(self.fn)
        except (OSError, TypeError) as e:
            raise CompilationError(
                f"cannot read the source of {self.fn.__qualname__}: {e}",
                fix="define kernels in a .py file (not in an interactive prompt or exec)",
            ) from None
        text = "".join(lines)
        dedented = textwrap.dedent(text)
        indent = len(lines[0]) - len(lines[0].lstrip()) if dedented != text else 0
        tree = ast.parse(dedented)
        fdef = next(n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
        filename = inspect.getsourcefile(self.fn) or "<unknown>"
        return fdef, lines, start, indent, filename

    @property
    def tree(self) -> ast.FunctionDef:
        return self._parsed[0]

    @property
    def filename(self) -> str:
        return self._parsed[4]

    @cached_property
    def text(self) -> str:
        return "".join(self._parsed[1])

    def locate(self, node: ast.AST) -> tuple[int, int, str]:
        """(line in file, 0-based column in file, the source line) of ``node``."""
        _, lines, start, indent, _ = self._parsed
        lineno = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0) + indent
        idx = lineno - 1
        return start + idx, col, lines[idx] if 0 <= idx < len(lines) else ""
