"""``tl.device_print`` and ``tl.device_assert``: records appended to a log buffer the host reads after the launch.

The log is a hidden ``device uint*`` argument: word 0 is the next free word (advanced atomically), word 1
the capacity; each record is ``[site | kind << 24, pid.x, pid.y, pid.z, element, value words...]`` with two
words per value. The same MSL works on every backend (Metal has no printf in compute kernels).
"""

from __future__ import annotations

from .. import ir
from ..layout import TileLayout

KIND_PRINT = 1
KIND_ASSERT = 2
KIND_BOUNDS = 3  # an access the MSL's bounds checks refused (msl_bounds_checks)

EXT_PARAM = "__enc_extents"  # the hidden [base, end) byte range of each pointer argument (msl_bounds_checks)

BOUNDS_HELPER = """// msl_bounds_checks: is [p, p + n) inside pointer argument a's bytes [ext[2a], ext[2a + 1])? If not, a
// device-log record [site | 3 << 24, pid.x, pid.y, pid.z, thread, byte offset from the argument's base (2 words)]
template <typename P>
static inline bool enc_inb(P p, ulong n, uint a, uint site, device const ulong* ext, device uint* log, uint3 pid,
                           uint tid) {
    const ulong at = (ulong)(p);
    if (at >= ext[2 * a] && at + n <= ext[2 * a + 1] && at + n >= at) return true;
    const uint w = atomic_fetch_add_explicit((device atomic_uint*)log, 7u, memory_order_relaxed);
    if (w + 7u <= log[1]) {
        const ulong off = at - ext[2 * a];
        log[w] = site | (3u << 24); log[w + 1] = pid.x; log[w + 2] = pid.y; log[w + 3] = pid.z;
        log[w + 4] = tid; log[w + 5] = uint(off); log[w + 6] = uint(off >> 32);
    }
    return false;
}"""

BITS_HELPER = """// 64 bits of any scalar, for the device log
static inline uint2 enc_bits(float v) { return uint2(as_type<uint>(v), 0u); }
static inline uint2 enc_bits(half v) { return uint2(uint(as_type<ushort>(v)), 0u); }
static inline uint2 enc_bits(bfloat v) { return uint2(uint(as_type<ushort>(v)), 0u); }
static inline uint2 enc_bits(int v) { return uint2(as_type<uint>(v), 0u); }
static inline uint2 enc_bits(uint v) { return uint2(v, 0u); }
static inline uint2 enc_bits(short v) { return uint2(as_type<uint>(int(v)), 0u); }
static inline uint2 enc_bits(ushort v) { return uint2(uint(v), 0u); }
static inline uint2 enc_bits(char v) { return uint2(as_type<uint>(int(v)), 0u); }
static inline uint2 enc_bits(uchar v) { return uint2(uint(v), 0u); }
static inline uint2 enc_bits(bool v) { return uint2(v ? 1u : 0u, 0u); }
static inline uint2 enc_bits(long v) { return as_type<uint2>(v); }
static inline uint2 enc_bits(ulong v) { return as_type<uint2>(v); }"""


