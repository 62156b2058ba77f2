"""Type-check the proxy's CUDA output without nvcc or a GPU: many MSL files rewritten into one C++
translation unit, compiled with ``-fsyntax-only`` against ``include/cuda_stub.h`` (declarations of the
CUDA builtins the compatibility header uses). Used by the test suite on every kernel the codegen tests
launch; also a command::

    python -m benchmarks.gpu_proxy.check FILE.metal ... [--cxx clang++]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence

from .rewrite import ProxyTranslationError, translate

INCLUDE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")
_WHERE = re.compile(r"^(msl-(\d+)\.metal)(?:\.wrappers\.cu)?:(\d+)", re.MULTILINE)


def syntax_check(msls: Iterable[str], cxx: str | Sequence[str], diagnostic_fast_math: bool = False) -> list[str]:
    """Problems found (empty when every file rewrites and type-checks), each naming the kernel file.
    ``cxx``: a C++ compiler command (clang++, g++, or e.g. ("python", "-m", "ziglang", "c++"));
    ``diagnostic_fast_math``: rewritten with rewrite.py's diagnostic (the table's fast-math provider)."""
    command = [cxx] if isinstance(cxx, str) else list(cxx)
    msls = list(msls)
    problems, parts = [], ['#include "metal_cuda.cuh"\n']
    for i, msl in enumerate(msls):
        try:
            module = translate(msl, header="", inner_namespace=f"enc_m{i}", symbol_prefix=f"enc_m{i}_",
                               filename=f"msl-{i}.metal", diagnostic_fast_math=diagnostic_fast_math)
        except ProxyTranslationError as e:
            problems.append(f"msl-{i}: cannot rewrite: {e}\n{msl[:400]}")
            continue
        parts.append(module.source)
    with tempfile.TemporaryDirectory(prefix="enc-proxy-check-") as tmp:
        path = os.path.join(tmp, "corpus.cu")
        with open(path, "w") as f:
            f.write("".join(parts))
        cmd = [*command, "-std=c++20", "-fsyntax-only", "-x", "c++", "-w", "-include",
               os.path.join(INCLUDE, "cuda_stub.h"), "-I", INCLUDE, path]
        proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        bad = sorted({int(m.group(2)) for m in _WHERE.finditer(proc.stderr)})
        for i in bad[:5]:
            problems.append(f"msl-{i}: the rewritten CUDA does not type-check; its MSL begins:\n{msls[i][:600]}")
        problems.append(f"{' '.join(command)} -fsyntax-only failed:\n{proc.stderr[-6000:]}")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+")
    ap.add_argument("--cxx", default="clang++")
    args = ap.parse_args(argv)
    texts = []
    for name in args.files:
        with open(name) as f:
            texts.append(f.read())
    problems = syntax_check(texts, args.cxx)
    for p in problems:
        print(p)
    print(f"{len(texts)} files: {'OK' if not problems else f'{len(problems)} problems'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
