"""Every ```python block in docs/*.md and README.md runs, the generated tables are current, the site builds.

Conventions (docs/index.md... are plain Markdown, read on GitHub and by mkdocs alike):

- Blocks in one page run in order in one namespace, in a fresh subprocess per page (pages are
  independent; a kernel must be defined in a file, so each page's blocks are written to a module).
- ```python {.no-run} marks a block that is not meant to run (a fragment, or code that needs a Mac).
  Keep them rare; each says why in the text around it.
- The builtin tables of language.md are generated at build time (docs/hooks/language_tables.py).
- A block that imports an optional package which is not installed (torch, mlx, triton, matplotlib)
  skips the rest of that page instead of failing.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md")) + [ROOT / "README.md"]
FENCE = re.compile(r"^```python([^\n]*)\n(.*?)^```\s*$", re.S | re.M)
OPTIONAL = ("torch", "mlx", "triton", "matplotlib", "ml_dtypes")

RUNNER = '''
import sys, traceback
SKIP = 77
blocks = {blocks!r}
ns = {{"__name__": "__docs__"}}
for i, (line, code) in enumerate(blocks):
    try:
        exec(compile(code, {module!r}, "exec"), ns)
    except ModuleNotFoundError as e:
        if e.name and e.name.split(".")[0] in {optional!r}:
            print(f"skipped from the block at line {{line}}: {{e.name}} is not installed")
            sys.exit(SKIP)
        raise
    except BaseException:
        print(f"the python block at {page}:{{line}} failed", file=sys.stderr)
        traceback.print_exc()
        sys.exit(1)
'''


def python_blocks(page: Path) -> list[tuple[int, str]]:
    """(line number, code) of each runnable ```python block of a page."""
    text = page.read_text()
    out = []
    for m in FENCE.finditer(text):
        if "no-run" in m.group(1):
            continue
        line = text.count("\n", 0, m.start()) + 2
        # pad so tracebacks and kernel source locations point at the page's own line numbers
        out.append((line, "\n" * (line - 1) + m.group(2)))
    return out


RUNNABLE = [p for p in PAGES if python_blocks(p)]


@pytest.mark.parametrize("page", RUNNABLE, ids=[p.name for p in RUNNABLE])
def test_page_examples_run(page: Path, tmp_path: Path) -> None:
    blocks = python_blocks(page)
    rel = page.relative_to(ROOT)
    # Kernels read their source with inspect: exec code compiled under the name of a real file holding it.
    module = tmp_path / (page.stem + "_doc.py")
    lines = [""] * max(line + code.count("\n") for line, code in blocks)
    for line, code in blocks:
        body = code.lstrip("\n").split("\n")
        lines[line - 1:line - 1 + len(body)] = body
    module.write_text("\n".join(lines) + "\n")
    runner = tmp_path / "run_page.py"
    runner.write_text(RUNNER.format(blocks=blocks, module=str(module), optional=OPTIONAL, page=str(rel)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENCELADUS_")}
    env["ENCELADUS_CACHE_DIR"] = os.environ.get("ENCELADUS_DOCS_CACHE", str(tmp_path.parent / "docs-cache"))
    env["MPLBACKEND"] = "Agg"
    res = subprocess.run([sys.executable, str(runner)], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    if res.returncode == 77:
        pytest.skip(res.stdout.strip())
    assert res.returncode == 0, f"{rel}:\n{res.stdout[-3000:]}\n{res.stderr[-6000:]}"


def test_no_run_blocks_are_rare() -> None:
    total = sum(len(FENCE.findall(p.read_text())) for p in PAGES)
    skipped = sum(1 for p in PAGES for m in FENCE.finditer(p.read_text()) if "no-run" in m.group(1))
    assert skipped <= max(8, total // 4), f"{skipped} of {total} python blocks are marked no-run"


def test_language_tables_cover_every_builtin() -> None:
    sys.path.insert(0, str(DOCS))
    try:
        import gen_language_table
    finally:
        sys.path.remove(str(DOCS))
    table = gen_language_table.render()
    names, support = gen_language_table.support()
    assert names and all(f"`tl.{n}`" in table for n in names)
    assert support["load"] == (True, True) and support["atomic_cas"][1]


def test_every_page_is_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    missing = [p.name for p in DOCS.glob("*.md") if p.name not in nav]
    assert not missing, f"pages missing from mkdocs.yml nav: {missing}"


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent)) or shutil.which("mkdocs")
    if mkdocs is None:
        pytest.skip("mkdocs is not installed (pip install -e '.[docs]')")
    res = subprocess.run([mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")], cwd=ROOT,
                         env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-6000:]
    warnings = [ln for ln in res.stderr.splitlines() if "WARNING" in ln]
    assert not warnings, "\n".join(warnings)
