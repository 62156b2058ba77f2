"""Loading kernel source for Enceladus and, with the imports swapped, for Triton (same text, two compilers)."""

from __future__ import annotations

import ast
import atexit
import importlib.util
import os
import shutil
import sys
import tempfile
from typing import Any


def load_functions(path: str, names: list[str], flavor: str) -> Any:
    """A module holding only the named top-level functions of ``path`` (no other top-level code runs),
    with ``@enceladus.jit`` kept (flavor 'enceladus') or replaced by ``@triton.jit`` and ``tl`` bound to
    ``triton.language`` (flavor 'triton')."""
    with open(path) as f:
        text = f.read()
    tree = ast.parse(text)
    lines = text.splitlines()
    parts = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in names:
            start = (node.decorator_list[0].lineno if node.decorator_list else node.lineno) - 1
            parts.append("\n".join(lines[start : node.end_lineno]))
    missing = set(names) - {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    if missing:
        raise ValueError(f"{path} has no function(s) {sorted(missing)}")
    if flavor == "triton":
        header = "import enceladus\nimport triton\nimport triton.language as tl\n"
        parts = [p.replace("@enceladus.jit", "@triton.jit") for p in parts]
    else:
        header = "import enceladus\nimport enceladus.language as tl\n"
    body = header + "\n\n" + "\n\n\n".join(parts) + "\n"
    folder = tempfile.mkdtemp(prefix="enc-proxy-src-")
    atexit.register(shutil.rmtree, folder, True)  # the kernels read their source from it until the process ends
    name = f"proxy_{flavor}_{os.path.basename(path)[:-3].replace('-', '_')}"
    file = os.path.join(folder, name + ".py")
    with open(file, "w") as f:
        f.write(body)
    spec = importlib.util.spec_from_file_location(name, file)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod
