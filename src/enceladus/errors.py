"""Errors Enceladus raises."""

from __future__ import annotations


class EnceladusError(Exception):
    """Base of the errors Enceladus raises for a kernel (``triton.TritonError`` under the compatibility entry)."""


class CompilationError(EnceladusError):
    """A kernel the compiler refuses: says where (file, line, column), what is wrong and how to fix it."""

    def __init__(self, message: str, *, filename: str | None = None, lineno: int | None = None,
                 col: int | None = None, source_line: str | None = None, fix: str | None = None,
                 kernel: str | None = None):
        self.message = message
        self.filename = filename
        self.lineno = lineno
        self.col = col
        self.source_line = source_line
        self.fix = fix
        self.kernel = kernel
        super().__init__(self._render())

    def _render(self) -> str:
        parts = []
        if self.filename is not None and self.lineno is not None:
            where = f"{self.filename}:{self.lineno}:{(self.col or 0) + 1}"
            parts.append(f"{where}: in kernel '{self.kernel}'" if self.kernel else where)
        if self.source_line is not None:
            parts.append("    " + self.source_line.rstrip())
            if self.col is not None:
                parts.append("    " + " " * self.col + "^")
        parts.append(f"error: {self.message}")
        if self.fix:
            parts.append(f"fix: {self.fix}")
        return "\n".join(parts)


class OutOfResources(CompilationError):
    """The kernel needs more of a hardware resource (threads, threadgroup memory, buffer slots) than Metal allows."""


class LaunchError(EnceladusError, RuntimeError):
    """A kernel failed while running (e.g. an out-of-bounds access caught by the cpu backend's debug mode)."""


class StaleGlobalError(RuntimeError):
    """A global (or attribute, helper, defaults) that a compiled kernel read has changed since it was compiled."""
