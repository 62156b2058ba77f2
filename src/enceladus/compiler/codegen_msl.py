"""MSL code generation from laid-out tile IR.

Every tile value in layout L is an array of ``L.elems_per_thread`` registers per thread; element
``e`` of a thread sits at the coordinates the layout gives. Elementwise ops are loops over ``e``
(the Metal compiler unrolls them: the trip counts are constants). Scalars are plain uniform
variables. Broadcasts, ``expand_dims``, splats and ``arange`` cost nothing: they are expressions
over the same registers or the coordinates. Each op's MSL is one entry in the tables below.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..language.dtypes import dtype
from . import ir
from .msl_types import MSL_TYPE, const_literal, msl_type, safe_name
from .passes.axis_info import AxisInfo
from .passes.layouts import WARP_SIZE, BlockedLayout, TileLayout

# --- op tables ------------------------------------------------------------------------------------
BINARY_INFIX = {"add": "+", "sub": "-", "mul": "*", "fdiv": "/", "and": "&", "or": "|", "xor": "^",
                "shl": "<<", "shr": ">>", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
FLOAT_CALL = {"exp": "precise::exp({0})", "exp2": "precise::exp2({0})", "log": "precise::log({0})",
              "log2": "precise::log2({0})", "sqrt": "precise::sqrt({0})", "rsqrt": "precise::rsqrt({0})",
              "sin": "precise::sin({0})", "cos": "precise::cos({0})", "floor": "floor({0})", "ceil": "ceil({0})",
              "erf": "enc_erf({0})", "sigmoid": "(1.0f / (1.0f + precise::exp(-({0}))))"}
HELPERS = {
    "enc_div": """template <typename T> static inline T enc_sdiv(T a, T b) {
    // Division by zero is undefined in Triton; Enceladus defines it as 0 (never a trap). INT_MIN / -1 wraps.
    return b == T(0) ? T(0) : (b == T(-1) ? T(T(0) - a) : T(a / b));
}
template <typename T> static inline T enc_srem(T a, T b) {
    return (b == T(0) || b == T(-1)) ? T(0) : T(a % b);
}
template <typename T> static inline T enc_udiv(T a, T b) { return b == T(0) ? T(0) : T(a / b); }
template <typename T> static inline T enc_urem(T a, T b) { return b == T(0) ? T(0) : T(a % b); }""",
    "enc_erf": """static inline float enc_erf(float x) {
    // MSL has no erf. |x| <= 1: Maclaurin series to x^25; |x| > 1: 1 - erfc(|x|) from a rational
    // Chebyshev fit (relative error < 1.2e-7).
    float ax = fabs(x);
    if (ax <= 1.0f) {
        float x2 = x * x, term = x, sum = x;
        for (int n = 1; n <= 12; ++n) {
            term *= -x2 / float(n);
            sum += term / float(2 * n + 1);
        }
        return 1.1283791670955126f * sum;
    }
    float t = 1.0f / (1.0f + 0.5f * ax);
    float p = -ax * ax - 1.26551223f + t * (1.00002368f + t * (0.37409196f + t * (0.09678418f +
              t * (-0.18628806f + t * (0.27886807f + t * (-1.13520398f + t * (1.48851587f +
              t * (-0.82215223f + t * 0.17087277f))))))));
    float r = 1.0f - t * precise::exp(p);
    return x < 0.0f ? -r : r;
}""",
}


@dataclass
class Access:
    """What codegen decided for one load or store (shown by explain())."""

    kind: str
    line: int | None
    dtype: str
    shape: tuple[int, ...]
    vector: int  # elements per access
    bytes: int
    reason: str

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line else ""
        width = f"{self.vector} x {self.dtype} ({self.bytes} bytes)"
        return f"{where}{self.kind} {list(self.shape)} {width}: {self.reason}"


@dataclass
class Param:
    """One kernel parameter as the host binds it."""

    name: str
    kind: str  # 'buffer' or 'scalar'
    type: str  # signature type: '*fp32', 'i32', ...
    slot: int | None = None  # buffer slot
    offset: int | None = None  # byte offset in the scalar struct
    writes: bool = False  # the kernel stores through this pointer


@dataclass
class MSLModule:
    msl: str
    kernel_name: str
    params: list[Param]
    args_slot: int | None
    args_size: int
    args_format: list[tuple[str, int, str]]  # (param name, offset, signature type)
    threads_per_threadgroup: int
    accesses: list[Access] = field(default_factory=list)
    layouts: list[BlockedLayout] = field(default_factory=list)


_SCALAR_SIZE = {"int1": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint8": 1, "uint16": 2, "uint32": 4,
                "uint64": 8, "fp16": 2, "bf16": 2, "fp32": 4}


class MSLEmitter:
    def __init__(self, fn: ir.Function, num_warps: int, axis: dict[int, AxisInfo],
                 demands: dict[int, set[TileLayout]], header: str):
        self.fn = fn
        self.num_warps = num_warps
        self.axis = axis
        self.demands = demands
        self.header = header
        self.body: list[str] = []
        self.preamble: list[str] = []
        self.helpers: set[str] = set()
        self.refs: dict[tuple[int, TileLayout | None], str] = {}
        self.layout_ids: dict[BlockedLayout, int] = {}
        self.coord_emitted: set[tuple[int, int]] = set()
        self.accesses: list[Access] = []
        self.uses_pid = False
        self.uses_npid = False
        self.tmp = 0
        self.written_args: set[str] = set()

    # --- names ------------------------------------------------------------------------------------
    def fresh(self, prefix: str = "t") -> str:
        self.tmp += 1
        return f"{prefix}{self.tmp}"

    def layout_id(self, p: BlockedLayout) -> int:
        if p not in self.layout_ids:
            k = len(self.layout_ids)
            self.layout_ids[p] = k
            self.preamble.append(f"// L{k} = {p}: {p.elems_per_thread} elements per thread")
        return self.layout_ids[p]

    def coord(self, p: BlockedLayout, d: int, e: str) -> str:
        """The coordinate along parent dimension ``d`` of register ``e`` of this thread."""
        k = self.layout_id(p)
        if (k, d) not in self.coord_emitted:
            self.coord_emitted.add((k, d))
            lane_stride = 1
            warp_stride = 1
            for dd in p.order:
                if dd == d:
                    break
                lane_stride *= p.threads_per_warp[dd]
                warp_stride *= p.warps_per_cta[dd]
            spt, tpw, wpc = p.size_per_thread[d], p.threads_per_warp[d], p.warps_per_cta[d]
            lane = f"(int(enc_lane) / {lane_stride}) % {tpw}" if tpw > 1 else "0"
            warp = f"(int(enc_warp) / {warp_stride}) % {wpc}" if wpc > 1 else "0"
            self.preamble.append(f"const int L{k}_b{d} = ({warp}) * {spt * tpw} + ({lane}) * {spt};")
        # register index -> offset along d: radix decomposition, fastest dimension first
        stride = 1
        for dd in p.order:
            if dd == d:
                break
            stride *= p.per_thread[dd]
        spt, pt, cta = p.size_per_thread[d], p.per_thread[d], p.cta_tile[d]
        local = f"({e})" if stride == 1 else f"(({e}) / {stride})"
        if pt * stride != p.elems_per_thread:
            local = f"({local} % {pt})"
        off = f"({local} % {spt})" if spt > 1 and pt > spt else (local if spt > 1 else "0")
        if pt > spt:
            off += f" + ({local} / {spt}) * {cta}"
        c = f"(L{k}_b{d} + {off})" if off != "0" else f"L{k}_b{d}"
        if p.replicated[d]:
            c = f"({c} % {p.shape[d]})"
        return c

    def owner(self, p: BlockedLayout, e: str) -> str | None:
        """Condition true on one thread per element of a replicated layout (stores must not repeat)."""
        conds = []
        for d, rep in enumerate(p.replicated):
            if rep:
                k = self.layout_id(p)
                self.coord(p, d, e)
                conds.append(f"L{k}_b{d} < {p.shape[d]}")
        return " && ".join(conds) if conds else None

    # --- values -------------------------------------------------------------------------------------
    def ref(self, v: ir.Value, layout: TileLayout | None, e: str = "e") -> str:
        """An expression for element ``e`` of ``v`` in ``layout`` (or the scalar ``v``)."""
        if not v.type.is_tile:
            return self.refs[(v.id, None)]
        key = (v.id, layout)
        if key not in self.refs:
            self.materialize(v, layout)
        r = self.refs[key]
        return r.replace("{e}", e)

    def materialize(self, v: ir.Value, layout: TileLayout) -> None:
        """Emit a pure tile value in ``layout`` where it is first needed (rematerialization)."""
        op = v.op
        assert op is not None
        self.emit_tile_op(op, layout)

    def emit(self, line: str) -> None:
        self.body.append(line)

    def value_type(self, v: ir.Value) -> str:
        return msl_type(v.type.element)

    def declare_tile(self, v: ir.Value, layout: TileLayout) -> str:
        name = f"v{v.id}" if len(self.demands.get(v.id, ())) <= 1 else f"v{v.id}_{self.layout_id(layout.parent)}"
        self.emit(f"{self.value_type(v)} {name}[{layout.parent.elems_per_thread}];")
        self.refs[(v.id, layout)] = name + "[{e}]"
        return name

    def loop(self, layout: TileLayout, statement: str) -> None:
        n = layout.parent.elems_per_thread
        self.emit(f"for (int e = 0; e < {n}; ++e) {statement}")

    # --- ops --------------------------------------------------------------------------------------
    def emit_function(self) -> None:
        for op in self.fn.ops:
            r = op.result
            if op.name == "store":
                self.emit_store(op)
            elif r is None:
                continue
            elif not r.type.is_tile:
                self.emit_scalar_op(op)
            elif op.name == "load":
                for layout in self.demands.get(r.id, ()):
                    self.emit_tile_op(op, layout)
            # pure tile values are emitted where first used

    def scalar_expr(self, op: ir.Op, args: list[str]) -> str:
        name = op.name
        r = op.result
        if name == "const":
            return const_literal(op.attrs["value"], r.type.element)
        if name == "program_id":
            self.uses_pid = True
            return f"int(enc_pid.{'xyz'[op.attrs['axis']]})"
        if name == "num_programs":
            self.uses_npid = True
            return f"int(enc_npid.{'xyz'[op.attrs['axis']]})"
        return self.elementwise_expr(op, args)

    def elementwise_expr(self, op: ir.Op, a: list[str]) -> str:
        """The MSL expression of an elementwise op given its operands' expressions."""
        name = op.name
        r = op.result
        rt = r.type.element
        src = op.operands[0].type.element if op.operands else None
        t = MSL_TYPE.get(rt.name) if not rt.is_ptr() else None
        if src is not None and not src.is_ptr() and src.is_bf16() and name not in ("cast", "bitcast", "select"):
            # bfloat converts only to/from float in MSL: compute in float, round once
            fa = [f"float({x})" for x in a]
            inner = self._arith(name, fa, float_type=True, signed=True)
            return inner if rt.is_bool() else f"static_cast<bfloat>({inner})"
        if name == "addptr":
            return f"({a[0]} + {a[1]})"
        if name == "select":
            return f"({a[0]} ? {a[1]} : {a[2]})"
        if name == "cast":
            return self._cast(src, rt, a[0])
        if name == "bitcast":
            return f"as_type<{t}>({a[0]})"
        if name in ("splat", "broadcast", "expand_dims", "multiple_of", "max_contiguous"):
            return a[0]
        return self._arith(name, a, float_type=src.is_floating(), signed=src.is_int_signed(), src=src)

    def _arith(self, name: str, a: list[str], float_type: bool, signed: bool, src: Any = None) -> str:
        if name in BINARY_INFIX:
            return f"({a[0]} {BINARY_INFIX[name]} {a[1]})"
        if name in ("idiv", "mod"):
            self.helpers.add("enc_div")
            fn = ("enc_sdiv" if signed else "enc_udiv") if name == "idiv" else ("enc_srem" if signed else "enc_urem")
            return f"{fn}({a[0]}, {a[1]})"
        if name == "fmod":
            return f"fmod({a[0]}, {a[1]})"
        if name in ("max", "min"):
            return f"{'f' if float_type else ''}{name}({a[0]}, {a[1]})"
        if name == "umulhi":
            return f"mulhi({a[0]}, {a[1]})"
        if name == "neg":
            return f"(-{a[0]})"
        if name == "not":
            return f"(!{a[0]})" if src is not None and src.is_bool() else f"(~{a[0]})"
        if name == "abs":
            return f"fabs({a[0]})" if float_type else f"abs({a[0]})"
        if name == "fma":
            return f"fma({a[0]}, {a[1]}, {a[2]})"
        if name in FLOAT_CALL:
            if name == "erf":
                self.helpers.add("enc_erf")
            return FLOAT_CALL[name].format(a[0])
        raise NotImplementedError(f"no MSL rule for op '{name}'")

    def _cast(self, src: dtype, dst: dtype, x: str) -> str:
        t = MSL_TYPE[dst.name]
        if dst.is_bool():
            return f"({'float(' + x + ')' if src.is_bf16() else x} != 0)"
        if src.is_bf16() or (dst.is_bf16() and not src.is_fp32()):
            return f"static_cast<{t}>(static_cast<float>({x}))"
        return f"static_cast<{t}>({x})"

    def emit_scalar_op(self, op: ir.Op) -> None:
        r = op.result
        if op.name == "load":
            ptr = self.refs[(op.operands[0].id, None)]
            if len(op.operands) == 3:
                m, o = (self.refs[(x.id, None)] for x in op.operands[1:])
                expr = f"({m} ? *({ptr}) : {o})"
            else:
                expr = f"*({ptr})"
            self.accesses.append(Access("load", op.loc.lineno if op.loc else None, str(r.type.element), (), 1,
                                        r.type.element.itemsize, "scalar pointer: one load shared by all threads"))
        else:
            args = [self.refs[(o.id, None)] for o in op.operands]
            expr = self.scalar_expr(op, args)
        name = f"v{r.id}"
        # pointers keep the constness of the argument they derive from
        ctype = "auto" if r.type.is_ptr else msl_type(r.type.element)
        self.emit(f"const {ctype} {name} = {expr};")
        self.refs[(r.id, None)] = name

    def emit_tile_op(self, op: ir.Op, layout: TileLayout) -> None:
        r = op.result
        key = (r.id, layout)
        if key in self.refs:
            return
        name = op.name
        if name == "splat":
            self.refs[key] = self.ref(op.operands[0], None)
            return
        if name in ("broadcast", "multiple_of", "max_contiguous"):
            self.refs[key] = self.ref(op.operands[0], layout, "{e}")
            return
        if name == "expand_dims":
            axis = op.attrs["axis"]
            sub = TileLayout(layout.parent, layout.dims[:axis] + layout.dims[axis + 1:])
            self.refs[key] = self.ref(op.operands[0], sub, "{e}")
            return
        if name == "arange":
            start = op.attrs["start"]
            c = self.coord(layout.parent, layout.dims[0], "{e}") if r.type.shape[0] > 1 else "0"
            self.refs[key] = f"({start} + {c})" if start else c
            return
        if name == "addptr":
            self.refs[key] = f"({self.ref(op.operands[0], layout, '{e}')} + {self.ref(op.operands[1], layout, '{e}')})"
            return
        if name == "load":
            self.emit_load(op, layout)
            return
        operands = [self.ref(o, layout) for o in op.operands]
        expr = self.elementwise_expr(op, operands)
        var = self.declare_tile(r, layout)
        self.loop(layout, f"{var}[e] = {expr};")

    # --- memory -------------------------------------------------------------------------------------
    def vector_width(self, op: ir.Op, layout: TileLayout, itemsize: int) -> tuple[int, str]:
        """Elements per memory access, and why not more."""
        p = layout.parent
        fast = p.order[0]
        ptr = op.operands[0]
        dims = [i for i, d in enumerate(layout.dims) if d == fast and ptr.type.shape[i] > 1]
        if not dims:
            return 1, "the tile does not vary along the layout's fastest dimension"
        i = dims[0]
        info = self.axis[ptr.id]
        spt = p.size_per_thread[fast]
        limits = [(16 // itemsize, "16 bytes is the widest access"),
                  (spt, f"each thread holds runs of {spt} element(s)"),
                  (info.contiguity[i], f"the pointers are contiguous in runs of {info.contiguity[i]}"),
                  (max(1, info.divisibility[i] // itemsize),
                   f"the pointers are only known to be {info.divisibility[i]}-byte aligned "
                   "(arguments aligned to 16 bytes and offsets divisible by 16 are specialized)")]
        mask = op.operands[2] if op.name == "store" and len(op.operands) > 2 else (
            op.operands[1] if op.name == "load" and len(op.operands) > 1 else None)
        if mask is not None:
            k = self.axis[mask.id].constancy[i]
            limits.append((k, f"the mask is constant only in runs of {k} (e.g. n is not known to be a multiple "
                              "of 16)"))
        if op.name == "load" and len(op.operands) > 2:
            k = self.axis[op.operands[2].id].constancy[i]
            limits.append((k, f"`other` is constant only in runs of {k}"))
        vec, why = min(limits, key=lambda x: x[0])
        vec = 1 << (max(vec, 1).bit_length() - 1)
        if vec * itemsize < 4 or ptr.type.element.element_ty.is_bool():
            return 1, "accesses narrower than 4 bytes are not vectorized" if vec > 1 else why
        if vec == 16 // itemsize:
            why = "full 16-byte vectors"
        return vec, why

    def _word_type(self, nbytes: int) -> str:
        return {4: "uint", 8: "uint2", 16: "uint4"}[nbytes]

    def emit_load(self, op: ir.Op, layout: TileLayout) -> None:
        r = op.result
        elem = r.type.element
        t = MSL_TYPE[elem.name]
        itemsize = elem.itemsize
        var = self.declare_tile(r, layout)
        vec, why = self.vector_width(op, layout, itemsize)
        self.accesses.append(Access("load", op.loc.lineno if op.loc else None, str(elem), r.type.shape, vec,
                                    vec * itemsize, why))
        ptr = self.ref(op.operands[0], layout, "{e}")
        masked = len(op.operands) == 3
        n = layout.parent.elems_per_thread
        if vec == 1:
            if masked:
                m = self.ref(op.operands[1], layout)
                o = self.ref(op.operands[2], layout)
                self.loop(layout, f"{var}[e] = {m} ? *{ptr.replace('{e}', 'e')} : {o};")
            else:
                self.loop(layout, f"{var}[e] = *{ptr.replace('{e}', 'e')};")
            return
        nbytes = vec * itemsize
        word = self._word_type(nbytes)
        lines = [f"const {word} w = *((device const {word}*){ptr.replace('{e}', 'e')});"]
        lines += self._unpack(var, "w", t, itemsize, nbytes)
        if masked:
            m = self.ref(op.operands[1], layout)
            o = self.ref(op.operands[2], layout, "e + j")
            body = (f"if ({m}) {{ {' '.join(lines)} }} else {{ for (int j = 0; j < {vec}; ++j) {var}[e + j] = {o}; }}")
        else:
            body = "{ " + " ".join(lines) + " }"
        self.emit(f"for (int e = 0; e < {n}; e += {vec}) {body}")

    def _unpack(self, var: str, w: str, t: str, itemsize: int, nbytes: int) -> list[str]:
        words = nbytes // 4
        comp = (lambda i: w) if words == 1 else (lambda i: f"{w}.{'xyzw'[i]}")
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

    def _pack(self, val: str, t: str, itemsize: int, nbytes: int) -> str:
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
        word = self._word_type(nbytes)
        return parts[0] if words == 1 else f"{word}({', '.join(parts)})"

    def emit_store(self, op: ir.Op) -> None:
        ptr_v, val_v = op.operands[0], op.operands[1]
        elem = ptr_v.type.element.element_ty
        root = _root_arg(ptr_v)
        if root is not None:
            self.written_args.add(root)
        if not ptr_v.type.is_tile:
            ptr, val = self.refs[(ptr_v.id, None)], self.refs[(val_v.id, None)]
            cond = "enc_tid == 0" + (f" && {self.refs[(op.operands[2].id, None)]}" if len(op.operands) > 2 else "")
            self.emit(f"if ({cond}) *({ptr}) = {val};")
            self.accesses.append(Access("store", op.loc.lineno if op.loc else None, str(elem), (), 1, elem.itemsize,
                                        "scalar pointer: thread 0 stores"))
            return
        layout = next(iter(self.demands[val_v.id] & self.demands[ptr_v.id])) if val_v.type.is_tile else None
        layout = layout or ptr_v.layout
        t = MSL_TYPE[elem.name]
        itemsize = elem.itemsize
        vec, why = self.vector_width(op, layout, itemsize)
        self.accesses.append(Access("store", op.loc.lineno if op.loc else None, str(elem), ptr_v.type.shape, vec,
                                    vec * itemsize, why))
        ptr = self.ref(ptr_v, layout, "{e}")
        val = self.ref(val_v, layout, "{e}")
        conds = []
        if len(op.operands) > 2:
            conds.append(self.ref(op.operands[2], layout, "e"))
        own = self.owner(layout.parent, "e")
        if own:
            conds.append(own)
        guard = f"if ({' && '.join(conds)}) " if conds else ""
        n = layout.parent.elems_per_thread
        if vec == 1:
            self.emit(f"for (int e = 0; e < {n}; ++e) {guard}*{ptr.replace('{e}', 'e')} = {val.replace('{e}', 'e')};")
            return
        nbytes = vec * itemsize
        word = self._word_type(nbytes)
        self.emit(f"for (int e = 0; e < {n}; e += {vec}) {guard}*((device {word}*){ptr.replace('{e}', 'e')}) = "
                  f"{self._pack(val, t, itemsize, nbytes)};")

    # --- the kernel ---------------------------------------------------------------------------------
    def generate(self, arg_types: dict[str, str]) -> MSLModule:
        fn = self.fn
        params: list[Param] = []
        struct_fields: list[tuple[str, str, int, str]] = []
        slot = 0
        sig_lines = []
        for a in fn.args:
            cname = safe_name(a.name)
            if a.type.is_ptr:
                params.append(Param(a.name, "buffer", str(a.type.element), slot=slot))
                self.refs[(a.id, None)] = cname
                slot += 1
            else:
                struct_fields.append((a.name, cname, _SCALAR_SIZE[a.type.element.name], a.type.element.name))
                params.append(Param(a.name, "scalar", str(a.type.element)))
                self.refs[(a.id, None)] = cname
        self.emit_function()
        for p in params:
            p.writes = p.name in self.written_args
        # scalar struct with natural C alignment, in argument order
        offset = 0
        fields = []
        args_format = []
        for pname, cname, size, tname in struct_fields:
            offset = (offset + size - 1) // size * size
            for p in params:
                if p.name == pname:
                    p.offset = offset
            ctype = "uchar" if tname == "int1" else MSL_TYPE[tname]
            fields.append(f"    {ctype} {cname};")
            args_format.append((pname, offset, tname))
            offset += size
        max_align = max((f[2] for f in struct_fields), default=1)
        args_size = (offset + max_align - 1) // max_align * max_align
        kname = safe_name(fn.name)
        for p in params:
            if p.kind == "buffer":
                const = "" if p.name in self.written_args else "const "
                sig_lines.append(f"    device {const}{MSL_TYPE[p.type[1:]]}* {safe_name(p.name)} [[buffer({p.slot})]]")
        args_slot = None
        unpack = []
        if struct_fields:
            args_slot = slot
            sig_lines.append(f"    constant {kname}_args& enc_args [[buffer({slot})]]")
            for a in fn.args:
                if not a.type.is_ptr:
                    cname = safe_name(a.name)
                    if a.type.element.is_bool():
                        unpack.append(f"    const bool {cname} = enc_args.{cname} != 0;")
                    else:
                        unpack.append(f"    const {MSL_TYPE[a.type.element.name]} {cname} = enc_args.{cname};")
        if self.uses_pid:
            sig_lines.append("    uint3 enc_pid [[threadgroup_position_in_grid]]")
        if self.uses_npid:
            sig_lines.append("    uint3 enc_npid [[threadgroups_per_grid]]")
        sig_lines.append("    uint enc_tid [[thread_index_in_threadgroup]]")
        out = [self.header, "#include <metal_stdlib>", "using namespace metal;", ""]
        for h in sorted(self.helpers):
            out += [HELPERS[h], ""]
        if struct_fields:
            out += [f"struct {kname}_args {{", *fields, "};", ""]
        out.append(f"kernel void {kname}(")
        out.append(",\n".join(sig_lines) + ")")
        out.append("{")
        out += unpack
        if self.layout_ids or any("enc_lane" in s for s in self.preamble):
            out.append(f"    const uint enc_lane = enc_tid % {WARP_SIZE}u;")
            out.append(f"    const uint enc_warp = enc_tid / {WARP_SIZE}u;")
            out.append("    (void)enc_lane; (void)enc_warp;")
        out += ["    " + line for line in self.preamble]
        out += ["    " + line for line in self.body]
        out.append("}")
        msl = "\n".join(out) + "\n"
        return MSLModule(msl, kname, params, args_slot, args_size, args_format, WARP_SIZE * self.num_warps,
                         self.accesses, list(self.layout_ids))


def _root_arg(v: ir.Value) -> str | None:
    """The pointer argument a pointer value is derived from."""
    while v.op is not None:
        if v.op.name in ("addptr", "splat", "broadcast", "expand_dims", "multiple_of", "max_contiguous"):
            v = v.op.operands[0]
        else:
            return None
    return v.name
