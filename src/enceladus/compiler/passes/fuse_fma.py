"""Floating-point fusion, as Triton's ``enable_fp_fusion``: a multiply whose only use is an add or a subtract
becomes one ``fma`` (rounded once).

The compiler decides where fusion happens, not Metal's compiler: the MSL states ``#pragma METAL fp contract(off)``
so Apple's compiler fuses nothing else, and the ``cpu`` backend evaluates ``fma`` exactly (C++ ``fma``) with
contraction off. Both paths then round alike. Fused: fp32 and fp16 (``fma`` is correctly rounded on both in
Apple's tables); bf16 is left unfused. The interpreter, like Triton's, never fuses.

    x * y + z  ->  fma(x, y, z)
    z + x * y  ->  fma(x, y, z)
    x * y - z  ->  fma(x, y, -z)
    z - x * y  ->  fma(-x, y, z)
"""

from __future__ import annotations

from .. import ir

FUSED_TYPES = ("fp32", "fp16")
_ADD_SUB = frozenset({"add", "sub"})


def _single_use_mul(v: ir.Value, block_ops: set[int], uses: dict[int, int]) -> bool:
    op = v.op
    return op is not None and op.name == "mul" and id(op) in block_ops and uses.get(v.id, 0) == 1


def fuse_multiply_add(fn: ir.Function) -> int:
    """Rewrite ``fn`` in place; returns how many multiplies were fused."""
    ops = ir.walk(fn.ops)
    if not any(_fused_type(op) and any(v.op is not None and v.op.name == "mul" for v in op.operands)
               for op in ir.select(ops, _ADD_SUB)):
        return 0  # no fp32/fp16 add or subtract of a product: nothing to fuse, every block stays as it is
    uses = ir.use_counts(ops)
    fused = 0
    blocks = [fn.body] + [region for op in ir.with_regions(ops) for region in op.regions]
    for block in blocks:
        fused += _fuse_block(fn, block, uses)
    return fused


def _fused_type(op: ir.Op) -> bool:
    """Whether the result of ``op`` has a type that fusion applies to."""
    res = op.result
    return res is not None and getattr(res.type.element, "name", None) in FUSED_TYPES


def _fuse_block(fn: ir.Function, block: ir.Block, uses: dict[int, int]) -> int:
    if _ADD_SUB.isdisjoint(ir.names(block.ops)):
        return 0  # nothing to fuse: the block stays as it is
    in_block = set(map(id, block.ops))
    out: list[ir.Op] = []
    dead: set[int] = set()
    fused = 0
    for op in block.ops:
        res = op.results[0] if op.results else None
        if op.name in ("add", "sub") and _fused_type(op) and all(v.type == res.type for v in op.operands):
            a, b = op.operands
            mul_first = _single_use_mul(a, in_block, uses)
            mul_second = _single_use_mul(b, in_block, uses) and not (op.name == "add" and mul_first)
            if mul_first or mul_second:
                product, other = (a, b) if mul_first else (b, a)
                x, y = product.op.operands
                if op.name == "sub" and mul_first:      # x*y - z
                    other = _neg(fn, other, op, out)
                elif op.name == "sub":                  # z - x*y
                    x = _neg(fn, x, op, out)
                fma = ir.Op("fma", [x, y, other], {}, op.loc)
                fma.results = [res]
                res.op = fma
                dead.add(id(product.op))
                out.append(fma)
                fused += 1
                continue
        out.append(op)
    block.ops = [op for op in out if id(op) not in dead] if dead else out
    return fused


def _neg(fn: ir.Function, v: ir.Value, at: ir.Op, out: list[ir.Op]) -> ir.Value:
    neg = ir.Op("neg", [v], {}, at.loc)
    neg.results = [fn.new_value(v.type, neg)]
    out.append(neg)
    return neg.result
