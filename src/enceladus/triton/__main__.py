"""``python -m enceladus.triton SCRIPT.py [args]``: run a Triton program with ``triton`` aliased to Enceladus.

``python -m enceladus.triton -m module [args]`` runs a module instead (``-m pytest`` works, though
``pytest -p enceladus.triton`` is the usual way to run test suites).
"""

from __future__ import annotations

import os
import runpy
import sys

USAGE = "usage: python -m enceladus.triton SCRIPT.py [args...]  |  python -m enceladus.triton -m MODULE [args...]"


def main(argv: list[str] | None = None) -> int:
    """Install the alias, then run the script (or module) as ``__main__`` with the remaining arguments."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        print("Runs a program written for Triton on Enceladus: 'import triton' gives Enceladus for this run only "
              "(see docs/porting.md for what is aliased).")
        return 0 if argv else 2
    from . import install

    install()
    if argv[0] == "-m":
        if len(argv) < 2:
            print(USAGE, file=sys.stderr)
            return 2
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return 0
    script = argv[0]
    if not os.path.isfile(script):
        print(f"enceladus.triton: no such script: {script}", file=sys.stderr)
        return 2
    sys.argv = argv
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
