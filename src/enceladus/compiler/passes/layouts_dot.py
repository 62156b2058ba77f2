"""Layout decisions for ``tl.dot``: how each dot is computed (``simdgroup_matrix`` fragments, Metal 4 matmul2d or a
multiply-add loop), the accumulator layouts the values around it prefer (forward, before the backward walk of
``passes/layouts.py``), the layouts its operands are staged from, and the matmul2d accumulators kept in a
cooperative tensor across their loop. A mixin of the layout pass (``layouts._Assigner``): it reads the pass's
state (``plan``, ``pref``, ``num_warps``, ``dot_backend``...) and uses its helpers (``anchor``, ``home``,
``operand_anchor``, ``use_counts``)."""

from __future__ import annotations

from dataclasses import dataclass

from .. import ir
from ..layout import BlockedLayout, MmaLayout, TileLayout, fits, mma_layout
from ..metal_limits import MAX_THREADGROUP_MEMORY


@dataclass
class DotPlan:
    """How one ``dot`` is computed: simdgroup_matrix fragments (``mma``), Metal 4 matmul2d, or a multiply-add
    loop, with the reasons the faster ways were not taken, and the layouts its operands are staged from."""

    mma: MmaLayout | None = None
    matmul2d: bool = False
    why_fma: str | None = None  # why not simdgroup_matrix (None when it is used, or matmul2d is)
    why_not_matmul2d: str | None = None  # why dot_backend='matmul2d' fell back
    a_layout: TileLayout | None = None
    b_layout: TileLayout | None = None
    # A's fragments come from registers (a_layout is the 8x8 fragment layout of [M, K] over (num_warps, 1) SIMD
    # groups, the accumulator's rows): A is loop-invariant (converted once, before the loop) or already there
    # (another dot's result, e.g. attention's P); only B is staged in threadgroup memory
    a_registers: bool = False
    # matmul2d only: the accumulator stays in one cooperative tensor across the enclosing ``for`` loop (it is that
    # loop's carried value, used nowhere else in the body): initialised before the loop, ``run`` once per iteration,
    # moved to the tile's layout once after it. The id of the loop result it becomes (``LayoutPlan.coop``).
    carried: int | None = None


@dataclass
class CoopCarry:
    """A loop-carried matmul2d accumulator kept in a cooperative tensor (``LayoutPlan.coop``, keyed by the loop
    result): the loop's ``index``-th carried value, the ``dot`` that accumulates into it, and the ``add`` folded
    into that dot when the source says ``acc += tl.dot(a, b)`` (Triton folds it the same way)."""

    index: int
    dot: int
    absorbed: int | None = None


