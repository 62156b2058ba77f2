"""Where Triton 3.9's interpreter converts fp8 differently from its GPU rules (fp8_table.csv): the figures of
docs/porting.md ("fp8 conversions: Triton's GPU rules, not its interpreter's").

    python tests/conformance/data/compare_fp8_triton_interpreter.py   # with triton==3.9.0 and torch installed

Runs every float32 input of the table through ``x.to(fp8 type, fp_downcast_rounding=...)`` and all 256 codes of
each format through ``.to(tl.float32)`` in Triton's interpreter (``TRITON_INTERPRET=1``), and counts the codes that
differ from the table by the kind of input: a tie between two fp8 neighbours, another finite value within range,
overflow (beyond the largest finite value), +-inf, NaN. Nothing of Enceladus is imported.
"""

from __future__ import annotations

import bisect
import math
import os
import sys
from fractions import Fraction
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
import make_fp8_table as model  # noqa: E402

TABLE = Path(__file__).with_name("fp8_table.csv")


@triton.jit
def encode(x_ptr, y_ptr, n, DST: tl.constexpr, ROUND: tl.constexpr, B: tl.constexpr):
    offs = tl.program_id(0) * B + tl.arange(0, B)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m).to(DST, fp_downcast_rounding=ROUND), mask=m)


@triton.jit
def decode(c_ptr, y_ptr):
    offs = tl.arange(0, 256)
    tl.store(y_ptr + offs, tl.load(c_ptr + offs).to(tl.float32))


def kind(fmt: model.Format, v: float) -> str:
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf"
    grid = [g for g, _ in fmt.finite_magnitudes()]
    mag = abs(Fraction(v))
    if mag > grid[-1]:
        return "overflow"
    i = bisect.bisect_right(grid, mag) - 1
    return "tie" if i + 1 < len(grid) and mag == (grid[i] + grid[i + 1]) / 2 else "other"


def main() -> None:
    rows = [line.split(",") for line in TABLE.read_text().splitlines() if line.startswith("encode,")]
    bits = np.array([int(r[1], 16) for r in rows], np.uint32)
    x = torch.from_numpy(bits.view(np.float32).copy())
    for col, (name, rounding) in enumerate(model.COLUMNS):
        fmt, ty = model.FORMATS[name], getattr(tl, name)
        want = np.array([int(r[2 + col], 16) for r in rows])
        y = torch.zeros(len(x), dtype=torch.uint8)
        encode[(triton.cdiv(len(x), 1024),)](x, triton.reinterpret(y, ty), len(x), DST=ty, ROUND=rounding, B=1024)
        counts: dict[str, int] = {}
        for j in np.nonzero(y.numpy() != want)[0]:
            k = kind(fmt, float(x[j]))
            counts[k] = counts.get(k, 0) + 1
        out = torch.zeros(256)
        decode[(1,)](triton.reinterpret(torch.arange(256, dtype=torch.int32).to(torch.uint8), ty), out)
        bad = []
        for c in range(256):
            v, got = fmt.decode(c), float(out[c])
            same = math.isnan(got) if isinstance(v, float) and math.isnan(v) else got == float(v)
            if not same:
                bad.append(f"{c:#04x}->{got}")
        print(f"{name}:{rounding} encode differs on {sum(counts.values())} of {len(x)} inputs {counts}; "
              f"decode differs on {len(bad)} codes {bad[:4]}")


if __name__ == "__main__":
    main()
