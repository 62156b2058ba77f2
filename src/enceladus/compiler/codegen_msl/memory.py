"""Loads and stores: vector width from axis analysis, 16-byte accesses, masks, replicated layouts."""

from __future__ import annotations

from ... import errors
from .. import ir
from ..kernel import Access
from ..layout import TileLayout
from ..msl_types import MSL_TYPE
from ..passes.layouts import store_layout

_WORD = {4: "uint", 8: "uint2", 16: "uint4"}
_AFFINE_INTS = ("int32", "int64")
_AFFINE_OPS = ("add", "sub", "addptr")


def _affine(v: ir.Value, n: int, memo: dict) -> tuple[ir.Value | None, list[tuple[int, ir.Value]], int, int] | None:
    """``v`` (a 1-D tile of ``n`` elements) as ``base + sum(sign * scalar) + const + k * arange_index``:
    (base scalar pointer or None, signed uniform scalars, constant, k), or None when it is not of that form.
    Only splats, aranges of ``n`` elements, int32/int64 ``add``/``sub`` and ``addptr`` are followed. ``memo``:
    (value id, n) -> the answer, shared by the accesses of one emission (their pointers share operands)."""
    key = (v.id, n)
    form = memo.get(key, memo)  # (memo itself: not there yet)
    if form is memo:
        form = memo[key] = _affine_form(v, n, memo)
    return form


def _affine_form(v: ir.Value, n: int, memo: dict) -> tuple[ir.Value | None, list[tuple[int, ir.Value]], int, int] | None:
    op = v.op
    t = v.type
    if op is None or t.shape != (n,):
        return None
    if not t.is_ptr and t.element.name not in _AFFINE_INTS:
        return None
    name = op.name
    if name == "splat" and not op.operands[0].type.is_tile:
        s = op.operands[0]
        return (s, [], 0, 0) if s.type.is_ptr else (None, [(1, s)], 0, 0)
    if name == "arange" and op.attrs["end"] - op.attrs["start"] == n:
        return None, [], op.attrs["start"], 1
    if name in _AFFINE_OPS:
        a, b = _affine(op.operands[0], n, memo), _affine(op.operands[1], n, memo)
        if a is None or b is None or b[0] is not None or (a[0] is not None) != (name == "addptr"):
            return None
        if name == "sub":
            return a[0], a[1] + [(-s, u) for s, u in b[1]], a[2] - b[2], a[3] - b[3]
        return a[0], a[1] + b[1], a[2] + b[2], a[3] + b[3]
    return None


# why an access is no wider (MemoryMixin.vector_width), one per limit in the order they are tested
_WIDTH_LIMITS = ("16 bytes is the widest access", "each thread holds runs of {spt} element(s)",
                 "the pointers are contiguous in runs of {contig}",
                 "the pointers are only known to be {div}-byte aligned "
                 "(arguments aligned to 16 bytes and offsets divisible by 16 are specialized)")