class DotLayouts:
    """The dot half of the layout pass (see the module docstring)."""

    def _dots_feeding_a(self, fn: ir.Function) -> set[int]:
        """Dot results that become another dot's A through elementwise ops only (attention's S -> P): computed
        with whole rows per SIMD group, their registers are the next dot's A fragments."""
        out: set[int] = set()
        for op in self.ops:
            if op.name != "dot":
                continue
            todo, seen = [op.operands[0]], set()
            while todo:
                v = todo.pop()
                d = v.op
                if d is None or v.id in seen:
                    continue
                seen.add(v.id)
                if d.name == "dot":
                    out.add(v.id)
                elif d.name in ir.ELEMENTWISE:
                    todo += [o for o in d.operands if o.type.is_tile and o.type.shape == v.type.shape]
        return out

    def store_converts(self, op: ir.Op, layout: TileLayout) -> bool:
        """Whether a store of a value held in ``layout`` goes through the default blocked layout instead: the
        value is in a dot's fragment layout (2 elements per lane: 4- or 8-byte stores), the store is outside
        every loop (the conversion runs once, as an epilogue), the pointers are contiguous along the rows for
        16 bytes (the blocked layout's vectors) and the conversion's buffer fits in threadgroup memory."""
        ptr = op.operands[0]
        info = self.axis.get(ptr.id)
        size = ptr.type.element.element_ty.itemsize
        rows, cols = ptr.type.shape[0], ptr.type.shape[-1]
        return (isinstance(layout.parent, MmaLayout) and self.op_loop.get(id(op)) is None and info is not None
                and info.contiguity[-1] * size >= 16 and cols * size >= 16
                and rows * (cols + 1) * size <= MAX_THREADGROUP_MEMORY)  # the (padded) conversion buffer fits

    def a_from_registers(self, op: ir.Op) -> MmaLayout | None:
        """The [M, K] fragment layout A's fragments are taken from registers in, when that pays: A does not change
        inside the loop around the dot (converted once, before it) or is already in that layout (the result of
        another dot, as attention's P), and the fragments' lane mapping is the assumed one."""
        a, b, _ = op.operands
        r = op.result
        m, k = a.type.shape
        frag = MmaLayout((m, k), (self.num_warps, 1))
        if not self.fragments_in_registers or a.type.element.name not in ("fp16", "fp32", "bf16") \
                or m % (8 * self.num_warps) or b.type.numel * b.type.element.itemsize > MAX_THREADGROUP_MEMORY // 2:
            return None
        in_place = self.pref.get(a.id) == TileLayout(frag, (0, 1))
        loop = self.loop_of.get(r.id)
        invariant = loop is not None and self.loop_of.get(a.id) != loop and not self.plan.pure.get(a.id, True)
        return frag if in_place or invariant else None

    # --- forward preferences: layouts a value is best computed in because of how it is produced -----------------
    def prefer_block(self, block: ir.Block) -> None:
        pref = self.pref
        for op in block.ops:
            if not pref and not op.regions and op.name != "dot":
                continue  # every preference comes from a dot: none yet, none to pass on
            name = op.name
            if name == "dot":
                mma = self.dot_layout(op)
                if mma is not None:
                    pref[op.result.id] = TileLayout(mma, (0, 1))
            elif name in ("for", "while"):
                body = op.regions[-1]
                for _ in range(2):  # the second pass sees the preferences of the values the body yields
                    for region in op.regions:
                        args = region.args[1:] if (name == "for") else region.args
                        for a, r in zip(args, op.results):
                            if r.id in pref:
                                pref[a.id] = pref[r.id]
                        self.prefer_block(region)
                    for y, r in zip(body.terminator.operands, op.results):
                        if y.id in pref and y.type == r.type:
                            pref[r.id] = pref[y.id]
            elif name == "if":
                for region in op.regions:
                    self.prefer_block(region)
                for i, r in enumerate(op.results):
                    for region in op.regions:
                        y = region.terminator.operands[i]
                        if y.id in pref and r.id not in pref:
                            pref[r.id] = pref[y.id]
            elif name == "reduce":
                x = op.operands[0]
                if x.id in pref and op.results[0].type.is_tile:
                    lx = pref[x.id]
                    axis = op.attrs["axis"]
                    for r in op.results:
                        pref[r.id] = TileLayout(lx.parent, lx.dims[:axis] + lx.dims[axis + 1:])
            elif name in ir.ELEMENTWISE or name in ("broadcast", "expand_dims"):
                r = op.results[0] if op.results else None
                for o in op.operands:
                    if o.id in pref and not self.plan.pure.get(o.id, True):
                        lo = pref[o.id]
                        if name == "expand_dims":
                            free = [d for d in range(len(lo.parent.shape)) if d not in lo.dims]
                            if not free:
                                break
                            axis = op.attrs["axis"]
                            lo = TileLayout(lo.parent, lo.dims[:axis] + (free[0],) + lo.dims[axis:])
                        if fits(lo, r.type.shape):
                            pref[r.id] = lo
                        break

    def dot_layout(self, op: ir.Op) -> MmaLayout | None:
        """The simdgroup_matrix accumulator layout of a dot, or None for the FMA and matmul2d paths (decided
        once per plan, recorded in ``plan.dots``)."""
        r = op.result
        if r.id in self.plan.dots:
            return self.plan.dots[r.id].mma
        a = op.operands[0]
        decision = self.plan.dots[r.id] = DotPlan()
        why = None
        if len(r.type.shape) != 2:
            why = "batched (3-D) dots use the multiply-add loop"
        elif not a.type.element.is_floating():
            why = f"simdgroup_matrix has no {a.type.element} type"
        elif not all(s % 8 == 0 for s in (*r.type.shape, a.type.shape[-1])):
            why = f"M, N and K must be multiples of 8 (got {list(r.type.shape)} x K={a.type.shape[-1]})"
        if why is None and self.dot_backend == "matmul2d":
            k = a.type.shape[-1]
            if a.type.element.name not in ("fp16", "fp32"):
                decision.why_not_matmul2d = f"matmul2d takes fp16 or fp32 operands here, not {a.type.element}"
            elif k % 32:
                decision.why_not_matmul2d = f"matmul2d needs a static K that is a multiple of 32 (macOS 26.1), got K={k}"
            elif (tile := (*r.type.shape, k, a.type.element.name, op.operands[1].type.element.name)) \
                    in self.matmul2d_rejects:  # MSL_AUDIT D1/D2: probed on first use, refused by this device
                decision.why_not_matmul2d = (f"this device's matmul2d refused a {tile[0]}x{tile[1]}x{tile[2]} "
                                             f"{tile[3]} tile when probed ({self.matmul2d_rejects[tile]})")
            else:  # the accumulator lives in a cooperative tensor; the tile around it is blocked
                decision.matmul2d = True
                return None
        mma = mma_layout(r.type.shape, self.num_warps) if why is None else None
        frag = self.a_from_registers(op) if why is None else None
        if frag is not None or (mma is not None and r.id in self.feeds_a and self.fragments_in_registers
                                and r.type.shape[0] % (8 * self.num_warps) == 0):
            mma = MmaLayout(r.type.shape, (self.num_warps, 1))  # each SIMD group owns whole rows
        if frag is not None:  # A's rows are in the SIMD group's own registers
            decision.a_registers = True
            decision.a_layout = TileLayout(frag, (0, 1))
        if why is None and mma is None:
            why = f"a {list(r.type.shape)} tile does not split into 8x8 fragments over {self.num_warps} SIMD groups"
        decision.mma = mma
        decision.why_fma = why
        return mma

    def carry_accumulators(self) -> None:
        """Find the matmul2d accumulators that can stay in a cooperative tensor across their ``for`` loop: the
        loop's carried value is yielded from ``tl.dot(a, b, acc)`` (or ``acc + tl.dot(a, b)`` with no accumulator
        of its own) at the top level of the body, with fp32 accumulation, and neither the carried value nor the
        dot's result has any other use. Everything else keeps the per-dot lowering."""
        uses = self.use_counts()
        for loop in self.ops:
            if loop.name != "for":
                continue
            body = loop.regions[-1]
            top = {id(op) for op in body.ops}
            for i, (r, arg, y) in enumerate(zip(loop.results, body.args[1:], body.terminator.operands)):
                carry = self._carried_dot(arg, y, top, uses)
                if carry is not None and uses.get(y.id) == 1 and uses.get(arg.id) == 1:
                    dot, absorbed = carry
                    self.plan.coop[r.id] = CoopCarry(i, dot.result.id, absorbed)
                    self.plan.dots[dot.result.id].carried = r.id

    def _carried_dot(self, arg: ir.Value, y: ir.Value, top: set[int], uses: dict[int, int]) \
            -> tuple[ir.Op, int | None] | None:
        """The dot accumulating into the carried value ``arg`` and yielding ``y`` (plus the id of the ``add`` folded
        into it), or None when the pattern does not hold."""
        op = y.op
        if op is None or id(op) not in top or not y.type.is_tile or y.type.element.name != "fp32":
            return None
        absorbed = None
        if op.name == "add" and arg in op.operands and len(op.operands) == 2:
            other = op.operands[1] if op.operands[0] is arg else op.operands[0]
            dot = other.op
            if dot is None or dot.name != "dot" or id(dot) not in top or uses.get(other.id) != 1 \
                    or not self._zeros(dot.operands[2]):
                return None
            absorbed, op = y.id, dot
        elif op.name != "dot" or op.operands[2] is not arg:
            return None
        decision = self.plan.dots.get(op.result.id)
        if decision is None or not decision.matmul2d or op.result.type.element.name != "fp32":
            return None
        return op, absorbed

    def _zeros(self, v: ir.Value) -> bool:
        """Whether ``v`` is a splat of the constant 0."""
        op = v.op
        if op is None or op.name != "splat":
            return False
        c = op.operands[0].op
        return c is not None and c.name == "const" and c.attrs.get("value") == 0

    def dot(self, op: ir.Op) -> None:
        r = op.result
        mma = self.dot_layout(op)
        if mma is not None:
            home = TileLayout(mma, (0, 1))
        else:  # the FMA path computes in any blocked layout
            want = self.first_need(r)
            home = want if want is not None and isinstance(want.parent, BlockedLayout) else self.anchor(r.type.shape)
        self.home(r, home)
        a, b, acc = op.operands
        # operands are staged through threadgroup memory from whatever layout they are produced in
        decision = self.plan.dots[r.id]
        if not decision.a_registers:
            decision.a_layout = self.pref.get(a.id) or self.operand_anchor(a)
        elif self.pref.get(a.id) != decision.a_layout and not self.plan.pure[a.id]:
            self.plan.demand(a, self.operand_anchor(a))  # loaded 16 bytes at a time, then converted once
        decision.b_layout = self.pref.get(b.id) or self.operand_anchor(b)
        self.plan.demand(a, decision.a_layout)
        self.plan.demand(b, decision.b_layout)
        self.plan.demand(acc, home)
