"""Import benchmarks/gpu_proxy (a developer tool outside the installed package) by path, under its own
package name, so no other top-level ``benchmarks`` on sys.path can shadow it."""

import importlib
import importlib.util
import pathlib
import sys

PROXY = pathlib.Path(__file__).resolve().parent.parent.parent / "benchmarks" / "gpu_proxy"
NAME = "enceladus_gpu_proxy"


def gpu_proxy(module: str):
    """The submodule ``module`` of benchmarks/gpu_proxy (e.g. "rewrite", "check")."""
    if NAME not in sys.modules:
        spec = importlib.util.spec_from_file_location(NAME, PROXY / "__init__.py",
                                                      submodule_search_locations=[str(PROXY)])
        package = importlib.util.module_from_spec(spec)
        sys.modules[NAME] = package
        spec.loader.exec_module(package)
    return importlib.import_module(f"{NAME}.{module}")
