"""Regenerate triton_names.txt: the public names of ``triton.language`` and ``triton.language.extra.libdevice``.

    python -m venv /tmp/tv && /tmp/tv/bin/pip install triton==3.9.0
    /tmp/tv/bin/python tests/conformance/data/make_triton_names.py > tests/conformance/data/triton_names.txt

A public name is one of ``dir(module)`` that does not start with an underscore (so ``dir()`` gives more than
``triton.language.__all__``: also the submodules ``core``, ``math``, ``random``, ``standard`` and helpers such as
``str_to_ty``). ``tests/conformance/test_triton_names.py`` requires each of them to be implemented or refused.
"""

from __future__ import annotations

import triton
import triton.language as tl
from triton.language.extra import libdevice


def main() -> None:
    print(f"# dir(triton.language) and dir(triton.language.extra.libdevice) of triton=={triton.__version__},")
    print("# names without a leading underscore; regenerate with tests/conformance/data/make_triton_names.py")
    for prefix, module in (("tl", tl), ("libdevice", libdevice)):
        for name in sorted(n for n in dir(module) if not n.startswith("_")):
            print(f"{prefix} {name}")


if __name__ == "__main__":
    main()
