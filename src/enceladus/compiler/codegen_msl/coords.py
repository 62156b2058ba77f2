"""Where a register lives: the MSL expressions for a layout's coordinates (lane, SIMD group, register digit, the
element a register holds, its owner thread, its flat index) and the simdgroup_matrix fragment lane map. A mixin
of ``MSLEmitter``: pure text over layouts, plus the per-emission memo of the coordinate lines already written."""

from __future__ import annotations

from ..layout import BlockedLayout, MmaLayout, TileLayout


class CoordsMixin:
    """Coordinate expressions of the emitter (see the module docstring)."""

    # --- layouts and coordinates -------------------------------------------------------------------------
    def layout_id(self, p: BlockedLayout) -> int:
        if p not in self.layout_ids:
            k = len(self.layout_ids)
            self.layout_ids[p] = k
            self.preamble.append(f"// L{k} = {p}: {p.elems_per_thread} elements per thread")
        return self.layout_ids[p]

    # --- simdgroup_matrix fragments (MmaLayout) -------------------------------------------------------------------
    def fragment_lane(self) -> tuple[str, str]:
        """This lane's row and first column inside every 8x8 fragment (see MmaLayout)."""
        if not getattr(self, "_frag_lane", False):
            self._frag_lane = True
            self.preamble.append("const int enc_fr = 4 * ((int(enc_lane) >> 4) & 1) + 2 * ((int(enc_lane) >> 2) & 1) + "
                                 "((int(enc_lane) >> 1) & 1);  // fragment row of this lane")
            self.preamble.append("const int enc_fc = 4 * ((int(enc_lane) >> 3) & 1) + 2 * (int(enc_lane) & 1);"
                                 "  // first fragment column of this lane")
        return "enc_fr", "enc_fc"

    def lane_masks(self, p: BlockedLayout | MmaLayout, d: int, lanes: int) -> list[int]:
        """XOR masks that reach every lane holding another part of dimension ``d`` (low coordinates first)."""
        if isinstance(p, MmaLayout):
            return [1, 8] if d == 1 else [2, 4, 16]
        ls = p.lane_stride(d)
        return [ls << i for i in range(lanes.bit_length() - 1)]

    def lane_is_first(self, p: BlockedLayout | MmaLayout, d: int) -> str:
        if isinstance(p, MmaLayout):
            return "(int(enc_lane) & 9) == 0" if d == 1 else "(int(enc_lane) & 22) == 0"
        return f"{self.lane_coord(p, d)} == 0"

    def lane_coord(self, p: BlockedLayout, d: int) -> str:
        tpw = p.threads_per_warp[d]
        return f"((int(enc_lane) / {p.lane_stride(d)}) % {tpw})" if tpw > 1 else "0"

    def warp_coord(self, p: BlockedLayout | MmaLayout, d: int) -> str:
        if isinstance(p, MmaLayout):
            wm, wn = p.warps
            return (f"(int(enc_warp) / {wn})" if wm > 1 else "0") if d == 0 else \
                (f"(int(enc_warp) % {wn})" if wn > 1 else "0")
        wpc = p.warps_per_cta[d]
        return f"((int(enc_warp) / {p.warp_stride(d)}) % {wpc})" if wpc > 1 else "0"

    def base(self, p: BlockedLayout, d: int) -> str:
        """This thread's first coordinate along parent dimension ``d`` (before wrapping)."""
        k = self.layout_id(p)
        if (k, d) not in self.coord_emitted:
            self.coord_emitted.add((k, d))
            spt, tpw = p.size_per_thread[d], p.threads_per_warp[d]
            self.preamble.append(f"const int L{k}_b{d} = {self.warp_coord(p, d)} * {spt * tpw} + "
                                 f"{self.lane_coord(p, d)} * {spt};")
        return f"L{k}_b{d}"

    def digit(self, p: BlockedLayout, d: int, e: str) -> str:
        """Register ``e``'s index among this thread's registers along ``d``."""
        stride = p.slot_stride(d)
        pt = p.per_thread[d]
        if pt == 1:
            return "0"
        local = f"({e})" if stride == 1 else f"(({e}) / {stride})"
        if pt * stride != p.elems_per_thread:
            local = f"({local} % {pt})"
        return local

    def raw_coord(self, p: BlockedLayout | MmaLayout, d: int, e: str) -> str:
        """The coordinate along ``d`` of register ``e`` before wrapping (>= shape on replicas). Made once per
        emission for each (layout, d, e) (the preamble lines it needs are written the first time)."""
        key = (p, d, e)
        c = self.raw_coords.get(key)
        if c is None:
            c = self.raw_coords[key] = self.make_raw_coord(p, d, e)
        return c

    def make_raw_coord(self, p: BlockedLayout | MmaLayout, d: int, e: str) -> str:
        if isinstance(p, MmaLayout):
            fr, fc = self.fragment_lane()
            fm, fn = p.frags
            block = p.shape[d] // p.warps[d]
            w = self.warp_coord(p, d)
            start = f"{w} * {block} + " if w != "0" else ""
            if d == 0:
                frag = f"(({e}) / {2 * fn}) * 8 + " if fm > 1 else ""
                return f"({start}{frag}{fr})"
            local = f"(({e}) % {2 * fn})" if fm > 1 else f"({e})"
            frag = f"({local} / 2) * 8 + " if fn > 1 else ""
            return f"({start}{frag}{fc} + {local} % 2)"
        b = self.base(p, d)
        spt, pt, cta = p.size_per_thread[d], p.per_thread[d], p.cta_tile[d]
        if pt == 1:
            return b
        local = self.digit(p, d, e)
        off = f"({local} % {spt})" if pt > spt else local
        if spt == 1:
            off = ""
        if pt > spt:
            off = (off + " + " if off else "") + f"({local} / {spt}) * {cta}"
        return f"({b} + {off})" if off else b

    def coord(self, p: BlockedLayout, d: int, e: str) -> str:
        c = self.raw_coord(p, d, e)
        return f"({c} % {p.shape[d]})" if p.replicated[d] else c

    def value_coord(self, layout: TileLayout, shape: tuple[int, ...], i: int, e: str) -> str:
        if shape[i] == 1:
            return "0"
        return self.coord(layout.parent, layout.dims[i], e)

    def owner(self, layout: TileLayout, e: str, shape: tuple[int, ...] | None = None) -> str | None:
        """True on exactly one (thread, register) per element of a value of ``shape`` in ``layout``
        (a dimension of size 1 spread over a wider layout dimension is held by every thread along it)."""
        p = layout.parent
        conds = []
        for d in range(len(p.shape)):
            if d in layout.dims:
                if shape is not None and shape[layout.dims.index(d)] == 1 and p.cta_tile[d] * p.per_thread[d] > 1:
                    conds.append(f"{self.raw_coord(p, d, e)} == 0")
                elif p.replicated[d]:
                    conds.append(f"{self.raw_coord(p, d, e)} < {p.shape[d]}")
            else:
                conds.append(f"{self.raw_coord(p, d, e)} == 0")
        return " && ".join(conds) if conds else None

    def flat_index(self, layout: TileLayout, shape: tuple[int, ...], e: str, pad: bool = False,
                   swizzle: bool = False) -> str:
        """Row-major index of register ``e``'s element: rows padded by one element when ``pad``; when
        ``swizzle`` (the last dimension a power of two), the column XORed with the row's low bits, a
        permutation within each row that spreads a column over banks as the padding does, in no extra memory."""
        terms = []
        stride = 1
        last = len(shape) - 1
        for i in reversed(range(len(shape))):
            if shape[i] > 1:
                c = self.value_coord(layout, shape, i, e)
                if swizzle and i == last and last > 0 and shape[last - 1] > 1:
                    c = f"({c} ^ ({self.value_coord(layout, shape, last - 1, e)} & {shape[last] - 1}))"
                terms.append(c if stride == 1 else f"{c} * {stride}")
            stride *= shape[i] + (1 if pad and i == len(shape) - 1 and len(shape) > 1 else 0)
        return " + ".join(reversed(terms)) if terms else "0"
