"""``tl.dot``: operands staged through threadgroup memory, then either ``simdgroup_matrix`` 8x8 fragments
(accumulators stay in registers, in the MmaLayout), Metal 4 ``matmul2d`` (the accumulator in a cooperative tensor,
kept there across a K loop when it is the loop's carried value: ``LayoutPlan.coop``) or, for shapes and types that
fit neither, a multiply-add loop per output element."""

from __future__ import annotations

from typing import Any

from .. import ir
from ..layout import MmaLayout, TileLayout
from ..metal_limits import MAX_THREADGROUP_MEMORY
from ..msl_types import msl_type

_FRAGMENT = {"fp32": "simdgroup_float8x8", "fp16": "simdgroup_half8x8", "bf16": "simdgroup_bfloat8x8"}


class DotMixin:
    def stage_operand(self, x: ir.Value, layout: TileLayout, buf: str, index: str) -> None:
        """Write ``x`` (held in ``layout``) to ``buf`` at the row-major ``index`` of each element."""
        own = self.owner(layout, "e")
        guard = f"if ({own}) " if own else ""
        self.loop(layout, f"{guard}{buf}[{index}] = {self.ref(x, layout)};")

    def dot_k_slice(self, op: ir.Op, home: TileLayout) -> int:
        """How much of K each staging of the operands covers: all of it when A and B fit in threadgroup memory
        together, else the largest power-of-two slice (a multiple of 8 for simdgroup fragments) that does."""
        a, b, _ = op.operands
        k = a.type.shape[-1]
        rows_a, cols_b = a.type.numel // k, b.type.numel // k
        extra = 0
        if isinstance(home.parent, MmaLayout) and getattr(self, "fragments_via_store", False):
            extra = op.result.type.numel * 4  # the accumulator fragments pass through threadgroup memory too
        budget = MAX_THREADGROUP_MEMORY - extra
        step = 8 if isinstance(home.parent, MmaLayout) else 1

        def need(ks: int) -> int:
            return (rows_a * ks * a.type.element.itemsize + 15) // 16 * 16 + ks * cols_b * b.type.element.itemsize

        ks = k
        while need(ks) > budget and ks > step and ks % 2 == 0 and (ks // 2) % step == 0:
            ks //= 2
        return ks if need(ks) <= budget else k  # nothing fits: the full staging reports OutOfResources

    def stage_slice(self, x: ir.Value, layout: TileLayout, buf: str, is_a: bool, ks: int) -> None:
        """Write the elements of ``x`` whose K coordinate lies in [enc_k0, enc_k0 + ks) to ``buf`` (A: rows of
        ``ks``; B: ``ks`` rows), one K slice of a dot whose operands do not fit in threadgroup memory at once."""
        shape = x.type.shape
        kd = len(shape) - 1 if is_a else len(shape) - 2
        kc = self.value_coord(layout, shape, kd, "e")
        slice_shape = tuple(ks if i == kd else d for i, d in enumerate(shape))
        terms, stride = [], 1
        for i in reversed(range(len(shape))):
            c = f"({kc} - enc_k0)" if i == kd else self.value_coord(layout, shape, i, "e")
            if slice_shape[i] > 1:
                terms.append(c if stride == 1 else f"{c} * {stride}")
            stride *= slice_shape[i]
        conds = [f"{kc} >= enc_k0", f"{kc} < enc_k0 + {ks}"]
        own = self.owner(layout, "e")
        if own:
            conds.append(own)
        self.loop(layout, f"if ({' && '.join(conds)}) {buf}[{' + '.join(reversed(terms)) or '0'}] = "
                          f"{self.ref(x, layout)};")

    def emit_dot(self, op: ir.Op) -> None:
        a, b, acc = op.operands
        r = op.result
        home: TileLayout = self.plan.homes[r.id]
        decision = self.plan.dots[r.id]
        if decision.carried is not None:
            self.step_carried_matmul2d(op)
            return
        la, lb = decision.a_layout, decision.b_layout
        ta, tb = (msl_type(x.type.element) for x in (a, b))
        k = a.type.shape[-1]
        ks = k if decision.matmul2d or decision.a_registers else self.dot_k_slice(op, home)
        if ks < k:
            self.emit_sliced_dot(op, home, ks)
            return
        self.smem_begin()
        sa = None
        if not decision.a_registers:
            sa = self.smem(ta, a.type.numel, f"operand A of dot %{r.id}", a.type.element.itemsize)
        sb = self.smem(tb, b.type.numel, f"operand B of dot %{r.id}", b.type.element.itemsize)
        if sa is not None:
            self.stage_operand(a, la, sa, self.flat_index(la, a.type.shape, "e"))
        self.stage_operand(b, lb, sb, self.flat_index(lb, b.type.shape, "e"))
        self.barrier()
        if isinstance(home.parent, MmaLayout):
            self.emit_simdgroup_dot(op, home.parent, sa, sb)
        elif decision.matmul2d:
            self.emit_matmul2d_dot(op, home, sa, sb)
        else:
            self.emit_fma_dot(op, home, sa, sb)

    def emit_matmul2d_dot(self, op: ir.Op, home: TileLayout, sa: str, sb: str) -> None:
        """Metal 4 tensor ops: A and B as threadgroup tensors, the accumulator in a cooperative tensor. Its
        element-to-thread spread is the implementation's, so the result moves to the tile's layout through
        threadgroup memory, element by element (get_multidimensional_index)."""
        a, b, acc = op.operands
        r = op.result
        m, n = r.type.shape
        k = a.type.shape[-1]
        ta, tb = (msl_type(x.type.element) for x in (a, b))
        self.uses_tensor_ops = True
        self.matmul2d_tiles.append((m, n, k, a.type.element.name, b.type.element.name, self.num_warps))
        self.notes.append(f"dot %{r.id}: Metal 4 matmul2d ({m}x{n}x{k}, execution_simdgroups<{self.num_warps}>), "
                          "accumulator in a cooperative tensor, moved to the tile through threadgroup memory")
        sc = self.smem("float", m * n, f"accumulator of dot %{r.id}", 4)
        own = self.owner(home, "e")
        guard = f"if ({own}) " if own else ""
        self.loop(home, f"{guard}{sc}[{self.flat_index(home, (m, n), 'e')}] = float({self.ref(acc, home)});")
        self.barrier()
        self.emit("{")
        self.indent += 1
        self.emit(f"using enc_TA = tensor<threadgroup {ta}, dextents<int32_t, 2>, tensor_inline>;")
        self.emit(f"using enc_TB = tensor<threadgroup {tb}, dextents<int32_t, 2>, tensor_inline>;")
        self.emit(f"constexpr auto enc_desc = matmul2d_descriptor({m}, {n}, {k}, false, false, false, "
                  "matmul2d_descriptor::mode::multiply_accumulate);")
        self.emit(f"matmul2d<enc_desc, execution_simdgroups<{self.num_warps}>> enc_op;")
        self.emit("auto enc_acc = enc_op.get_destination_cooperative_tensor<enc_TA, enc_TB, float>();")
        self.emit(f"enc_TA enc_a({sa}, dextents<int32_t, 2>({k}, {m}));")
        self.emit(f"enc_TB enc_b({sb}, dextents<int32_t, 2>({n}, {k}));")
        self.emit("for (uint16_t i = 0; i < enc_acc.get_capacity(); ++i) if (enc_acc.is_valid_element(i)) {")
        self.emit(f"    const auto idx = enc_acc.get_multidimensional_index(i); enc_acc[i] = {sc}[idx[1] * {n} + idx[0]];")
        self.emit("}")
        self.emit("enc_op.run(enc_a, enc_b, enc_acc);  // synchronizes the threadgroup on entry")
        self.emit("for (uint16_t i = 0; i < enc_acc.get_capacity(); ++i) if (enc_acc.is_valid_element(i)) {")
        self.emit(f"    const auto idx = enc_acc.get_multidimensional_index(i); {sc}[idx[1] * {n} + idx[0]] = enc_acc[i];")
        self.emit("}")
        self.indent -= 1
        self.emit("}")
        self.barrier()
        var = self.declare_tile(r, home)
        out_t = msl_type(r.type.element)
        self.loop(home, f"{var}[e] = static_cast<{out_t}>({sc}[{self.flat_index(home, (m, n), 'e')}]);")

    # --- a matmul2d accumulator carried across a K loop in its cooperative tensor --------------------------------
    def begin_carried_matmul2d(self, dot: ir.Op, init: ir.Value, init_op: ir.Op | None, home: TileLayout) -> None:
        """Before the ``for`` loop whose carried value ``dot`` accumulates into (``LayoutPlan.coop``): declare the
        matmul2d op, its cooperative destination tensor and the operand tensors over one threadgroup buffer, and
        initialise the cooperative tensor from the loop's initial value ``init`` (a splat of a scalar: element by
        element in registers; any other tile: through the buffer, by ``get_multidimensional_index``).

        The buffer holds A, then B (16-byte aligned), while the loop runs, and the accumulator's m x n floats
        when it moves in or out of the cooperative tensor outside the loop: max(A + B, 4 m n) bytes, so an fp32
        64x64x64 tile needs 32 KB, not the 48 KB of staging A, B and the accumulator separately."""
        a, b, _ = dot.operands
        r = dot.result
        m, n = r.type.shape
        k = a.type.shape[-1]
        ta, tb = (msl_type(x.type.element) for x in (a, b))
        self.uses_tensor_ops = True
        self.matmul2d_tiles.append((m, n, k, a.type.element.name, b.type.element.name, self.num_warps))
        a_bytes = m * k * a.type.element.itemsize
        b_at = (a_bytes + 15) // 16 * 16
        b_bytes = k * n * b.type.element.itemsize
        c_bytes = m * n * 4
        size = (max(b_at + b_bytes, c_bytes) + 15) // 16 * 16
        if self.pooled:  # every data movement starts at the pool's first byte (movement.py smem)
            array = base = "enc_pool"
            self.smem_bytes = max(self.smem_bytes, size)
        else:
            array = self.fresh("enc_smem")
            self.smem_decls.append(f"threadgroup float4 {array}[{size // 16}];  // dot %{r.id}: operands A and B "
                                   "in the loop, the accumulator before and after it")
            self.smem_bytes += size
            base = f"((threadgroup uchar*){array})"
        self.check_smem(f"the operands and accumulator of dot %{r.id}")
        s = r.id
        st = self.coop_state[s] = {
            "sa": f"((threadgroup {ta}*){base})", "sb": f"((threadgroup {tb}*)({base} + {b_at}))",
            "sc": f"((threadgroup float*){base})", "ra": (array, 0, a_bytes), "rb": (array, b_at, b_at + b_bytes),
            "rc": (array, 0, c_bytes), "acc": f"enc_acc{s}", "op": f"enc_op{s}", "ea": f"enc_a{s}", "eb": f"enc_b{s}"}
        self.notes.append(f"dot %{r.id}: Metal 4 matmul2d ({m}x{n}x{k}, execution_simdgroups<{self.num_warps}>), "
                          f"the accumulator kept in a cooperative tensor across its loop ({size} bytes of threadgroup "
                          "memory for A and B, reused for the accumulator before and after the loop)")
        acc = st["acc"]
        self.emit(f"// dot %{r.id}: the accumulator stays in the cooperative tensor {acc} across the loop")
        self.emit(f"using enc_TA{s} = tensor<threadgroup {ta}, dextents<int32_t, 2>, tensor_inline>;")
        self.emit(f"using enc_TB{s} = tensor<threadgroup {tb}, dextents<int32_t, 2>, tensor_inline>;")
        self.emit(f"constexpr auto enc_desc{s} = matmul2d_descriptor({m}, {n}, {k}, false, false, false, "
                  "matmul2d_descriptor::mode::multiply_accumulate);")
        self.emit(f"matmul2d<enc_desc{s}, execution_simdgroups<{self.num_warps}>> {st['op']};")
        self.emit(f"auto {acc} = {st['op']}.get_destination_cooperative_tensor<enc_TA{s}, enc_TB{s}, float>();")
        self.emit(f"enc_TA{s} {st['ea']}({st['sa']}, dextents<int32_t, 2>({k}, {m}));")
        self.emit(f"enc_TB{s} {st['eb']}({st['sb']}, dextents<int32_t, 2>({n}, {k}));")
        each = f"for (uint16_t i = 0; i < {acc}.get_capacity(); ++i) if ({acc}.is_valid_element(i))"
        if init_op is not None and init_op.name == "splat" and not init_op.operands[0].type.is_tile:
            self.emit(f"{each} {acc}[i] = float({self.ref(init_op.operands[0], None)});")
            return
        self.smem_begin()
        self.sync.region(st["rc"])
        own = self.owner(home, "e")
        self.loop(home, f"{'if (' + own + ') ' if own else ''}{st['sc']}[{self.flat_index(home, (m, n), 'e')}] = "
                        f"float({self.ref(init, home)});")
        self.barrier()
        self.emit(f"{each} {{ const auto idx = {acc}.get_multidimensional_index(i); "
                  f"{acc}[i] = {st['sc']}[idx[1] * {n} + idx[0]]; }}")

    def step_carried_matmul2d(self, dot: ir.Op) -> None:
        """One iteration of the loop: stage A and B (after a barrier when the previous ``run`` may still read them)
        and ``run``: the cooperative tensor accumulates A B in place, no threadgroup round trip."""
        a, b, _ = dot.operands
        decision = self.plan.dots[dot.result.id]
        st = self.coop_state[dot.result.id]
        self.smem_begin()
        self.sync.region(st["ra"])
        self.sync.region(st["rb"])
        self.stage_operand(a, decision.a_layout, st["sa"], self.flat_index(decision.a_layout, a.type.shape, "e"))
        self.stage_operand(b, decision.b_layout, st["sb"], self.flat_index(decision.b_layout, b.type.shape, "e"))
        self.barrier()
        self.emit(f"{st['op']}.run({st['ea']}, {st['eb']}, {st['acc']});  // {st['acc']} += A B "
                  "(synchronizes the threadgroup on entry)")

    def end_carried_matmul2d(self, dot_id: int, result: ir.Value) -> None:
        """After the loop: the cooperative tensor moves to the loop result's tile layout through the buffer,
        once (a barrier first: the last ``run`` may still read A and B there)."""
        st = self.coop_state[dot_id]
        home = self.plan.homes[result.id]
        m, n = result.type.shape
        self.smem_begin()
        self.sync.region(st["rc"])
        acc = st["acc"]
        self.emit(f"for (uint16_t i = 0; i < {acc}.get_capacity(); ++i) if ({acc}.is_valid_element(i)) {{ "
                  f"const auto idx = {acc}.get_multidimensional_index(i); {st['sc']}[idx[1] * {n} + idx[0]] = "
                  f"{acc}[i]; }}")
        self.barrier()
        var = self.declare_tile(result, home)
        self.loop(home, f"{var}[e] = {st['sc']}[{self.flat_index(home, (m, n), 'e')}];")

    def emit_sliced_dot(self, op: ir.Op, home: TileLayout, ks: int) -> None:
        """``tl.dot`` whose A and B do not fit in threadgroup memory together: a loop over K in slices of ``ks``,
        each staged (after a barrier) and multiplied into the accumulator, which stays in registers."""
        a, b, _ = op.operands
        r = op.result
        decision = self.plan.dots[r.id]
        k = a.type.shape[-1]
        ta, tb = (msl_type(x.type.element) for x in (a, b))
        self.smem_begin()
        sa = self.smem(ta, a.type.numel // k * ks, f"operand A of dot %{r.id} (K slices of {ks})",
                       a.type.element.itemsize)
        sb = self.smem(tb, b.type.numel // k * ks, f"operand B of dot %{r.id} (K slices of {ks})",
                       b.type.element.itemsize)
        self.notes.append(f"dot %{r.id}: A and B staged in {k // ks} slices of K={ks} (all of K would need more "
                          "than Metal's 32 KB of threadgroup memory)")

        def stage() -> None:
            self.stage_slice(a, decision.a_layout, sa, True, ks)
            self.stage_slice(b, decision.b_layout, sb, False, ks)

        if isinstance(home.parent, MmaLayout):
            self.emit_simdgroup_dot(op, home.parent, sa, sb, ks, stage)
        else:
            self.emit_fma_dot(op, home, sa, sb, ks, stage)

    def k_slices(self, k: int, ks: int, stage: Any, body: Any) -> None:
        """``body(ks)`` once per K slice, each after its operands were staged (``stage``); without ``stage``,
        ``body(k)`` once over operands staged whole."""
        if stage is None:
            body(k)
            return
        self.emit(f"for (int enc_k0 = 0; enc_k0 < {k}; enc_k0 += {ks}) {{")
        self.indent += 1
        stage()
        self.barrier()
        body(ks)
        self.barrier()  # every thread is done with this slice before the next one overwrites it
        self.indent -= 1
        self.emit("}")

    def emit_simdgroup_dot(self, op: ir.Op, mma: MmaLayout, sa: str | None, sb: str, ks: int | None = None,
                           stage: Any = None) -> None:
        """simdgroup_matrix 8x8 fragments: A from ``sa`` (or, without it, from registers: ``DotPlan.a_registers``),
        B from ``sb``, the accumulator in registers."""
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
                          f"{fm}x{fn} accumulator fragments of 8x8 each, "
                          + ("A's fragments from registers, B staged in threadgroup memory" if sa is None else
                             "A and B staged in threadgroup memory")
                          + (f" (not matmul2d: {self.plan.dots[r.id].why_not_matmul2d})"
                             if self.plan.dots[r.id].why_not_matmul2d else ""))
        self.emit(f"simdgroup_float8x8 {c}[{fm * fn}];")
        wm = self.warp_coord(mma, 0)
        wn = self.warp_coord(mma, 1)
        row0 = f"{wm} * {m // mma.warps[0]}" if wm != "0" else "0"
        col0 = f"{wn} * {n // mma.warps[1]}" if wn != "0" else "0"
        origin = f"ulong2({col0} + (f % {fn}) * 8, {row0} + (f / {fn}) * 8)"
        via_store = getattr(self, "fragments_via_store", False)
        if via_store:
            # MSL_AUDIT D4 fallback: the device's thread_elements() lane mapping is not the one assumed (a probe said
            # so), so fragments enter and leave through threadgroup memory with simdgroup_load/simdgroup_store
            self.notes.append(f"dot %{r.id}: accumulator fragments move through threadgroup memory "
                              "(simdgroup_store), because the fragment lane probe found another thread_elements() "
                              "mapping on this device")
            sc = self.smem("float", m * n, f"accumulator fragments of dot %{r.id}", 4)
            idx = self.flat_index(home, (m, n), "e")
            self.loop(home, f"{sc}[{idx}] = float({self.ref(acc, home)});")
            self.barrier()
            self.emit(f"for (int f = 0; f < {fm * fn}; ++f) simdgroup_load({c}[f], {sc}, {n}, {origin});")
        else:
            acc_ref = self.ref(acc, home, "{e}")
            accf = [acc_ref.replace("{e}", f"2 * f + {j}") for j in range(2)]
            cast = "float" if acc.type.element.name != "fp32" else ""
            self.emit(f"for (int f = 0; f < {fm * fn}; ++f) {{ {c}[f].thread_elements()[0] = {cast}({accf[0]}); "
                      f"{c}[f].thread_elements()[1] = {cast}({accf[1]}); }}")
        def multiply(kn: int) -> None:  # the K columns of A / rows of B staged now
            self.emit(f"for (int kk = 0; kk < {kn}; kk += 8) {{")
            self.indent += 1
            self.emit(f"{frag_in} fa[{fm}];")
            self.emit(f"{frag_in} fb[{fn}];")
            if sa is None:  # A's [M, K] fragment layout: fragment (i, kk / 8) is registers 2 * (i * K / 8 + kk / 8) + j
                a_ref = self.ref(a, self.plan.dots[r.id].a_layout, "{e}")
                fa = [a_ref.replace("{e}", f"2 * (i * {kn // 8} + kk / 8) + {j}") for j in range(2)]
                self.emit(f"for (int i = 0; i < {fm}; ++i) {{ fa[i].thread_elements()[0] = {fa[0]}; "
                          f"fa[i].thread_elements()[1] = {fa[1]}; }}")
            else:
                self.emit(f"for (int i = 0; i < {fm}; ++i) simdgroup_load(fa[i], {sa}, {kn}, "
                          f"ulong2(kk, {row0} + i * 8));")
            self.emit(f"for (int j = 0; j < {fn}; ++j) simdgroup_load(fb[j], {sb}, {n}, ulong2({col0} + j * 8, kk));")
            self.emit(f"for (int i = 0; i < {fm}; ++i) for (int j = 0; j < {fn}; ++j) "
                      f"simdgroup_multiply_accumulate({c}[i * {fn} + j], fa[i], fb[j], {c}[i * {fn} + j]);")
            self.indent -= 1
            self.emit("}")

        self.k_slices(k, ks or k, stage, multiply)
        out_t = msl_type(r.type.element)
        var = self.declare_tile(r, home)
        conv = (lambda x: x) if r.type.element.name == "fp32" else (lambda x: f"static_cast<{out_t}>({x})")
        if via_store:
            self.emit(f"for (int f = 0; f < {fm * fn}; ++f) simdgroup_store({c}[f], {sc}, {n}, {origin});")
            self.barrier()
            self.loop(home, f"{var}[e] = {conv(f'{sc}[{idx}]')};")
            return
        self.emit(f"for (int f = 0; f < {fm * fn}; ++f) {{ {var}[2 * f] = {conv(f'{c}[f].thread_elements()[0]')}; "
                  f"{var}[2 * f + 1] = {conv(f'{c}[f].thread_elements()[1]')}; }}")

    def emit_fma_dot(self, op: ir.Op, home: TileLayout, sa: str, sb: str, ks: int | None = None,
                     stage: Any = None) -> None:
        a, b, acc = op.operands
        r = op.result
        shape = r.type.shape
        k = a.type.shape[-1]
        m, n = shape[-2], shape[-1]
        batched = len(shape) == 3
        acc_t = "int" if a.type.element.is_int() else "float"
        why = self.plan.dots[r.id].why_fma or "the result layout is not a fragment layout"
        self.notes.append(f"dot %{r.id}: multiply-add loop per output element (shape {list(shape)} x K={k}, "
                          f"{a.type.element}) because {why}; A and B staged in threadgroup memory")
        var = self.declare_tile(r, home)
        out_t = msl_type(r.type.element)
        if stage is None:  # A and B staged whole: one sum per output element
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
            self.emit(f"for (int kk = 0; kk < {k}; ++kk) s += {acc_t}({sa}[{a_base} + kk]) * "
                      f"{acc_t}({sb}[{b_base} + kk * {n}]);")
            self.emit(f"{var}[e] = static_cast<{out_t}>(s);")
            self.indent -= 1
            self.emit("}")
            return
        nreg = home.parent.elems_per_thread
        sums = self.fresh("enc_s")
        self.emit(f"{acc_t} {sums}[{nreg}];")
        self.loop(home, f"{sums}[e] = {acc_t}({self.ref(acc, home, 'e')});")
        coords = [self.value_coord(home, shape, i, "e") for i in range(len(shape))]

        def multiply(kn: int) -> None:  # the K columns of A / rows of B staged now
            self.emit(f"for (int e = 0; e < {nreg}; ++e) {{")
            self.indent += 1
            if batched:
                self.emit(f"const int bb = {coords[0]};")
            self.emit(f"const int row = {coords[-2]};")
            self.emit(f"const int col = {coords[-1]};")
            a_base = f"(bb * {m} + row) * {kn}" if batched else f"row * {kn}"
            b_base = f"bb * {kn * n} + col" if batched else "col"
            self.emit(f"for (int kk = 0; kk < {kn}; ++kk) {sums}[e] += {acc_t}({sa}[{a_base} + kk]) * "
                      f"{acc_t}({sb}[{b_base} + kk * {n}]);")
            self.indent -= 1
            self.emit("}")

        self.k_slices(k, ks or k, stage, multiply)
        self.loop(home, f"{var}[e] = static_cast<{out_t}>({sums}[e]);")
