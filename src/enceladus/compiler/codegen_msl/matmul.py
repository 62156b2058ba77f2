"""``tl.dot``: operands staged through threadgroup memory, then either ``simdgroup_matrix`` 8x8 fragments
(accumulators stay in registers, in the MmaLayout) or, for shapes and types that do not fit them, a
multiply-add loop per output element."""

from __future__ import annotations

from .. import ir
from ..msl_types import msl_type
from ..passes.layouts import MmaLayout, TileLayout

_FRAGMENT = {"fp32": "simdgroup_float8x8", "fp16": "simdgroup_half8x8", "bf16": "simdgroup_bfloat8x8"}


class DotMixin:
    def stage_operand(self, x: ir.Value, layout: TileLayout, buf: str, index: str) -> None:
        """Write ``x`` (held in ``layout``) to ``buf`` at the row-major ``index`` of each element."""
        own = self.owner(layout, "e")
        guard = f"if ({own}) " if own else ""
        self.loop(layout, f"{guard}{buf}[{index}] = {self.ref(x, layout)};")

    def emit_dot(self, op: ir.Op) -> None:
        a, b, acc = op.operands
        r = op.result
        home: TileLayout = self.plan.homes[r.id]
        la: TileLayout = op.attrs["_a_layout"]
        lb: TileLayout = op.attrs["_b_layout"]
        ta, tb = (msl_type(x.type.element) for x in (a, b))
        self.smem_begin()
        sa = self.smem(ta, a.type.numel, f"operand A of dot %{r.id}", a.type.element.itemsize)
        sb = self.smem(tb, b.type.numel, f"operand B of dot %{r.id}", b.type.element.itemsize)
        self.stage_operand(a, la, sa, self.flat_index(la, a.type.shape, "e"))
        self.stage_operand(b, lb, sb, self.flat_index(lb, b.type.shape, "e"))
        self.barrier()
        if isinstance(home.parent, MmaLayout):
            self.emit_simdgroup_dot(op, home.parent, sa, sb)
        else:
            self.emit_fma_dot(op, home, sa, sb)

    def emit_simdgroup_dot(self, op: ir.Op, mma: MmaLayout, sa: str, sb: str) -> None:
        a, b, acc = op.operands
        r = op.result
        home = TileLayout(mma, (0, 1))
        m, n = r.type.shape
        k = a.type.shape[-1]
        fm, fn = mma.frags
        self.layout_id(mma)  # listed by explain() and drawn by explain(save=...)
        frag_in = _FRAGMENT[a.type.element.name]
        c = self.fresh("enc_c")
        self.notes.append(f"dot %{r.id}: simdgroup_matrix, {mma.warps[0]}x{mma.warps[1]} SIMD groups, "
                          f"{fm}x{fn} accumulator fragments of 8x8 each, A and B staged in threadgroup memory")
        self.emit(f"simdgroup_float8x8 {c}[{fm * fn}];")
        acc_ref = self.ref(acc, home, "{e}")
        accf = [acc_ref.replace("{e}", f"2 * f + {j}") for j in range(2)]
        cast = "float" if acc.type.element.name != "fp32" else ""
        self.emit(f"for (int f = 0; f < {fm * fn}; ++f) {{ {c}[f].thread_elements()[0] = {cast}({accf[0]}); "
                  f"{c}[f].thread_elements()[1] = {cast}({accf[1]}); }}")
        wm = self.warp_coord(mma, 0)
        wn = self.warp_coord(mma, 1)
        row0 = f"{wm} * {m // mma.warps[0]}" if wm != "0" else "0"
        col0 = f"{wn} * {n // mma.warps[1]}" if wn != "0" else "0"
        self.emit(f"for (int kk = 0; kk < {k}; kk += 8) {{")
        self.indent += 1
        self.emit(f"{frag_in} fa[{fm}];")
        self.emit(f"{frag_in} fb[{fn}];")
        self.emit(f"for (int i = 0; i < {fm}; ++i) simdgroup_load(fa[i], {sa}, {k}, ulong2(kk, {row0} + i * 8));")
        self.emit(f"for (int j = 0; j < {fn}; ++j) simdgroup_load(fb[j], {sb}, {n}, ulong2({col0} + j * 8, kk));")
        self.emit(f"for (int i = 0; i < {fm}; ++i) for (int j = 0; j < {fn}; ++j) "
                  f"simdgroup_multiply_accumulate({c}[i * {fn} + j], fa[i], fb[j], {c}[i * {fn} + j]);")
        self.indent -= 1
        self.emit("}")
        out_t = msl_type(r.type.element)
        var = self.declare_tile(r, home)
        conv = (lambda x: x) if r.type.element.name == "fp32" else (lambda x: f"static_cast<{out_t}>({x})")
        self.emit(f"for (int f = 0; f < {fm * fn}; ++f) {{ {var}[2 * f] = {conv(f'{c}[f].thread_elements()[0]')}; "
                  f"{var}[2 * f + 1] = {conv(f'{c}[f].thread_elements()[1]')}; }}")

    def emit_fma_dot(self, op: ir.Op, home: TileLayout, sa: str, sb: str) -> None:
        a, b, acc = op.operands
        r = op.result
        shape = r.type.shape
        k = a.type.shape[-1]
        m, n = shape[-2], shape[-1]
        batched = len(shape) == 3
        acc_t = "int" if a.type.element.is_int() else "float"
        why = op.attrs.get("_why_fma") or "the result layout is not a fragment layout"
        self.notes.append(f"dot %{r.id}: multiply-add loop per output element (shape {list(shape)} x K={k}, "
                          f"{a.type.element}) because {why}; A and B staged in threadgroup memory")
        var = self.declare_tile(r, home)
        self.emit(f"for (int e = 0; e < {home.parent.elems_per_thread}; ++e) {{")
        self.indent += 1
        coords = [self.value_coord(home, shape, i, "e") for i in range(len(shape))]
        if batched:
            self.emit(f"const int bb = {coords[0]};")
        self.emit(f"const int row = {coords[-2]};")
        self.emit(f"const int col = {coords[-1]};")
        self.emit(f"{acc_t} s = {acc_t}({self.ref(acc, home, 'e')});")
        a_base = f"(bb * {m} + row) * {k}" if batched else f"row * {k}"
        b_base = f"bb * {k * n} + col" if batched else "col"
        self.emit(f"for (int kk = 0; kk < {k}; ++kk) s += {acc_t}({sa}[{a_base} + kk]) * {acc_t}({sb}[{b_base} + kk * {n}]);")
        out_t = msl_type(r.type.element)
        self.emit(f"{var}[e] = static_cast<{out_t}>(s);")
        self.indent -= 1
        self.emit("}")
