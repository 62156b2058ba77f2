"""Run one fuzz program (a module with ``fuzz_kernel`` and ``LAUNCH``) on the interpreter and the cpu backend.

``differential(path)`` imports the module from its file (the frontend reads kernels' source from files),
makes the inputs from ``LAUNCH["seed"]``, launches both paths and compares every output:

- integers and booleans bit-exactly;
- floats with NaNs and infinities in the same places and finite values within ``tolerance(...)``: per element,
  in ulps of the least precise float type of the program, derived from the operations it contains.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from enceladus.language.dtypes import bfloat16_numpy
from enceladus.runtime.jit import JITFunction

# mantissa bits and smallest normal exponent of each float type: ulp(x) = 2**(floor(log2|x|) - bits)
FLOAT_BITS = {"float32": (23, -126), "float16": (10, -14), "bfloat16": (7, -126)}

# How far apart the two paths may be, in ulps, per kind of operation a program contains (its "features").
# Both paths round every correctly rounded operation (+ - *, casts, sqrt, / except by a shared divisor: see
# "div") identically (the cpu backend builds with -ffp-contract=off; fp16/bf16 are computed in fp32 and
# rounded on both paths), so the remaining differences come from:
OP_ULPS = {
    "exact": 1,  # every program: one rounding step of slack (a boundary case rounded via fp32 vs directly)
    "transcendental": 4,  # NumPy's and the C library's exp/log/sin/erf... differ by <= 2 ulp; x2 for one later step
    "float_reduction": 16,  # sums, scans, dots: the addition order differs; <= 32 terms, each <= 1/2 ulp
    "loop": 4,  # a loop carries an inexact accumulator through up to 3 iterations
    # a quotient of an inexact value doubles its relative error (2), and the compiled fp32 quotient by a shared
    # divisor is within 1.5 ulp of the exact one, so up to 1 ulp from the interpreter's correctly rounded
    # quotient (docs/floating_point.md, "Division by a shared divisor") (1)
    "div": 3,
    "fmod": 2,
}
# Features whose error is absolute, not relative to the element: a sum, scan or dot that cancels (and any
# later subtraction of such values) leaves an error of a few ulps of the terms, which can be far larger
# than the ulp of the small result. For programs with one of them, the same count of ulps of the
# output's scale (max |value|) is allowed on top.
ABSOLUTE = {"float_reduction", "transcendental", "loop"}


class Mismatch(AssertionError):
    pass


def ulp(values: np.ndarray, dtype: str) -> np.ndarray:
    """The spacing of float type ``dtype`` at ``|values|`` (the subnormal spacing below the normal range)."""
    bits, emin = FLOAT_BITS[dtype]
    mag = np.maximum(np.abs(np.asarray(values, dtype=np.float64)), 2.0**emin)
    with np.errstate(invalid="ignore", over="ignore"):  # NaN and inf have no ulp: compared separately
        return np.exp2(np.floor(np.log2(mag)) - bits)


def unit_type(dtype: str, floats: list[str] = ()) -> str:
    """The float type whose ulp measures the error: the least precise float the values pass through (an
    fp16 intermediate's last-bit difference carries into an fp32 output)."""
    return max((dtype, *floats), key=lambda t: 2.0 ** -FLOAT_BITS[t][0])


def tolerance(dtype: str, features: list[str], floats: list[str] = ()) -> tuple[str, int, int]:
    """(unit type, ulps of each element, ulps of the output's scale) allowed between the two paths for a
    float output of type ``dtype`` of a program with these features (see ``OP_ULPS``, ``ABSOLUTE``).

    An element ``w`` (interpreter) and ``g`` (cpu) agree when
    ``|g - w| <= ulps * ulp(w) + scale_ulps * ulp(scale)``, ulps of the unit type. The total stays below
    2**(mantissa bits - 1) ulps (64 for bfloat16), i.e. below half of the largest element: a negated, halved
    or zeroed output always fails.
    """
    unit = unit_type(dtype, floats)
    ulps = OP_ULPS["exact"] + sum(OP_ULPS[f] for f in set(features) if f in OP_ULPS)
    scale_ulps = ulps if ABSOLUTE & set(features) else 0
    assert ulps + scale_ulps < 2 ** (FLOAT_BITS[unit][0] - 1), (unit, features)
    return unit, ulps, scale_ulps


def np_dtype(name: str) -> np.dtype:
    return bfloat16_numpy() if name == "bfloat16" else np.dtype({"int1": "bool"}.get(name, name))


def fuzz_dir() -> Path:
    d = Path(os.environ.get("ENCELADUS_FUZZ_DIR") or Path(tempfile.gettempdir()) / f"enceladus-fuzz-{os.getuid()}")
    d.mkdir(parents=True, exist_ok=True)
    return d


def write_program(source: str) -> Path:
    """Write ``source`` to a file named by its content hash (same program, same file)."""
    path = fuzz_dir() / f"fuzz_{hashlib.sha256(source.encode()).hexdigest()[:16]}.py"
    if not path.exists():
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(source)
        tmp.replace(path)
    return path


def load_module(path: Path) -> Any:
    name = f"enceladus_fuzz_{path.stem}_{hashlib.sha256(str(path).encode()).hexdigest()[:8]}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def make_input(rng: np.random.Generator, dtype: str, size: int) -> np.ndarray:
    """Mostly small values (ties, exact zeros, small divisors), some from the whole range of the type."""
    if dtype == "int1":
        return rng.random(size) < 0.5
    npd = np_dtype(dtype)
    if npd.kind in "iu":
        info = np.iinfo(npd)
        small = rng.integers(max(info.min, -8), 17 if npd.kind == "u" else 9, size=size).astype(npd)
        wide = rng.integers(info.min, info.max, size=size, dtype=npd, endpoint=True)
        return np.where(rng.random(size) < 0.7, small, wide)
    values = rng.uniform(-4, 4, size).astype(np.float32)
    whole = rng.integers(-2, 3, size).astype(np.float32)
    return np.where(rng.random(size) < 0.15, whole, values).astype(npd)


def arguments(launch: dict) -> list[Any]:
    M, N, grid = launch["M"], launch["N"], launch["grid"]
    args: list[Any] = []
    for index, dtype, layout in launch["inputs"]:
        per = {"2d": M * N, "t": M * N, "row": M, "col": N}[layout]
        # one stream per input, so dropping an unused input leaves the others' data unchanged
        args.append(make_input(np.random.default_rng([launch["seed"], index]), dtype, grid * per))
    for dtype, shape in launch["outputs"]:
        size = grid * int(np.prod(shape)) if shape else grid
        args.append(np.full(size, 5, np.dtype("int8")).astype(np_dtype(dtype)))
    for k, dtype in enumerate(launch.get("atomics", ())):  # atomic targets start from data, not a constant
        args.append(make_input(np.random.default_rng([launch["seed"], 1000 + k]), dtype, grid * M * N))
    return [*args, launch["n"], launch["n_iter"], launch["flag"]]


def compare(name: str, got: np.ndarray, want: np.ndarray, dtype: str, features: list[str],
            floats: list[str] = ()) -> None:
    if got.dtype.kind in "biu":
        if not np.array_equal(got, want):
            bad = np.flatnonzero(got != want)
            raise Mismatch(f"{name}: {bad.size} of {got.size} integers differ, first at {bad[0]}: "
                           f"cpu {got[bad[0]]!r}, interpreter {want[bad[0]]!r}")
        return
    g, w = got.astype(np.float64), want.astype(np.float64)
    if not np.array_equal(np.isnan(g), np.isnan(w)):
        bad = np.flatnonzero(np.isnan(g) != np.isnan(w))
        raise Mismatch(f"{name}: NaN in different places, first at {bad[0]}: cpu {g[bad[0]]}, interpreter {w[bad[0]]}")
    finite = np.isfinite(w) & np.isfinite(g)
    inf_diff = ~finite & ~np.isnan(w) & (g != w)
    unit, ulps, scale_ulps = tolerance(dtype, features, floats)
    scale = float(np.max(np.abs(w[finite]), initial=0.0))
    allowed = ulps * ulp(w, unit) + scale_ulps * ulp(scale, unit)
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.abs(g - w) <= allowed
    if {"transcendental", "float_reduction", "loop"} & set(features):
        # an infinity on one side only: a value at the edge of the range rounded differently
        big = np.finfo(np.float16 if dtype == "float16" else np.float32).max / 4
        inf_diff &= ~(np.abs(np.where(np.isfinite(g), g, w)) > big)
    bad = np.flatnonzero((finite & ~close) | inf_diff)
    if bad.size:
        i = bad[0]
        raise Mismatch(f"{name}: {bad.size} of {got.size} floats differ by more than {ulps} {unit} ulp of the "
                       f"element + {scale_ulps} ulp of the scale {scale:.3g}; first at {i}: cpu {g[i]!r}, "
                       f"interpreter {w[i]!r} (allowed {allowed[i]:.3g})")


def differential(path: Path) -> None:
    """Run the program at ``path`` on both paths; raise ``Mismatch`` (or the first path's error) if they differ."""
    module = load_module(path)
    launch = module.LAUNCH
    kernel = module.fuzz_kernel
    grid = (launch["grid"],)
    consts = {"M": launch["M"], "N": launch["N"]}
    interp = arguments(launch)
    JITFunction(kernel.fn, interpret=True)[grid](*interp, **consts)
    compiled = arguments(launch)
    # the interpreter never fuses x*y+z (neither does Triton's); fusion has exact tests of its own
    JITFunction(kernel.fn, interpret=False)[grid](*compiled, **consts, enable_fp_fusion=False)
    n_in = len(launch["inputs"])
    for i, (dtype, _shape) in enumerate(launch["outputs"]):
        compare(f"{path.name}: out{i} ({dtype})", compiled[n_in + i], interp[n_in + i], dtype, launch["features"],
                launch.get("floats", ()))
    n_out = n_in + len(launch["outputs"])
    for k, dtype in enumerate(launch.get("atomics", ())):
        compare(f"{path.name}: at{k} ({dtype})", compiled[n_out + k], interp[n_out + k], dtype, launch["features"],
                launch.get("floats", ()))
