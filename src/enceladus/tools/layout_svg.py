"""Pictures of blocked layouts: which SIMD group, lane and register holds each element of a tile.

    kernel.explain(..., save="layout.svg")          # or: enceladus explain FILE.py::kernel --svg layout.svg

Colour is the SIMD group (Triton's "warp"); each cell is labelled ``lane:register`` (``l5 r2``: lane 5,
register 2 of that thread). The mapping is the one the MSL code generator emits
(``MSLEmitter.coord``): along dimension ``d`` a thread starts at
``warp_d * spt_d * tpw_d + lane_d * spt_d`` and holds ``spt_d`` consecutive elements, repeated every
``spt_d * tpw_d * wpc_d`` elements; registers count fastest along ``order[0]``. In a replicated layout
(the layout covers more than the tile) several threads hold the same element; the picture shows the
first and marks the number of copies.

Rendering needs matplotlib (``pip install matplotlib``), imported only here.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..compiler.layout import WARP_SIZE, BlockedLayout, MmaLayout

MAX_CELLS = 128  # per side: larger tiles show their top-left corner
LABEL_CELLS = 48  # per side: above this cells are too small to label


def _num_warps(layout: BlockedLayout | MmaLayout) -> int:
    return math.prod(layout.warps) if isinstance(layout, MmaLayout) else math.prod(layout.warps_per_cta)


def _mma_owners(layout: MmaLayout) -> dict[str, np.ndarray]:
    """simdgroup_matrix fragments: SIMD group w owns block (w // wn, w % wn); in each 8x8 fragment lane l holds
    row 4*((l>>4)&1) + 2*((l>>2)&1) + ((l>>1)&1), columns 4*((l>>3)&1) + 2*(l&1) + {0, 1} (see MmaLayout)."""
    m, n = layout.shape
    wm, wn = layout.warps
    fm, fn = layout.frags
    out = {k: np.full((m, n), -1, dtype=np.int64) for k in ("warp", "lane", "register")}
    out["copies"] = np.zeros((m, n), dtype=np.int64)
    for w in range(wm * wn):
        for lane in range(WARP_SIZE):
            row = 4 * ((lane >> 4) & 1) + 2 * ((lane >> 2) & 1) + ((lane >> 1) & 1)
            col = 4 * ((lane >> 3) & 1) + 2 * (lane & 1)
            for e in range(fm * fn * 2):
                f, j = divmod(e, 2)
                i, k = divmod(f, fn)
                r = (w // wn) * (m // wm) + i * 8 + row
                c = (w % wn) * (n // wn) + k * 8 + col + j
                if out["copies"][r, c] == 0:
                    out["warp"][r, c], out["lane"][r, c], out["register"][r, c] = w, lane, e
                out["copies"][r, c] += 1
    return out


def element_owners(layout: BlockedLayout | MmaLayout) -> dict[str, np.ndarray]:
    """For every element of the tile: ``warp``, ``lane``, ``register`` of its first owner and ``copies``.

    Each array has the tile's shape.
    """
    if isinstance(layout, MmaLayout):
        return _mma_owners(layout)
    shape = layout.shape
    rank = len(shape)
    nwarps = math.prod(layout.warps_per_cta)
    nthreads = WARP_SIZE * nwarps
    ept = layout.elems_per_thread
    thread = np.arange(nthreads)[:, None]
    warp, lane = thread // WARP_SIZE, thread % WARP_SIZE
    reg = np.arange(ept)[None, :]
    coords = []
    for d in range(rank):
        lane_stride, warp_stride, reg_stride = layout.lane_stride(d), layout.warp_stride(d), layout.slot_stride(d)
        spt, tpw, wpc = layout.size_per_thread[d], layout.threads_per_warp[d], layout.warps_per_cta[d]
        base = ((warp // warp_stride) % wpc) * (spt * tpw) + ((lane // lane_stride) % tpw) * spt
        local = (reg // reg_stride) % layout.per_thread[d]
        c = base + local % spt + (local // spt) * layout.cta_tile[d]
        coords.append(np.broadcast_to(c % shape[d], (nthreads, ept)))
    flat = np.ravel_multi_index(tuple(coords), shape).ravel()
    warp_b = np.broadcast_to(warp, (nthreads, ept)).ravel()
    lane_b = np.broadcast_to(lane, (nthreads, ept)).ravel()
    reg_b = np.broadcast_to(reg, (nthreads, ept)).ravel()
    size = math.prod(shape)
    out = {k: np.full(size, -1, dtype=np.int64) for k in ("warp", "lane", "register")}
    order = np.arange(flat.size)[::-1]  # later writes win, so write in reverse: the first owner stays
    out["warp"][flat[order]] = warp_b[order]
    out["lane"][flat[order]] = lane_b[order]
    out["register"][flat[order]] = reg_b[order]
    out["copies"] = np.bincount(flat, minlength=size)
    return {k: v.reshape(shape) for k, v in out.items()}


def _as_2d(a: np.ndarray) -> np.ndarray:
    if a.ndim == 2:
        return a
    if a.ndim == 1:
        width = min(a.size, 64 if a.size > 256 else 32)
        rows = -(-a.size // width)
        padded = np.full(rows * width, -1, dtype=a.dtype)
        padded[: a.size] = a
        return padded.reshape(rows, width)
    return a.reshape(-1, a.shape[-1])  # higher ranks: rows are all leading dimensions


def _require_matplotlib() -> Any:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError(
            "layout pictures need matplotlib, which is not installed: pip install matplotlib "
            "(or pip install 'enceladus[plot]')") from None
    return Figure


def render_layouts(layouts: Sequence[BlockedLayout], path: str | os.PathLike, title: str = "",
                   notes: Sequence[str] = ()) -> str:
    """Draw each layout as a grid of its tile (colour = SIMD group, label = lane:register) into ``path``.

    The format follows the extension: ``.svg``, ``.png`` or ``.pdf``. Returns the path written.
    """
    figure_cls = _require_matplotlib()
    from matplotlib import colormaps
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    path = os.fspath(path)
    ext = os.path.splitext(path)[1].lower().lstrip(".")
    if ext not in ("svg", "png", "pdf"):
        raise ValueError(f"cannot save a layout picture as '{path}': use a .svg, .png or .pdf file name")
    if not layouts:
        raise ValueError("this kernel has no tiles, so there is no layout to draw")
    grids = []
    for lay in layouts:
        own = element_owners(lay)
        grids.append({k: _as_2d(v) for k, v in own.items()})
    heights = [min(g["warp"].shape[0], MAX_CELLS) for g in grids]
    widths = [min(g["warp"].shape[1], MAX_CELLS) for g in grids]
    cell = 0.32 if max(widths) <= 32 else max(0.12, 20.0 / max(widths))
    fig_w = max(6.0, max(widths) * cell + 1.5)
    fig_h = sum(h * cell + 1.4 for h in heights) + 0.3 * len(notes) + 0.5
    fig = figure_cls(figsize=(fig_w, fig_h))
    axes = fig.subplots(len(layouts), 1, squeeze=False, height_ratios=[h + 4 for h in heights])[:, 0]
    base = colormaps["tab20" if max(_num_warps(lay) for lay in layouts) > 10 else "tab10"]
    for i, (lay, g, ax) in enumerate(zip(layouts, grids, axes)):
        nw = _num_warps(lay)
        cmap = ListedColormap(["#ffffff"] + [base(k % base.N) for k in range(nw)])
        h, w = min(g["warp"].shape[0], MAX_CELLS), min(g["warp"].shape[1], MAX_CELLS)
        warp = g["warp"][:h, :w]
        ax.pcolormesh(np.arange(w + 1), np.arange(h + 1), warp + 1, cmap=cmap, vmin=0, vmax=nw,
                      edgecolors="#555555", linewidth=0.3)
        ax.set_xlim(0, w)
        ax.set_ylim(h, 0)
        ax.set_aspect("equal")
        ax.set_xticks([])
        ax.set_yticks([])
        if w <= LABEL_CELLS and h <= LABEL_CELLS:
            size = max(2.5, min(6.5, cell * 18))
            for r in range(h):
                for c in range(w):
                    if warp[r, c] < 0:
                        continue
                    label = f"l{g['lane'][r, c]}\nr{g['register'][r, c]}"
                    if g["copies"][r, c] > 1:
                        label += f"\nx{g['copies'][r, c]}"
                    ax.text(c + 0.5, r + 0.5, label, ha="center", va="center", fontsize=size, linespacing=0.9)
        shape = "x".join(map(str, lay.shape))
        shown = "" if (h, w) == g["warp"].shape else f" (showing {h}x{w} of the {g['warp'].shape[0]}x" \
                                                        f"{g['warp'].shape[1]} grid)"
        drawn_as = f", drawn in rows of {w}" if len(lay.shape) == 1 and h > 1 else ""
        ax.set_title(f"L{i}: tile {shape}{drawn_as}{shown}\n{lay}\n{lay.elems_per_thread} registers per thread, "
                     f"{nw} SIMD group{'s' if nw > 1 else ''} of {WARP_SIZE} lanes", fontsize=8, loc="left")
        handles = [Patch(facecolor=base(k % base.N), edgecolor="#555555", label=f"SIMD group {k}")
                   for k in range(min(nw, 16))]
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False)
    import textwrap

    wrapped = [ln for note in notes for ln in textwrap.wrap(note, width=max(60, int(fig_w * 13)))]
    header = title + ("\n" + "\n".join(wrapped) if wrapped else "")
    if header:
        fig.suptitle(header, fontsize=9, x=0.01, ha="left")
    fig.tight_layout()
    fig.savefig(path, format=ext)
    return path


def save_kernel_layouts(kernel: Any, path: str | os.PathLike) -> str:
    """Draw every layout of a compiled kernel (``kernel.metadata["layouts"]``), with its memory accesses as notes."""
    layouts = [lay for lay in kernel.metadata.get("layouts", []) if isinstance(lay, (BlockedLayout, MmaLayout))]
    notes = [str(a) for a in getattr(kernel, "accesses", [])][:12]
    title = (f"kernel {kernel.name}: {kernel.metadata.get('threads_per_threadgroup')} threads per threadgroup; "
             "colour = SIMD group, label = lane / register")
    return render_layouts(layouts, path, title=title, notes=notes)
