"""mkdocs hook: fill the builtin tables of language.md from enceladus.language at build time (never stale)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import gen_language_table  # noqa: E402


def on_page_markdown(markdown: str, page, **kwargs) -> str:  # noqa: ANN001 - mkdocs hook signature
    if page.file.src_uri == "language.md" and gen_language_table.BEGIN in markdown:
        return gen_language_table.rewrite(markdown)
    return markdown
