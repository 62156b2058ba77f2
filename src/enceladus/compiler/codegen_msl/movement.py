"""Moving values between threads: reductions (registers -> SIMD shuffles -> threadgroup memory),
layout conversions and data-movement ops through threadgroup memory, and ``split``."""

from __future__ import annotations

from ... import errors
from .. import ir
from ..layout import MmaLayout, TileLayout
from ..metal_limits import MAX_THREADGROUP_MEMORY
from ..msl_types import msl_type
from .barriers import MARKER

# the simd_* function of a reduce whose combine function is one of these ops (MovementMixin.simd_reduction)
_SIMD_REDUCTIONS = {"add": "simd_sum", "max": "simd_max", "min": "simd_min", "and": "simd_and", "or": "simd_or",
                    "xor": "simd_xor"}


def op_name(emitter) -> str:
    op = getattr(emitter, "current_op", None)
    return f"'{op.name}'" if op is not None else "operation"


def _source_line(loc) -> str | None:
    if loc is None:
        return None
    import linecache

    return linecache.getline(loc.filename, loc.lineno) or None


def conversion_buffer(shape: tuple[int, ...], itemsize: int) -> tuple[bool, bool]:
    """How a layout conversion lays out its threadgroup buffer, as (pad, swizzle): rows padded by one element
    (so that a column's elements fall in different banks) when the padded buffer fits in threadgroup memory on
    its own; else, when it does not (a [128, 128] fp16 tile: 32 KB plus 256 bytes), no padding, with the
    columns XOR-swizzled by row instead when the last dimension is a power of two; else plain row-major."""
    if len(shape) < 2:
        return False, False
    rows = 1
    for s in shape[:-1]:
        rows *= s
    cols = shape[-1]
    if rows * (cols + 1) * itemsize <= MAX_THREADGROUP_MEMORY:
        return True, False
    return False, cols > 1 and shape[-2] > 1 and cols & (cols - 1) == 0


