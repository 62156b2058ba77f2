"""Developer tools around compiled kernels: layout pictures (``layout_svg``)."""