class DebugMixin:
    def log_site(self, kind: int, op: ir.Op, **info: object) -> int:
        site = len(self.log_sites)
        self.log_sites.append({"kind": kind, "line": op.loc.lineno if op.loc else None,
                               "file": op.loc.filename if op.loc else None, **info})
        self.uses_pid = True
        self.helper_code_once("enc_bits", BITS_HELPER)
        return site

    def in_bounds(self, op: ir.Op, ptr_v: ir.Value, ptr: str, nbytes: int, access: str) -> str | None:
        """With ``msl_bounds_checks``: the MSL condition that the ``nbytes`` at ``ptr`` (an access through
        ``ptr_v``) lie inside the pointer argument ``ptr_v`` comes from, which logs a record when they do not
        (callers put it after the mask, so masked-off lanes are never checked). None when the checks are off
        or the pointer's argument is not known (a pointer made from an integer: not checked)."""
        if not self.bounds_checks:
            return None
        root = self.roots.get(ptr_v.id)
        ptr_args = [a.name for a in self.fn.args if a.type.is_ptr]
        if root not in ptr_args:
            return None
        elem = ptr_v.type.element.element_ty
        site = self.log_site(KIND_BOUNDS, op, arg=root, access=access, nbytes=nbytes, itemsize=elem.itemsize,
                             dtypes=["int64"])
        self.uses_extents = True
        self.helper_code_once("enc_inb", BOUNDS_HELPER)
        return f"enc_inb({ptr}, {nbytes}ul, {ptr_args.index(root)}u, {site}u, enc_ext, enc_log, enc_pid, enc_tid)"

    def helper_code_once(self, key: str, code: str) -> None:
        if key not in self.helpers_emitted:
            self.helpers_emitted.add(key)
            self.helper_code.append(code)

    def emit_log_record(self, site: int, kind: int, element: str, values: list[str], cond: str | None) -> None:
        n = 5 + 2 * len(values)
        body = [f"const uint at = atomic_fetch_add_explicit((device atomic_uint*)enc_log, {n}u, memory_order_relaxed);",
                f"if (at + {n}u <= enc_log[1]) {{",
                f"    enc_log[at] = {site}u | ({kind}u << 24); enc_log[at + 1] = enc_pid.x; "
                "enc_log[at + 2] = enc_pid.y; enc_log[at + 3] = enc_pid.z;",
                f"    enc_log[at + 4] = uint({element});"]
        for i, v in enumerate(values):
            body.append(f"    {{ const uint2 b = enc_bits({v}); enc_log[at + {5 + 2 * i}] = b.x; "
                        f"enc_log[at + {6 + 2 * i}] = b.y; }}")
        body.append("}")
        guard = f"if ({cond}) " if cond else ""
        self.emit(guard + "{")
        for line in body:
            self.emit("    " + line)
        self.emit("}")

    def emit_print(self, op: ir.Op) -> None:
        values = op.operands
        shape = values[0].type.shape if values else ()
        site = self.log_site(1, op, prefix=op.attrs["prefix"], hex=op.attrs["hex"],
                             dtypes=[str(v.type.element) for v in values], shape=list(shape))
        if not shape:  # scalars: once per program
            self.emit_log_record(site, KIND_PRINT, "0", [self.ref(v, None) for v in values], "enc_tid == 0")
            return
        layout: TileLayout = self.plan.needs[values[0].id][0]
        own = self.owner(layout, "e", shape)
        self.emit(f"for (int e = 0; e < {layout.parent.elems_per_thread}; ++e) {{")
        self.indent += 1
        self.emit_log_record(site, KIND_PRINT, self.flat_index(layout, shape, "e"),
                             [self.ref(v, layout) for v in values], own)
        self.indent -= 1
        self.emit("}")

    def emit_assert(self, op: ir.Op) -> None:
        cond = op.operands[0]
        mask = op.operands[1] if len(op.operands) > 1 else None
        shape = cond.type.shape
        site = self.log_site(2, op, msg=op.attrs["msg"], shape=list(shape))
        if not shape:
            fail = f"!{self.ref(cond, None)}" + (f" && {self.ref(mask, None)}" if mask is not None else "")
            self.emit_log_record(site, KIND_ASSERT, "0", [], f"enc_tid == 0 && {fail}")
            return
        layout: TileLayout = self.plan.needs[cond.id][0]
        conds = [f"!{self.ref(cond, layout)}"]
        if mask is not None:
            conds.append(self.ref(mask, layout))
        own = self.owner(layout, "e", shape)
        if own:
            conds.append(own)
        self.emit(f"for (int e = 0; e < {layout.parent.elems_per_thread}; ++e) {{")
        self.indent += 1
        self.emit_log_record(site, KIND_ASSERT, self.flat_index(layout, shape, "e"), [], " && ".join(conds))
        self.indent -= 1
        self.emit("}")