class MovementMixin:
    # --- threadgroup memory --------------------------------------------------------------------------
    def smem(self, elem_type: str, count: int, what: str, itemsize: int) -> str:
        """A threadgroup array for one data movement. Each gets its own array while they all fit in 32 KB; else
        (``reuse``) movements outside every loop reuse an earlier such array of their type that is large enough;
        else they share one pool, each movement from its start. A movement writing memory that may still be in use
        waits at a barrier first (barriers.py)."""
        if self.pooled:
            offset = (self.pool_offset + 15) // 16 * 16
            self.pool_offset = offset + count * itemsize
            self.smem_bytes = max(self.smem_bytes, self.pool_offset)
            name = f"((threadgroup {elem_type}*)(enc_pool + {offset}))"
            self.sync.region(("enc_pool", offset, self.pool_offset))
            self.notes.append(f"{what}: {count * itemsize} bytes of the shared threadgroup pool")
        else:
            old = [a for a in self.smem_arrays if a[1] == elem_type and a[2] >= count and a[3] != self.sync.current]
            if not self.reuse and self.reuse_when_full and not self.depth and old:
                if self.reuse_diverged or self.smem_bytes + count * itemsize <= MAX_THREADGROUP_MEMORY:
                    self.reuse_diverged = True  # a new array here, where an emission with reuse takes an old one
                else:  # separate arrays overflow here, and up to here an emission with reuse wrote the same: go on as it
                    self.reuse = True
            if self.reuse and not self.depth and old:  # a barrier first if it may still be in use (barriers.py)
                pick = min(old, key=lambda a: a[2])
                name, _, size, _ = pick
                self.smem_arrays[self.smem_arrays.index(pick)] = (name, elem_type, size, self.sync.current)  # taken
                self.sync.region((name, 0, size * itemsize))
                self.notes.append(f"{what}: reuses {name} ({size * itemsize} bytes of threadgroup memory)")
                return name
            name = self.fresh("enc_smem")
            self.smem_decls.append(f"threadgroup {elem_type} {name}[{count}];  // {what}")
            self.sync.region((name, 0, count * itemsize))
            self.smem_bytes += count * itemsize
            if not self.depth:
                self.smem_arrays.append((name, elem_type, count, self.sync.current))
        self.check_smem(what)
        return name

    def check_smem(self, what: str) -> None:
        """Refuse the kernel when its threadgroup memory passes Metal's limit (``what``: the latest use)."""
        if self.smem_bytes > MAX_THREADGROUP_MEMORY:
            loc = self.current_op.loc if getattr(self, "current_op", None) is not None else None
            raise errors.OutOfResources(
                f"kernel '{self.fn.name}' needs {self.smem_bytes} bytes of threadgroup memory (for {what}); "
                f"Metal allows {MAX_THREADGROUP_MEMORY}", kernel=self.fn.name,
                filename=loc.filename if loc else None, lineno=loc.lineno if loc else None,
                col=loc.col if loc else None, source_line=_source_line(loc),
                fix="use smaller block sizes, or fewer tiles that change layout")

    def smem_begin(self) -> None:
        """Called before the first write of a data movement: a barrier there if earlier readers (in program order,
        or in the previous iteration of a loop) may still use what it writes (barriers.py decides)."""
        if self.pooled:
            self.pool_offset = 0
        cid = self.sync.candidate()
        self.barrier_marks.append((self.body, len(self.body), cid))  # where place_barriers finds it
        self.emit(MARKER.format(cid))
        self.smem_uses += 1

    def where(self) -> dict:
        """The location of the op being emitted, for refusals."""
        loc = self.current_op.loc if getattr(self, "current_op", None) is not None else None
        return {"filename": loc.filename if loc else None, "lineno": loc.lineno if loc else None,
                "col": loc.col if loc else None, "source_line": _source_line(loc), "kernel": self.fn.name}

    def storage_type(self, v: ir.Value) -> tuple[str, int]:
        elem = v.type.element
        if elem.is_ptr():
            raise errors.CompilationError(
                f"this {op_name(self)} would move a tile of pointers between threads, which is not supported",
                fix="apply it to the offsets instead and add them to the base pointer afterwards", **self.where())
        if elem.is_bool():
            return "uchar", 1
        return msl_type(elem), elem.itemsize

    # --- conversions ------------------------------------------------------------------------------------
    def emit_conversion(self, v: ir.Value, src: TileLayout, dst: TileLayout) -> None:
        """Make ``v`` (held in ``src``) available in ``dst`` through threadgroup memory.

        A tile of pointers moves as element offsets from the pointer argument it is derived from."""
        base = None
        if v.type.element.is_ptr():
            base = self.pointer_base(v)
            t, size = "long", 8
        else:
            t, size = self.storage_type(v)
        shape = v.type.shape
        pad, swizzle = conversion_buffer(shape, size)
        count = 1
        for i, s in enumerate(shape):
            count *= s + (1 if pad and i == len(shape) - 1 else 0)
        self.emit(f"// %{v.id}: {src} -> {dst}")
        self.smem_begin()
        buf = self.smem(t, count, f"layout conversion of %{v.id}", size)
        own = self.owner(src, "e")
        guard = f"if ({own}) " if own else ""
        value = self.ref(v, src) if base is None else f"long({self.ref(v, src)} - {base})"
        index = lambda layout: self.flat_index(layout, shape, "e", pad=pad, swizzle=swizzle)  # noqa: E731
        self.loop(src, f"{guard}{buf}[{index(src)}] = {value};")
        self.barrier()
        name = f"v{v.id}_{self.fresh('c')}"
        if base is None:
            var = self.declare_tile(v, dst, name=name)
        else:
            var = name
            self.emit(f"{msl_type(v.type.element, const=not self._writes_through(v))} {var}"
                      f"[{dst.parent.elems_per_thread}];")
            self.refs[(v.id, dst)] = var + "[{e}]"
        read = f"{buf}[{index(dst)}]"
        if base is not None:
            read = f"{base} + {read}"
        elif v.type.element.is_bool():
            read = f"({read} != 0)"
        self.loop(dst, f"{var}[e] = {read};")
        how = " (columns XOR-swizzled by row: the padded buffer would not fit)" if swizzle else ""
        self.notes.append(f"%{v.id} converted from {src} to {dst} through {count * size} bytes of threadgroup "
                          f"memory{how}")

    def pointer_base(self, v: ir.Value) -> str:
        """The MSL name of the pointer argument that the pointer tile ``v`` is derived from."""
        root = self.roots.get(v.id)
        for a in self.fn.args:
            if root is not None and a.name == root:
                return self.refs[(a.id, None)]
        raise errors.CompilationError(
            "a tile of pointers must change layout here, and it is not derived from one pointer argument "
            "(it moves between threads as offsets from that argument)",
            fix="compute the pointers from one pointer argument plus offsets (e.g. base + offs), "
                "or load the values first and use the loaded tile", **self.where())

    def emit_via_smem(self, op: ir.Op) -> None:
        """reshape, cat and flip: write the operands row-major, read them back in the result's order."""
        r = op.result
        home = self.plan.homes[r.id]
        base = None
        if r.type.element.is_ptr():  # pointers move as offsets from the one argument they all derive from
            bases = {self.pointer_base(x) for x in op.operands}
            base = bases.pop() if len(bases) == 1 else self.storage_type(r)
            t, size = "long", 8
        else:
            t, size = self.storage_type(r)
        total = r.type.numel
        self.smem_begin()
        buf = self.smem(t, total, f"{op.name} of %{r.id}", size)
        offset = 0
        for x in op.operands:
            lx = self.plan.needs[x.id][0]
            own = self.owner(lx, "e")
            guard = f"if ({own}) " if own else ""
            idx = self.flat_index(lx, x.type.shape, "e")
            if op.name == "flip":
                idx = self.flipped_index(lx, x.type.shape, op.attrs["axis"], "e")
            value = self.ref(x, lx) if base is None else f"long({self.ref(x, lx)} - {base})"
            self.loop(lx, f"{guard}{buf}[{offset} + {idx}] = {value};")
            offset += x.type.numel
        self.barrier()
        read = f"{buf}[{self.flat_index(home, r.type.shape, 'e')}]"
        if base is not None:
            var = self.fresh("p")
            self.emit(f"{msl_type(r.type.element, const=not self._writes_through(r))} {var}"
                      f"[{home.parent.elems_per_thread}];")
            self.refs[(r.id, home)] = var + "[{e}]"
            read = f"{base} + {read}"
        else:
            var = self.declare_tile(r, home)
        if base is None and r.type.element.is_bool():
            read = f"({read} != 0)"
        self.loop(home, f"{var}[e] = {read};")

    def flipped_index(self, layout: TileLayout, shape: tuple[int, ...], axis: int, e: str) -> str:
        terms = []
        stride = 1
        for i in reversed(range(len(shape))):
            if shape[i] > 1:
                c = self.value_coord(layout, shape, i, e)
                if i == axis:
                    c = f"({shape[i] - 1} - {c})"
                terms.append(c if stride == 1 else f"{c} * {stride}")
            stride *= shape[i]
        return " + ".join(reversed(terms)) if terms else "0"

    def emit_split(self, op: ir.Op) -> None:
        x = op.operands[0]
        lx = self.plan.needs[x.id][0]
        p = lx.parent
        d = lx.dims[-1]
        s = p.slot_stride(d)
        for k, r in enumerate(op.results):
            home = self.plan.homes[r.id]
            var = self.declare_tile(r, home)
            base = f"(e - {self.digit(p, d, 'e')} * {s})"
            self.loop(home, f"{var}[e] = {self.ref(x, lx, f'{base} + {k * s}')};")

    # --- reductions ---------------------------------------------------------------------------------------
    def combine_helper(self, op: ir.Op) -> str:
        """Emit the combine region of a reduce/scan as an MSL function updating its first arguments in place."""
        region = op.regions[0]
        k = len(region.args) // 2
        name = self.fresh("enc_combine")
        params = [f"thread {msl_type(a.type.element)}& enc_a{i}" for i, a in enumerate(region.args[:k])]
        params += [f"{msl_type(a.type.element)} enc_b{i}" for i, a in enumerate(region.args[k:])]
        saved = self.body, self.body_locs, self.indent, self.current_op, self.current_loc
        self.body, self.body_locs, self.indent = [], [], 1
        for i, a in enumerate(region.args[:k]):
            self.refs[(a.id, None)] = f"enc_a{i}"
        for i, a in enumerate(region.args[k:]):
            self.refs[(a.id, None)] = f"enc_b{i}"
        self.emit_block(region)
        outs = [self.ref(y, None) for y in region.terminator.operands]
        temps = []
        for i, o in enumerate(outs):
            temps.append(f"const auto enc_y{i} = {o};")
        lines = self.body + ["    " + t for t in temps] + [f"    enc_a{i} = enc_y{i};" for i in range(k)]
        self.body, self.body_locs, self.indent, self.current_op, self.current_loc = saved
        self.helper_code.append(f"static inline void {name}({', '.join(params)}) {{\n" + "\n".join(lines) + "\n}")
        return name

    def emit_map_elementwise(self, op: ir.Op) -> None:
        """tl.map_elementwise: the scalar region becomes an MSL function called on each register of the inputs
        (``pack`` registers per call; a short last group repeats the last register and drops the extra results)."""
        region = op.regions[0]
        pack = op.attrs["pack"]
        name = self.fresh("enc_map")
        ys = region.terminator.operands
        params = [f"{msl_type(a.type.element)} enc_a{i}" for i, a in enumerate(region.args)]
        params += [f"thread {msl_type(y.type.element)}& enc_o{i}" for i, y in enumerate(ys)]
        saved = self.body, self.body_locs, self.indent, self.current_op, self.current_loc
        self.body, self.body_locs, self.indent = [], [], 1
        for i, a in enumerate(region.args):
            self.refs[(a.id, None)] = f"enc_a{i}"
        self.emit_block(region)
        outs = [self.ref(y, None) for y in ys]
        lines = self.body + [f"    enc_o{i} = {o};" for i, o in enumerate(outs)]
        self.body, self.body_locs, self.indent, self.current_op, self.current_loc = saved
        self.helper_code.append(f"static inline void {name}({', '.join(params)}) {{\n" + "\n".join(lines) + "\n}")
        home = self.plan.homes[op.results[0].id]
        n = home.parent.elems_per_thread
        outs = [self.declare_tile(r, home) for r in op.results]
        if pack == 1:
            args = [self.ref(x, home, "e") for x in op.operands] + [f"{o}[e]" for o in outs]
            self.loop(home, f"{name}({', '.join(args)});")
            return
        temps = [(self.fresh("m"), msl_type(r.type.element)) for r in op.results for _ in range(pack)]
        args = [self.ref(x, home, f"min(e + {j}, {n - 1})") for x in op.operands for j in range(pack)]
        self.emit(f"for (int e = 0; e < {n}; e += {pack}) {{")
        self.indent += 1
        for t, ty in temps:
            self.emit(f"{ty} {t};")
        self.emit(f"{name}({', '.join(args + [t for t, _ in temps])});")
        for k, o in enumerate(outs):
            for j in range(pack):
                self.emit(f"if (e + {j} < {n}) {o}[e + {j}] = {temps[k * pack + j][0]};")
        self.indent -= 1
        self.emit("}")

    def emit_reduce(self, op: ir.Op) -> None:
        axis = op.attrs["axis"]
        lx: TileLayout = self.plan.operand_layouts[op.results[0].id]
        p = lx.parent
        pd = lx.dims[axis]
        xs = op.operands
        combine = self.combine_helper(op)
        n = p.elems_per_thread
        stride, pt = p.slot_stride(pd), p.per_thread[pd]
        accs = [self.fresh("r") for _ in xs]
        types = [msl_type(x.type.element) for x in xs]
        for a, t in zip(accs, types):
            self.emit(f"{t} {a}[{n}];")
        digit = self.digit(p, pd, "e")
        # 1. inside each thread; steps 1-3 work on the first register of each row only (others copy it at the end)
        first = f"{digit} == 0" if pt > 1 else None
        skip = f"if (!({first})) continue; " if first else ""
        self.emit(f"for (int e = 0; e < {n}; ++e) {{")
        self.indent += 1
        if first:
            self.emit(f"if (!({first})) continue;")
        if pt <= 2:
            for a, x in zip(accs, xs):
                self.emit(f"{a}[e] = {self.ref(x, lx, 'e')};")
        if pt > 2:
            self.reduce_tree([lambda k, x=x: self.ref(x, lx, f"e + {k} * {stride}") for x in xs], types, accs,
                             combine, pt, "_t")
        elif pt > 1:
            args = ", ".join(f"{a}[e]" for a in accs) + ", " + ", ".join(
                self.ref(x, lx, f"e + k * {stride}") for x in xs)
            self.emit(f"for (int k = 1; k < {pt}; ++k) {combine}({args});")
        self.indent -= 1
        self.emit("}")
        # 2. across the lanes of a SIMD group that hold other parts of the row
        masks, warps = self.spread(p, pd)
        simd_fn = self.simd_reduction(op)
        if simd_fn and sorted(masks) == [1, 2, 4, 8, 16]:
            # the row spans the whole SIMD group: one hardware reduction instead of a shuffle butterfly
            call = f"{simd_fn}({accs[0]}[e])"
            if simd_fn in ("simd_sum", "simd_product") and xs[0].type.element.name == "int32":
                call = f"as_type<int>({simd_fn}(as_type<uint>({accs[0]}[e])))"  # wraps, as Triton defines it
            self.emit(f"for (int e = 0; e < {n}; ++e) {{ {skip}{accs[0]}[e] = {call}; }}")
            masks = []
        if masks:
            self.helpers.add("enc_shfl")
        for mask in masks:  # butterfly: one step per lane bit that changes the coordinate along pd
            self.emit(f"for (int e = 0; e < {n}; ++e) {{")
            self.indent += 1
            if skip:
                self.emit(skip.strip())
            for i, (a, t) in enumerate(zip(accs, types)):
                self.emit(f"const {t} o{i} = enc_shfl_xor({a}[e], ushort({mask}));")
            self.emit(f"if ((enc_lane & {mask}u) != 0) {{  // combine in coordinate order on both lanes")
            for i, (a, t) in enumerate(zip(accs, types)):
                self.emit(f"    const {t} s{i} = {a}[e]; {a}[e] = o{i};")
            self.emit(f"    {combine}({', '.join(f'{a}[e]' for a in accs)}, {', '.join(f's{i}' for i in range(len(xs)))});")
            self.emit("} else {")
            self.emit(f"    {combine}({', '.join(f'{a}[e]' for a in accs)}, {', '.join(f'o{i}' for i in range(len(xs)))});")
            self.emit("}")
            self.indent -= 1
            self.emit("}")
        # 3. across SIMD groups, through threadgroup memory
        if warps > 1:
            rows = 1
            for d, s in enumerate(p.shape):
                if d != pd:
                    rows *= s
            row = self.row_index(p, pd, "e")
            bufs = []
            self.smem_begin()
            for x in xs:
                st, size = self.storage_type(x)
                bufs.append(self.smem(st, warps * rows, f"reduction of %{op.results[0].id} across SIMD groups", size))
            wc = self.warp_coord(p, pd)
            lc = self.lane_is_first(p, pd)
            self.emit(f"if ({lc} && {wc} < {warps}) for (int e = 0; e < {n}; ++e) if ({digit} == 0) {{")
            for a, buf in zip(accs, bufs):
                self.emit(f"    {buf}[{wc} * {rows} + {row}] = {a}[e];")
            self.emit("}")
            self.barrier()
            self.emit(f"for (int e = 0; e < {n}; ++e) {{")
            self.indent += 1
            if skip:
                self.emit(skip.strip())
            self.emit(f"const int row = {row};")
            if warps > 2:
                self.reduce_tree([lambda k, buf=buf, t=t: self._read(buf, f"{k} * {rows} + row", t)
                                  for buf, t in zip(bufs, types)], types, accs, combine, warps, "_w")
            else:
                for a, buf, t in zip(accs, bufs, types):
                    self.emit(f"{a}[e] = {self._read(buf, 'row', t)};")
                args = ", ".join(f"{a}[e]" for a in accs) + ", " + ", ".join(
                    self._read(buf, f"w * {rows} + row", t) for buf, t in zip(bufs, types))
                self.emit(f"for (int w = 1; w < {warps}; ++w) {combine}({args});")
            self.indent -= 1
            self.emit("}")
            self.notes.append(f"reduction of %{op.results[0].id}: {warps} SIMD groups combine through threadgroup "
                              "memory (1 barrier, plus 1 before the writes where the buffer may still be in use)")
        if first:
            self.emit(f"for (int e = 0; e < {n}; ++e) {{ const int b = e - {digit} * {stride}; "
                      + " ".join([f"{a}[e] = {a}[b];" for a in accs]) + " }")
        for r, a in zip(op.results, accs):
            if r.type.is_tile:
                self.refs[(r.id, self.plan.homes[r.id])] = a + "[{e}]"
            else:
                self.emit(f"const {msl_type(r.type.element)} v{r.id} = {a}[0];")
                self.refs[(r.id, None)] = f"v{r.id}"

    def reduce_tree(self, sources, types: list[str], accs: list[str], combine: str, pt: int, suffix: str) -> None:
        """``acc[e]`` = the combine of ``pt`` > 2 values in order, ``sources[i](k)`` being operand i's k-th (a
        thread's registers along the reduced dimension, or the SIMD groups' partial results in threadgroup
        memory): four independent chains over consecutive runs, then a pairwise tree over the runs. The chain
        of dependent combines is about pt/4 + 2 long instead of pt - 1, and four chains in flight hide the
        ALU latency, on Apple's GPUs as on NVIDIA's (Triton reduces inside a thread as a tree), while a full
        tree's extra live temporaries would cost registers (GPU proxy, cross-entropy at 32 registers per
        row: 45 registers linear, 48 with four chains, 64 with a full tree). Neighbours are combined in order
        (a run's head holds consecutive values, left of the next run's), so an associative combine function
        that is not commutative gets the same answer as in a left-to-right chain; floating-point sums round
        in another order, as across lanes already."""
        temps = [f"{a}{suffix}" for a in accs]  # named after the accumulators: no fresh names, the rest unchanged
        for t, ty in zip(temps, types):
            self.emit(f"{ty} {t}[{pt}];")
        self.emit(f"for (int k = 0; k < {pt}; ++k) {{ "
                  + " ".join([f"{t}[k] = {src('k')};" for t, src in zip(temps, sources)]) + " }")
        left = f"{combine}({', '.join([f'{t}[k]' for t in temps])}, "  # each step: combine(t[k]..., t[right]...)
        assert pt & (pt - 1) == 0, f"{pt} values: tile dimensions and SIMD-group counts are powers of 2"
        run = max(pt // 4, 1)  # values per chain
        if run == 2:
            self.emit(f"for (int k = 0; k < {pt}; k += 2) {left}{', '.join([f'{t}[k + 1]' for t in temps])});")
        elif run > 2:
            self.emit(f"for (int j = 1; j < {run}; ++j) for (int k = 0; k < {pt}; k += {run}) "
                      f"{left}{', '.join([f'{t}[k + j]' for t in temps])});")
        s = run
        while s < pt:
            self.emit(f"for (int k = 0; k < {pt}; k += {2 * s}) {left}{', '.join([f'{t}[k + {s}]' for t in temps])});")
            s *= 2
        self.emit(" ".join([f"{a}[e] = {t}[0];" for a, t in zip(accs, temps)]))

    def simd_reduction(self, op: ir.Op) -> str | None:
        """The simd_* function equal to a reduce whose combine function is one add/max/min/and/or/xor."""
        region = op.regions[0]
        if len(op.operands) != 1 or len(region.ops) != 2:
            return None
        first = region.ops[0]
        a, b = region.args
        elem = op.operands[0].type.element
        if elem.name in ("int1", "int64", "uint64", "bf16") or first.operands not in ([a, b], [b, a]):
            return None
        if region.terminator.operands != [first.result]:
            return None
        return _SIMD_REDUCTIONS.get(first.name) if not (elem.is_floating() and first.name in ("and", "or", "xor")) \
            else None

    def spread(self, p, pd: int) -> tuple[list[int], int]:
        """How the distinct elements along ``pd`` spread over lanes (XOR masks) and SIMD groups (count)."""
        if isinstance(p, MmaLayout):
            return self.lane_masks(p, pd, 0), p.warps[pd]
        lanes = min(p.threads_per_warp[pd], max(1, p.shape[pd] // p.size_per_thread[pd]))
        warps = min(p.warps_per_cta[pd], max(1, p.shape[pd] // (p.size_per_thread[pd] * p.threads_per_warp[pd])))
        return self.lane_masks(p, pd, lanes), warps

    def _read(self, buf: str, idx: str, t: str) -> str:
        return f"({buf}[{idx}] != 0)" if t == "bool" else f"{buf}[{idx}]"

    def row_index(self, p, pd: int, e: str) -> str:
        """Row-major index of register ``e``'s coordinates along every parent dimension but ``pd``."""
        terms = []
        stride = 1
        for d in reversed(range(len(p.shape))):
            if d == pd or p.shape[d] == 1:
                if d != pd:
                    stride *= p.shape[d]
                continue
            c = self.coord(p, d, e)
            terms.append(c if stride == 1 else f"{c} * {stride}")
            stride *= p.shape[d]
        return " + ".join(reversed(terms)) if terms else "0"

    def emit_scan(self, op: ir.Op) -> None:
        """Inclusive scan in coordinate order: runs inside a thread, then lanes (shuffle-up), then SIMD groups
        and repetitions (totals through threadgroup memory). Combine functions need not be commutative."""
        axis = op.attrs["axis"]
        home: TileLayout = self.plan.homes[op.results[0].id]
        p = home.parent
        pd = home.dims[axis]
        xs = op.operands
        combine = self.combine_helper(op)
        n = p.elems_per_thread
        stride = p.slot_stride(pd)
        spt, pt = p.size_per_thread[pd], p.per_thread[pd]
        reps = pt // spt
        types = [msl_type(x.type.element) for x in xs]
        k = len(xs)
        ys = [self.fresh("s") for _ in xs]
        for y, t in zip(ys, types):
            self.emit(f"{t} {y}[{n}];")
        digit = self.digit(p, pd, "e")
        # 1. prefix inside each run of spt elements a thread holds
        self.emit(f"for (int e = 0; e < {n}; ++e) {{")
        self.indent += 1
        for y, x in zip(ys, xs):
            self.emit(f"{y}[e] = {self.ref(x, home, 'e')};")
        if spt > 1:
            self.emit(f"if ({digit} % {spt} != 0) {{")
            for i, (y, t) in enumerate(zip(ys, types)):
                self.emit(f"    {t} a{i} = {y}[e - {stride}];")
            self.emit(f"    {combine}({', '.join(f'a{i}' for i in range(k))}, {', '.join(f'{y}[e]' for y in ys)});")
            for i, y in enumerate(ys):
                self.emit(f"    {y}[e] = a{i};")
            self.emit("}")
        self.indent -= 1
        self.emit("}")
        lanes = min(p.threads_per_warp[pd], max(1, p.shape[pd] // spt))
        warps = min(p.warps_per_cta[pd], max(1, p.shape[pd] // (spt * p.threads_per_warp[pd])))
        lc = self.lane_coord(p, pd)
        ls = p.lane_stride(pd) if p.threads_per_warp[pd] > 1 else 1
        last = f"e - {digit} % {spt} * {stride} + {(spt - 1) * stride}"  # the last slot of e's run
        # 2. run totals scanned across lanes; lp = the exclusive prefix from lower lanes
        tots = [self.fresh("tot") for _ in xs]
        lps = [self.fresh("lp") for _ in xs]
        for a, b, t in zip(tots, lps, types):
            self.emit(f"{t} {a}[{n}]; {t} {b}[{n}];")
        self.emit(f"for (int e = 0; e < {n}; ++e) {{ {' '.join(f'{a}[e] = {y}[{last}];' for a, y in zip(tots, ys))} }}")
        if lanes > 1:
            self.helpers.add("enc_shfl_up")
            self.emit(f"for (ushort off = 1; off < {lanes}; off <<= 1) for (int e = 0; e < {n}; ++e) {{")
            self.indent += 1
            for i, (a, t) in enumerate(zip(tots, types)):
                self.emit(f"{t} o{i} = enc_shfl_up({a}[e], ushort(off * {ls}));")
            self.emit(f"if ({lc} % {lanes} >= off) {{ {combine}({', '.join(f'o{i}' for i in range(k))}, "
                      f"{', '.join(f'{a}[e]' for a in tots)}); {' '.join(f'{a}[e] = o{i};' for i, a in enumerate(tots))} }}")
            self.indent -= 1
            self.emit("}")
            self.emit(f"for (int e = 0; e < {n}; ++e) {{ "
                      + " ".join(f"{b}[e] = enc_shfl_up({a}[e], ushort({ls}));" for a, b in zip(tots, lps)) + " }")
        # 3. totals of each (repetition, SIMD group) through threadgroup memory
        bufs = []
        if warps > 1 or reps > 1:
            rows = 1
            for d, s in enumerate(p.shape):
                if d != pd:
                    rows *= s
            row = self.row_index(p, pd, "e")
            wc = self.warp_coord(p, pd)
            self.smem_begin()
            for x in xs:
                st, size = self.storage_type(x)
                bufs.append(self.smem(st, reps * warps * rows, f"scan of %{op.results[0].id}", size))
            self.emit(f"if ({lc} % {lanes} == {lanes - 1} && {wc} < {warps}) for (int e = 0; e < {n}; ++e) "
                      f"if ({digit} % {spt} == {spt - 1}) {{")
            for a, buf in zip(tots, bufs):
                self.emit(f"    {buf}[(({digit} / {spt}) * {warps} + {wc}) * {rows} + {row}] = {a}[e];")
            self.emit("}")
            self.barrier()
        # 4. combine: repetition prefix, SIMD-group prefix, lane prefix, own run prefix
        self.emit(f"for (int e = 0; e < {n}; ++e) {{")
        self.indent += 1
        self.emit("bool has = false;")
        pres = [self.fresh("pre") for _ in xs]
        for pre, t in zip(pres, types):
            self.emit(f"{t} {pre} = {{}};")

        def absorb(values: list[str]) -> None:
            self.emit("{")
            for i, (v, t) in enumerate(zip(values, types)):
                self.emit(f"    const {t} q{i} = {v};")
            self.emit(f"    if (has) {combine}({', '.join(pres)}, {', '.join(f'q{i}' for i in range(k))}); "
                      f"else {{ {' '.join(f'{pre} = q{i};' for i, pre in enumerate(pres))} has = true; }}")
            self.emit("}")

        if bufs:
            self.emit(f"const int row = {self.row_index(p, pd, 'e')};")
            self.emit(f"const int rep = {digit} / {spt};")
            self.emit(f"for (int rr = 0; rr <= rep; ++rr) for (int w = 0; w < {warps}; ++w) {{")
            self.indent += 1
            self.emit(f"if (rr == rep && w >= {self.warp_coord(p, pd)} % {warps}) break;")
            absorb([self._read(buf, f"(rr * {warps} + w) * {rows} + row", t) for buf, t in zip(bufs, types)])
            self.indent -= 1
            self.emit("}")
        if lanes > 1:
            self.emit(f"if ({lc} % {lanes} > 0)")
            absorb([f"{b}[e]" for b in lps])
        self.emit(f"if (has) {{ {combine}({', '.join(pres)}, {', '.join(f'{y}[e]' for y in ys)}); "
                  f"{' '.join(f'{y}[e] = {pre};' for y, pre in zip(ys, pres))} }}")
        self.indent -= 1
        self.emit("}")
        for r, y in zip(op.results, ys):
            self.refs[(r.id, home)] = y + "[{e}]"

    # --- gather, histogram, sort (all through threadgroup memory) --------------------------------------------
    def write_rowmajor(self, x: ir.Value, buf: str) -> TileLayout:
        lx = self.plan.needs[x.id][0]
        own = self.owner(lx, "e")
        guard = f"if ({own}) " if own else ""
        self.loop(lx, f"{guard}{buf}[{self.flat_index(lx, x.type.shape, 'e')}] = {self.ref(x, lx)};")
        return lx

    def emit_gather(self, op: ir.Op) -> None:
        src, index = op.operands
        r = op.result
        home = self.plan.homes[r.id]
        axis = op.attrs["axis"]
        t, size = self.storage_type(src)
        self.smem_begin()
        buf = self.smem(t, src.type.numel, f"source of gather %{r.id}", size)
        self.write_rowmajor(src, buf)
        self.barrier()
        shape = src.type.shape
        terms = []
        stride = 1
        for i in reversed(range(len(shape))):
            if i == axis:  # out-of-range indices are clamped (undefined in Triton)
                c = f"clamp(int({self.ref(index, home)}), 0, {shape[i] - 1})"
            else:
                c = self.value_coord(home, r.type.shape, i, "e")
            terms.append(c if stride == 1 else f"{c} * {stride}")
            stride *= shape[i]
        var = self.declare_tile(r, home)
        self.loop(home, f"{var}[e] = {self._read(buf, ' + '.join(reversed(terms)), msl_type(r.type.element))};")

    def emit_histogram(self, op: ir.Op) -> None:
        x = op.operands[0]
        mask = op.operands[1] if len(op.operands) > 1 else None
        r = op.result
        home = self.plan.homes[r.id]
        bins = op.attrs["bins"]
        nthreads = 32 * self.num_warps
        self.smem_begin()
        buf = self.smem("atomic_int", bins, f"counts of histogram %{r.id}", 4)
        self.emit(f"for (int i = int(enc_tid); i < {bins}; i += {nthreads}) "
                  f"atomic_store_explicit(&{buf}[i], 0, memory_order_relaxed);")
        self.barrier()
        lx = self.plan.needs[x.id][0]
        conds = [f"{self.ref(x, lx)} >= 0", f"{self.ref(x, lx)} < {bins}"]  # values outside the bins are ignored
        if mask is not None:
            conds.append(self.ref(mask, lx))
        own = self.owner(lx, "e")
        if own:
            conds.append(own)
        self.loop(lx, f"if ({' && '.join(conds)}) atomic_fetch_add_explicit(&{buf}[{self.ref(x, lx)}], 1, "
                      "memory_order_relaxed);")
        self.barrier()
        var = self.declare_tile(r, home)
        self.loop(home, f"{var}[e] = atomic_load_explicit(&{buf}[{self.value_coord(home, r.type.shape, 0, 'e')}], "
                        "memory_order_relaxed);")

    def emit_sort(self, op: ir.Op) -> None:
        """Bitonic sort of every row (the last dimension) in threadgroup memory; one barrier per stage."""
        x = op.operands[0]
        r = op.result
        home = self.plan.homes[r.id]
        t = msl_type(x.type.element)
        st, size = self.storage_type(x)
        n = x.type.shape[-1]
        rows = x.type.numel // n
        nthreads = 32 * self.num_warps
        self.smem_begin()
        buf = self.smem(st, x.type.numel, f"sort of %{r.id}", size)
        self.write_rowmajor(x, buf)
        self.barrier()
        desc = op.attrs["descending"]
        pairs = rows * n // 2
        k = 2
        stages = 0
        while k <= n:
            j = k // 2
            while j >= 1:
                self.emit(f"for (int p = int(enc_tid); p < {pairs}; p += {nthreads}) {{")
                self.indent += 1
                self.emit(f"const int row = p / {n // 2}, q = p % {n // 2};")
                self.emit(f"const int i = (q / {j}) * {2 * j} + q % {j};")
                self.emit(f"const {t} a = {buf}[row * {n} + i], b = {buf}[row * {n} + i + {j}];")
                up = f"((i & {k}) == 0)" if k < n else "true"
                order = f"({up} != {'true' if desc else 'false'})"
                self.emit(f"if ((a > b) == {order}) {{ {buf}[row * {n} + i] = b; {buf}[row * {n} + i + {j}] = a; }}")
                self.indent -= 1
                self.emit("}")
                self.barrier()
                stages += 1
                j //= 2
            k *= 2
        var = self.declare_tile(r, home)
        keep = op.attrs["k"]
        idx = self.flat_index(home, r.type.shape, "e")
        if keep != n:  # topk: the first k of each row, rows still n apart in the buffer
            rc = [self.value_coord(home, r.type.shape, i, "e") for i in range(len(r.type.shape))]
            idx = f"({rc[0]}) * {n} + {rc[-1]}" if len(rc) == 2 else rc[-1]
        self.loop(home, f"{var}[e] = {self._read(buf, idx, t)};")
        self.notes.append(f"sort %{r.id}: bitonic, {stages} stages with a barrier each")
