"""A compile leaves no reference cycles behind but its kernel's own IR: its passes' working state is freed by
reference counting as soon as they return, and never waits for (nor slows down) the garbage collector."""

import gc

import enceladus
from enceladus.compiler.passes import access_pairs, device_order

from . import order_kernels as ok


def test_the_device_order_analysis_leaves_no_cyclic_garbage():
    # its records' offset closures and its loops' contexts refer back to it: it drops them when done
    for kernel, signature, constexprs in ((ok.blocks_chain_kernel, "*fp32", {"NB": 4, "BLOCK": 64}),
                                          (ok.in_place_loop_kernel, "*fp32, *fp32, i32", {"N": 256, "BLOCK": 64}),
                                          (ok.in_place_kernel, "*fp32, i32", {"BLOCK": 64})):
        gc.collect()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            compiled = enceladus.compile(kernel, signature=signature, constexprs=constexprs)  # kept: its IR is alive
            gc.collect()
            kinds = {type(o) for o in gc.garbage}
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
        assert compiled.asm["msl"]
        assert not kinds & {device_order._Analysis, device_order._Context, access_pairs.Access}, kinds
