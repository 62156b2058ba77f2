"""tl.inline_asm_elementwise with MSL expression text, on every path (the interpreter runs the expression as a
small MSL kernel), against NumPy; PTX text and what an expression cannot do are located refusals."""

import numpy as np
import pytest

import enceladus
from paths import ALL_PATHS, cpu_available, on_path, path_missing, run_on_all_paths

from . import inline_kernels as ik

RNG = np.random.default_rng(12)


def test_inline_msl_expression():
    n = 1000
    x = RNG.standard_normal(n).astype(np.float32)
    y = RNG.standard_normal(n).astype(np.float32)
    want = (x.astype(np.float64) * y + 0.5).astype(np.float32)  # fma: one rounding
    bits = (x.view(np.uint32) >> 23) & 0xFF
    run_on_all_paths(ik.inline_msl_kernel, (enceladus.cdiv(n, 256),),
                     lambda: (x, y, np.zeros(n, np.float32), np.zeros(n, np.uint32), n),
                     lambda *a: {2: want, 3: bits.astype(np.uint32)}, constexprs={"BLOCK": 256}, rtol=0, atol=0)


@pytest.mark.parametrize("path", ALL_PATHS)
@pytest.mark.parametrize("kind,message", [("ptx", "this looks like PTX"), ("pack", "pack=4"),
                                          ("argument", r"\$2 names no argument")])
def test_inline_refusals(kind, message, path):
    if path == "cpu" and not cpu_available():
        path_missing(path, "no C++ compiler")
    with pytest.raises(enceladus.CompilationError, match=message) as e:
        on_path(ik.inline_refusals_kernel, path)[(1,)](np.zeros(4, np.float32), KIND=kind)
    assert e.value.lineno is not None
