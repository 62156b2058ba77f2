"""Regenerate typing_table.csv from upstream Triton's interpreter (run with triton==3.9.0 and torch installed).

    TRITON_INTERPRET=1 python tests/conformance/data/make_typing_table.py > tests/conformance/data/typing_table.csv

For every left operand, binary operator and right operand (tiles of each dtype Apple GPUs have, and Python
literals), the dtype Triton gives the result, or ``error``. The ``expected`` column is what Enceladus must do:
Triton's answer, except that a result Triton types as fp64, or a comparison Triton computes in fp64, is refused
(Apple GPUs have no fp64).
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("TRITON_INTERPRET", "1")

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

TILES = ["int1", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "fp16", "bf16", "fp32"]
LITERALS = {"lit_bool": True, "lit_int": 7, "lit_float": 1.5, "lit_float_huge": 1e300}
OPS = ["+", "-", "*", "/", "//", "%", "&", "|", "^", "<<", ">>", "<"]
_TORCH = {"int1": torch.bool, "int8": torch.int8, "int16": torch.int16, "int32": torch.int32,
          "int64": torch.int64, "uint8": torch.uint8, "uint16": torch.uint16, "uint32": torch.uint32,
          "uint64": torch.uint64, "fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
SEEN: list[str] = []


def _kernel(op: str, lhs_literal, rhs_literal):
    # literals are written into the source: Triton's interpreter types a literal bound to a name first
    # (y = 7; x + y) as a strong int32, unlike its compiler
    src = f"""
@triton.jit
def k(x_ptr, y_ptr):
    offs = tl.arange(0, 2)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    z = {repr(lhs_literal) if lhs_literal is not None else 'x'} {op} {repr(rhs_literal) if rhs_literal is not None else 'y'}
    SEEN.append(str(z.dtype))
"""
    scope = {"triton": triton, "tl": tl, "SEEN": SEEN}
    path = f"/tmp/enc_typing_{abs(hash((op, repr(lhs_literal), repr(rhs_literal))))}.py"
    with open(path, "w") as f:
        f.write(src)
    exec(compile(src, path, "exec"), scope)  # triton.jit reads the source through inspect: keep the file
    return scope["k"]


def _arg(name: str):
    if name in LITERALS:
        return torch.zeros(2, dtype=torch.int32), LITERALS[name]
    return torch.ones(2, dtype=_TORCH[name]), None


def triton_result(lhs: str, op: str, rhs: str) -> str:
    (x, xl), (y, yl) = _arg(lhs), _arg(rhs)
    SEEN.clear()
    try:
        _kernel(op, xl, yl)[(1,)](x, y)
    except Exception:
        return "error"
    return {"int1": "int1", "fp64": "fp64", "bf16": "bf16", "fp16": "fp16", "fp32": "fp32"}.get(SEEN[0], SEEN[0])


def main() -> None:
    print("lhs,op,rhs,triton,expected")
    names = TILES + list(LITERALS)
    for lhs in names:
        for rhs in names:
            if lhs in LITERALS and rhs in LITERALS:
                continue  # two literals fold in Python
            computes_in_fp64 = triton_result(lhs, "+", rhs) == "fp64"
            for op in OPS:
                got = triton_result(lhs, op, rhs)
                # a comparison computing in fp64 is refused too, although its result is int1
                expected = "refused_fp64" if got == "fp64" or (op == "<" and computes_in_fp64) else got
                print(f"{lhs},{op},{rhs},{got},{expected}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
