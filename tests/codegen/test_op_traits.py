"""The one table of op traits: every IR op has an emit rule, and the passes' op sets come from the table."""

import enceladus
import enceladus.language as tl
from enceladus.compiler import ir, op_traits
from enceladus.compiler.codegen_msl import emitter
from enceladus.compiler.codegen_msl.emitter import MSLEmitter
from enceladus.compiler.passes import axis_info, layouts


def test_every_ir_op_has_an_emit_rule():
    for name, traits in op_traits.OPS.items():
        rule = getattr(MSLEmitter, traits.emit, None)
        assert callable(rule), f"op '{name}': the emitter has no method {traits.emit}"
        assert rule.__doc__ or traits.emit.startswith("emit_"), name


def test_every_trait_is_one_of_the_known_values():
    for name, traits in op_traits.OPS.items():
        assert traits.name == name
        assert traits.layout in op_traits.LAYOUT_TREATMENTS, name
    assert frozenset(op_traits.OPS) == ir.ALL_OPS


def test_passes_derive_their_op_sets_from_the_table():
    assert op_traits.ops_where(layout=op_traits.VIA_SMEM) == layouts._VIA_SMEM
    assert op_traits.ops_where(layout=op_traits.TRANSPARENT) | \
        op_traits.ops_where(layout=op_traits.VIEW) == layouts._TRANSPARENT
    assert op_traits.ops_where(layout=op_traits.VIEW) == emitter.VIEW_OPS
    assert op_traits.ops_where(axis_rule=True) == axis_info._WITH_RULE
    assert ir.ELEMENTWISE <= layouts._TRANSPARENT


@enceladus.jit
def flip_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.flip(tl.load(x_ptr + offs), 0))


def test_emitting_dispatches_through_the_table(monkeypatch):
    """Replacing a row's emit rule changes what the emitter calls for that op (no hidden if-chain)."""
    seen = []
    original = MSLEmitter.emit_via_smem

    def spy(self, op):
        seen.append(op.name)
        original(self, op)

    monkeypatch.setattr(MSLEmitter, "emit_flip_spy", spy, raising=False)
    monkeypatch.setitem(op_traits.OPS, "flip", op_traits.OpTraits("flip", "shape", op_traits.VIA_SMEM, False,
                                                                    "emit_flip_spy"))
    enceladus.compile(flip_kernel, signature="*fp32, *fp32", constexprs={"BLOCK": 64})
    assert seen == ["flip"]