class MemoryMixin:
    def tile_extent(self, ptr_v: ir.Value, vec: int, itemsize: int, ptr_exprs: list[str]) -> None:
        """Record for the access the next emitted line makes that all its pointers lie in ``[start, start + n)``, when
        the IR proves it (``_affine``: a scalar pointer plus uniform scalars plus ``arange(0, n)``): the checked
        cpu backend then tests that extent once per tile (and thread) instead of every element
        (``metadata["tile_checks"]``: [msl_line, start, n, alignment in bytes, pointer expressions]). The MSL
        is unchanged."""
        if not ptr_v.type.is_tile or len(ptr_v.type.shape) != 1:
            return
        n = ptr_v.type.shape[0]
        form = _affine(ptr_v, n, self.affine_forms)
        if form is None or form[0] is None or form[3] != 1:
            return
        base, terms, const, _ = form
        try:
            offset = " + ".join([f"{'-' if s < 0 else ''}long({self.ref(u, None)})" for s, u in terms]
                                + ([str(const)] if const or not terms else []))
            start = f"({self.ref(base, None)} + ({offset}))"
        except KeyError:  # a scalar without an MSL name here: every element is checked
            return
        self.pending_tile = [start, n, vec * itemsize, list(dict.fromkeys(ptr_exprs))]  # for emit_access

    def emit_access(self, line: str) -> None:
        """Emit the line of a tile access, with the extent ``tile_extent`` found for it (if any)."""
        self.emit(line)
        if self.pending_tile is not None:
            self.tile_checks.append((self.body[-1], self.pending_tile))
            self.pending_tile = None

    def vector_width(self, op: ir.Op, layout: TileLayout, itemsize: int) -> tuple[int, str]:
        """Elements per memory access, and why not more.

        The width follows the pointers (contiguity, alignment) and the layout (runs per thread). A mask (or
        ``other``) that is not constant over such a run does not narrow it: the access then checks the mask
        per run (``mask_checked_per_run``) -- a vector where it is true throughout, element by element where it
        is not (the ragged tail)."""
        p = layout.parent
        fast = p.order[0]
        ptr = op.operands[0]
        dims = [i for i, d in enumerate(layout.dims) if d == fast and ptr.type.shape[i] > 1]
        if not dims:
            return 1, "the tile does not vary along the layout's fastest dimension"
        i = dims[0]
        info = self.axis[ptr.id]
        spt = p.size_per_thread[fast]
        limits = (16 // itemsize, spt, info.contiguity[i], max(1, info.divisibility[i] // itemsize))
        vec = min(limits)
        why = _WIDTH_LIMITS[limits.index(vec)].format(spt=spt, contig=info.contiguity[i],
                                                      div=info.divisibility[i])  # the first limit reached
        vec = 1 << (max(vec, 1).bit_length() - 1)
        if vec * itemsize < 4 or ptr.type.element.element_ty.is_bool():
            return 1, "accesses narrower than 4 bytes are not vectorized" if vec > 1 else why
        if vec == 16 // itemsize:
            why = "full 16-byte vectors"
        k = self.mask_constancy(op, i)
        if vec > 1 and k < vec:
            why += (f"; the mask is constant only in runs of {k} (e.g. n is not known to be a multiple of 16): "
                    "each run checks it, a vector where it is true throughout, element by element where not")
        return vec, why

    def mask_constancy(self, op: ir.Op, i: int) -> int:
        """Length of the runs along dimension ``i`` over which the access's mask and ``other`` are constant."""
        k = 1 << 30
        mask = op.operands[2] if op.name == "store" and len(op.operands) > 2 else (
            op.operands[1] if op.name == "load" and len(op.operands) > 1 else None)
        if mask is not None:
            k = min(k, self.axis[mask.id].constancy[i])
        if op.name == "load" and len(op.operands) > 2:
            k = min(k, self.axis[op.operands[2].id].constancy[i])
        return k

    def mask_checked_per_run(self, op: ir.Op, layout: TileLayout, vec: int) -> bool:
        """Whether a ``vec``-wide access must check its mask per run (the mask varies inside a run)."""
        if vec == 1:
            return False
        fast = layout.parent.order[0]
        ptr = op.operands[0]
        i = next(i for i, d in enumerate(layout.dims) if d == fast and ptr.type.shape[i] > 1)
        return self.mask_constancy(op, i) < vec

    def emit_load(self, op: ir.Op, layout: TileLayout) -> None:
        r = op.result
        elem = r.type.element
        t = MSL_TYPE[elem.name]
        itemsize = elem.itemsize
        var = self.declare_tile(r, layout)
        vec, why = self.vector_width(op, layout, itemsize)
        self.accesses.append(Access("load", op.loc.lineno if op.loc else None, str(elem), r.type.shape, vec,
                                    vec * itemsize, why))
        ptr = self.ref(op.operands[0], layout, "e")
        masked = len(op.operands) == 3
        n = layout.parent.elems_per_thread
        self.tile_extent(op.operands[0], vec, itemsize, [ptr, self.ref(op.operands[0], layout, "(e + j)")])
        ptr_v = op.operands[0]
        if vec == 1:
            chk = self.in_bounds(op, ptr_v, ptr, itemsize, "read")
            if masked:
                m = self.ref(op.operands[1], layout)
                o = self.ref(op.operands[2], layout)
                self.emit_access(f"for (int e = 0; e < {n}; ++e) {var}[e] = {_all(m, chk)} ? *{ptr} : {o};")
            elif chk:  # an access the bounds checks refuse yields 0
                self.emit_access(f"for (int e = 0; e < {n}; ++e) {var}[e] = {chk} ? *{ptr} : {t}(0);")
            else:
                self.emit_access(f"for (int e = 0; e < {n}; ++e) {var}[e] = *{ptr};")
            return
        word = _WORD[vec * itemsize]
        lines = [f"const {word} w = *((device const {word}*){ptr});"]
        lines += _unpack(var, "w", t, itemsize, vec * itemsize)
        chk = self.in_bounds(op, ptr_v, ptr, vec * itemsize, "read")
        if masked and self.mask_checked_per_run(op, layout, vec):
            m, o = self.ref(op.operands[1], layout, "(e + j)"), self.ref(op.operands[2], layout, "(e + j)")
            p1 = self.ref(ptr_v, layout, "(e + j)")
            chk1 = self.in_bounds(op, ptr_v, p1, itemsize, "read")
            vector = f"if ({chk}) {{ {' '.join(lines)} }} else {{ for (int j = 0; j < {vec}; ++j) {var}[e + j] = {o}; }}" \
                if chk else " ".join(lines)
            body = (f"{{ bool enc_all = true; for (int j = 0; j < {vec}; ++j) enc_all = enc_all && {m}; "
                    f"if (enc_all) {{ {vector} }} else {{ for (int j = 0; j < {vec}; ++j) "
                    f"{var}[e + j] = {_all(m, chk1)} ? *{p1} : {o}; }} }}")
        elif masked:
            m = self.ref(op.operands[1], layout)
            o = self.ref(op.operands[2], layout, "e + j")
            body = (f"if ({_all(m, chk)}) {{ {' '.join(lines)} }} else {{ for (int j = 0; j < {vec}; ++j) "
                    f"{var}[e + j] = {o}; }}")
        elif chk:
            body = f"if ({chk}) {{ {' '.join(lines)} }} else {{ for (int j = 0; j < {vec}; ++j) {var}[e + j] = {t}(0); }}"
        else:
            body = "{ " + " ".join(lines) + " }"
        self.emit_access(f"for (int e = 0; e < {n}; e += {vec}) {body}")

    def emit_store(self, op: ir.Op) -> None:
        ptr_v, val_v = op.operands[0], op.operands[1]
        elem = ptr_v.type.element.element_ty
        if not ptr_v.type.is_tile:
            ptr, val = self.refs[(ptr_v.id, None)], self.refs[(val_v.id, None)]
            cond = "enc_tid == 0" + (f" && {self.refs[(op.operands[2].id, None)]}" if len(op.operands) > 2 else "")
            self.emit(f"if ({_all(cond, self.in_bounds(op, ptr_v, ptr, elem.itemsize, 'write'))}) *({ptr}) = {val};")
            self.accesses.append(Access("store", op.loc.lineno if op.loc else None, str(elem), (), 1, elem.itemsize,
                                        "scalar pointer: thread 0 stores"))
            return
        layout = store_layout(self.plan, op)
        t = MSL_TYPE[elem.name]
        itemsize = elem.itemsize
        vec, why = self.vector_width(op, layout, itemsize)
        self.accesses.append(Access("store", op.loc.lineno if op.loc else None, str(elem), ptr_v.type.shape, vec,
                                    vec * itemsize, why))
        ptr = self.ref(ptr_v, layout, "e")
        val = self.ref(val_v, layout, "{e}")
        conds = []
        if len(op.operands) > 2:
            conds.append(self.ref(op.operands[2], layout, "e"))
        own = self.owner(layout, "e", ptr_v.type.shape)
        if own:
            conds.append(own)
        chk = self.in_bounds(op, ptr_v, ptr, vec * itemsize, "write")
        guard = f"if ({' && '.join(conds + ([chk] if chk else []))}) " if conds or chk else ""
        n = layout.parent.elems_per_thread
        self.tile_extent(ptr_v, vec, itemsize, [ptr, self.ref(ptr_v, layout, "(e + j)")])
        if vec == 1:
            self.emit_access(f"for (int e = 0; e < {n}; ++e) {guard}*{ptr} = {val.replace('{e}', 'e')};")
            return
        word = _WORD[vec * itemsize]
        if len(op.operands) > 2 and self.mask_checked_per_run(op, layout, vec):
            m = self.ref(op.operands[2], layout, "(e + j)")
            own_j = self.owner(layout, "(e + j)", ptr_v.type.shape)
            p1 = self.ref(ptr_v, layout, "(e + j)")
            each = _all(f"{m} && {own_j}" if own_j else m, self.in_bounds(op, ptr_v, p1, itemsize, "write"))
            vector = f"*((device {word}*){ptr}) = {_pack(val, t, itemsize, vec * itemsize)};"
            if chk:
                vector = f"{{ if ({chk}) {vector} }}"
            self.emit_access(f"for (int e = 0; e < {n}; e += {vec}) {{ bool enc_all = {own or 'true'}; "
                      f"for (int j = 0; j < {vec}; ++j) enc_all = enc_all && {m}; if (enc_all) {vector} "
                      f"else for (int j = 0; j < {vec}; ++j) if ({each}) *{p1} = {val.replace('{e}', '(e + j)')}; }}")
            return
        self.emit_access(f"for (int e = 0; e < {n}; e += {vec}) {guard}*((device {word}*){ptr}) = "
                  f"{_pack(val, t, itemsize, vec * itemsize)};")


    def atomic_expr(self, op: ir.Op, ptr: str, val: str, cmp: str | None) -> str:
        """The MSL that performs one atomic op through ``ptr`` and yields the old value."""
        kind = op.attrs["kind"]
        elem = op.operands[0].type.element.element_ty  # (atomic_poll's result is a boolean)
        t = MSL_TYPE[elem.name]
        if kind == "poll":  # atomic_poll: spin until the element holds the expected value
            self.helpers.add("enc_atomic_poll")
            if elem.itemsize == 2:
                self.helpers.add("enc_atomic16")
                return f"enc_atomic_poll16({ptr}, {t}({val}))"
            if elem.itemsize == 8:
                return f"enc_atomic_poll64((device atomic_uint*)({ptr}), ulong({val}))"
            return f"enc_atomic_poll((device {'atomic_int' if elem.is_int_signed() else 'atomic_uint'}*)({ptr}), {t}({val}))"
        if elem.primitive_bitwidth <= 8:  # int8, uint8, bool: atomic_load / atomic_store on the containing word
            self.helpers.add("enc_atomic8")
            if kind == "load":
                byte = f"enc_atomic8_load({ptr})"
            else:  # atomic_store: an exchange whose old value is dropped
                byte = f"enc_atomic8_store({ptr}, {f'uchar(({val}) ? 1 : 0)' if elem.is_bool() else f'as_type<uchar>({t}({val}))'})"
            return f"({byte} != 0)" if elem.is_bool() else f"as_type<{t}>({byte})"
        if elem.itemsize == 2:  # fp16, bf16 (and int16 compare-and-swap): a loop on the containing 32-bit word
            self.helpers.add("enc_atomic16")
            if kind == "load":
                return f"enc_atomic16_load<{t}>({ptr})"
            code = {"add": 0, "max": 1, "min": 2, "xchg": 3, "cas": 4}[kind]
            return f"enc_atomic16<{code}>({ptr}, {t}({val}), {t}({cmp if cmp is not None else val}))"
        self.helpers.add("enc_atomic")
        at = {"int32": "atomic_int", "uint32": "atomic_uint", "fp32": "atomic_float"}[elem.name]
        relaxed = "memory_order_relaxed"
        if kind == "load":
            if elem.is_floating():
                return f"as_type<float>(atomic_load_explicit((device atomic_uint*)({ptr}), {relaxed}))"
            return f"atomic_load_explicit((device {at}*)({ptr}), {relaxed})"
        if elem.is_floating():
            bits = f"(device atomic_uint*)({ptr})"
            if kind == "add":
                return f"atomic_fetch_add_explicit((device atomic_float*)({ptr}), {val}, {relaxed})"
            if kind in ("max", "min"):
                return f"enc_atomic_fminmax({ptr}, {val}, {'true' if kind == 'max' else 'false'})"
            if kind == "xchg":
                return f"as_type<float>(atomic_exchange_explicit({bits}, as_type<uint>({val}), {relaxed}))"
            return f"as_type<float>(enc_atomic_cas_loop({bits}, as_type<uint>({cmp}), as_type<uint>({val})))"
        a = f"(device {at}*)({ptr})"
        if kind == "xchg":
            return f"atomic_exchange_explicit({a}, {val}, {relaxed})"
        if kind == "cas":
            return f"enc_atomic_cas_loop({a}, {t}({cmp}), {t}({val}))"
        return f"atomic_fetch_{kind}_explicit({a}, {val}, {relaxed})"

    def emit_atomic(self, op: ir.Op, layout: TileLayout | None) -> None:
        """Each element's atomic runs once (on its owner thread); every thread then sees the old values."""
        r = op.result
        t = MSL_TYPE[r.type.element.name]
        kind = op.attrs["kind"]
        operands = list(op.operands)
        ptr_v = operands.pop(0)
        cmp_v = operands.pop(0) if kind == "cas" else None
        val_v = operands.pop(0) if kind != "load" else None
        mask_v = operands.pop(0) if op.attrs["masked"] else None
        sem, scope = op.attrs.get("sem", "acq_rel"), op.attrs.get("scope", "gpu")
        self.accesses.append(Access("atomic", op.loc.lineno if op.loc else None, str(r.type.element),
                                    r.type.shape, 1, r.type.element.itemsize,
                                    f"atomic_{kind}, {sem} at {scope} scope" + (
                                        " (relaxed atomic between device-scope fences)" if sem != "relaxed" else "")))
        if r.type.element.itemsize == 8:  # uint64 max/min: Metal's only 64-bit atomics, without an old value
            self._check_u64_atomic(op)
            self.atomic_fence(sem, scope, "release")
            fn = f"atomic_{kind}_explicit"
            if layout is None:
                cond = "enc_tid == 0" + (f" && {self.ref(mask_v, None)}" if mask_v is not None else "")
                cond = _all(cond, self.in_bounds(op, ptr_v, self.ref(ptr_v, None), 8, "atomic"))
                self.emit(f"if ({cond}) {fn}((device atomic_ulong*)({self.ref(ptr_v, None)}), "
                          f"{self.ref(val_v, None)}, memory_order_relaxed);")
                self.barrier()
                self.emit(f"const ulong v{r.id} = 0;  // never read (refused above)")
                self.refs[(r.id, None)] = f"v{r.id}"
            else:
                conds = [self.ref(mask_v, layout)] if mask_v is not None else []
                own = self.owner(layout, "e", r.type.shape)
                conds += [own] if own else []
                chk = self.in_bounds(op, ptr_v, self.ref(ptr_v, layout), 8, "atomic")
                conds += [chk] if chk else []
                guard = f"if ({' && '.join(conds)}) " if conds else ""
                self.loop(layout, f"{guard}{fn}((device atomic_ulong*)({self.ref(ptr_v, layout)}), "
                                  f"{self.ref(val_v, layout)}, memory_order_relaxed);")
                var = self.declare_tile(r, layout)  # never read (refused above), but the layout plan may move it
                self.loop(layout, f"{var}[e] = 0;")
            self.atomic_fence(sem, scope, "acquire")
            return
        self.atomic_fence(sem, scope, "release")
        if layout is None:  # a scalar atomic: thread 0 performs it and shares the old value
            buf = self._atomic_share(r, 1)
            cond = "enc_tid == 0" + (f" && {self.ref(mask_v, None)}" if mask_v is not None else "")
            cond = _all(cond, self.in_bounds(op, ptr_v, self.ref(ptr_v, None), ptr_v.type.element.element_ty.itemsize,
                                             "atomic"))
            cmp = self.ref(cmp_v, None) if cmp_v is not None else None
            val = self.ref(val_v, None) if val_v is not None else ""
            self.emit(f"if ({cond}) {buf}[0] = {self.atomic_expr(op, self.ref(ptr_v, None), val, cmp)};")
            self.barrier()
            self.atomic_fence(sem, scope, "acquire")  # every thread, after thread 0's atomic (the barrier)
            self.emit(f"const {t} v{r.id} = {buf}[0];")
            self.refs[(r.id, None)] = f"v{r.id}"
            return
        var = self.declare_tile(r, layout)
        conds = []
        if mask_v is not None:
            conds.append(self.ref(mask_v, layout))
        own = self.owner(layout, "e", r.type.shape)
        if own:
            conds.append(own)
        chk = self.in_bounds(op, ptr_v, self.ref(ptr_v, layout), ptr_v.type.element.element_ty.itemsize, "atomic")
        if chk:
            conds.append(chk)
        cmp = self.ref(cmp_v, layout) if cmp_v is not None else None
        expr = self.atomic_expr(op, self.ref(ptr_v, layout), self.ref(val_v, layout) if val_v is not None else "", cmp)
        guard = " && ".join(conds)
        self.loop(layout, f"{var}[e] = {expr};" if not guard else f"{var}[e] = ({guard}) ? {expr} : {t}(0);")
        if own and r.id in self._used_values:
            # replicated elements: the owner's old value goes to the other threads through threadgroup memory
            buf = self._atomic_share(r, r.type.numel)
            idx = self.flat_index(layout, r.type.shape, "e")
            self.loop(layout, f"if ({own}) {buf}[{idx}] = {var}[e];")
            self.barrier()
            self.loop(layout, f"{var}[e] = {buf}[{idx}];")
        self.atomic_fence(sem, scope, "acquire")

    def _check_u64_atomic(self, op: ir.Op) -> None:
        """Metal's 64-bit atomic_max/min_explicit return nothing and exist on some GPU families only."""
        what = f"tl.atomic_{op.attrs['kind']} on uint64"
        if op.result.id in self._used_values:
            raise errors.CompilationError(
                f"{what} cannot return the old values on Apple GPUs: Metal's 64-bit atomic_{op.attrs['kind']}_explicit "
                "returns nothing", fix="call it as a statement (drop the result), or use a 32-bit buffer",
                **self.where())
        if not self.atomic_u64_minmax:
            raise errors.CompilationError(
                f"{what} needs 64-bit atomics, which this GPU lacks: Metal provides them on the Apple9 family "
                "(M3 and later) and on Apple8 GPUs of the Mac2 family (M2)", fix="use a uint32 buffer",
                **self.where())

    def atomic_fence(self, sem: str, scope: str, side: str) -> None:
        """Metal's atomics are relaxed only (MSL spec 4 §6.15.1): Triton's ``acquire``/``release``/``acq_rel``
        become device-scope fences (MSL 3.2, §6.15.3) around the relaxed atomic, executed by every thread:
        before it for the release side, after it for the acquire side. Kernels that fence at gpu scope declare
        the buffers they write ``coherent(device)`` (see generate() and docs/metal.md)."""
        if sem == "relaxed" or sem == {"release": "acquire", "acquire": "release"}[side]:
            return
        if scope in ("gpu", "sys"):  # 'sys': the widest fence Metal has (the metal backend refuses the launch)
            self.device_fences = True
        fence_scope = "thread_scope_device" if scope in ("gpu", "sys") else "thread_scope_threadgroup"
        self.emit(f"atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, {fence_scope});"
                  f"  // {side} fence of a {sem} atomic")

    def _atomic_share(self, r: ir.Value, count: int) -> str:
        self.smem_begin()
        return self.smem(MSL_TYPE[r.type.element.name], count, f"old values of atomic %{r.id}", r.type.element.itemsize)


def _all(cond: str, check: str | None) -> str:
    """``cond``, and then the bounds check when there is one (a lane the condition turns off is never checked)."""
    return f"({cond} && {check})" if check else cond


def _unpack(var: str, w: str, t: str, itemsize: int, nbytes: int) -> list[str]:
    words = nbytes // 4

    def comp(i: int) -> str:
        return w if words == 1 else f"{w}.{'xyzw'[i]}"

    out = []
    if itemsize == 4:
        for i in range(words):
            out.append(f"{var}[e + {i}] = as_type<{t}>({comp(i)});")
    elif itemsize == 8:
        for i in range(words // 2):
            out.append(f"{var}[e + {i}] = as_type<{t}>(uint2({comp(2 * i)}, {comp(2 * i + 1)}));")
    else:
        per = 4 // itemsize
        for i in range(words):
            out.append(f"{{ const {t}{per} h = as_type<{t}{per}>({comp(i)});")
            out.append(" ".join(f"{var}[e + {i * per + j}] = h.{'xyzw'[j]};" for j in range(per)) + " }")
    return out


def _pack(val: str, t: str, itemsize: int, nbytes: int) -> str:
    words = nbytes // 4
    parts = []
    if itemsize == 4:
        parts = [f"as_type<uint>({val.replace('{e}', f'e + {i}')})" for i in range(words)]
    elif itemsize == 8:
        for i in range(words // 2):
            parts.append(f"as_type<uint2>({val.replace('{e}', f'e + {i}')}).x")
            parts.append(f"as_type<uint2>({val.replace('{e}', f'e + {i}')}).y")
    else:
        per = 4 // itemsize
        for i in range(words):
            elems = ", ".join(f"{t}({val.replace('{e}', f'e + {i * per + j}')})" for j in range(per))
            parts.append(f"as_type<uint>({t}{per}({elems}))")
    return parts[0] if words == 1 else f"{_WORD[nbytes]}({', '.join(parts)})"
