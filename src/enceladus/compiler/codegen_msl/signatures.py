"""Path-specific kernel signatures around one generated body.

Generated kernels take their scalar arguments packed in one ``constant K_args& enc_args [[buffer(k)]]``
struct (one ``setBytes`` per launch on our own encoder). ``torch.mps.compile_shader`` cannot pass a
struct: it binds argument i to ``[[buffer(i)]]``, Python ints as int64 and Python floats as float.
``scalars_as_parameters`` rewrites only the kernel's signature so that each struct field becomes its
own ``constant long&`` / ``constant float&`` parameter at consecutive slots from k, and rebuilds the
local ``enc_args`` struct from them as the body's first statement; the body itself is unchanged, so
both signatures compute the same results (tests/backends/metal/test_signatures.py runs both on the cpu
backend).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FLOAT_FIELDS = {"float", "half", "bfloat"}


@dataclass(frozen=True)
class ScalarParam:
    """One struct field turned into a parameter: its name in the struct, MSL field type, and buffer slot."""

    name: str
    field_type: str
    slot: int

    @property
    def is_float(self) -> bool:
        """Passed as a 32-bit float (else as a 64-bit signed integer)."""
        return self.field_type in _FLOAT_FIELDS


def scalars_as_parameters(msl: str, kernel: str) -> tuple[str, list[ScalarParam]]:
    """``msl`` with ``kernel``'s packed-scalar parameter split into one parameter per scalar.

    Returns the new text and the scalar parameters in slot order (empty, and the text unchanged, when
    the kernel takes no scalars). Raises ValueError when the text is not shaped as generated."""
    sig = re.search(rf"kernel void {re.escape(kernel)}\((?P<params>.*?)\)\s*\{{", msl, re.S)
    if sig is None:
        raise ValueError(f"no generated kernel '{kernel}' in the MSL text")
    params = sig.group("params")
    m = re.search(r"constant (\w+)& enc_args \[\[buffer\((\d+)\)\]\]", params)
    if m is None:
        return msl, []
    struct_name, first_slot = m.group(1), int(m.group(2))
    body = re.search(rf"struct {re.escape(struct_name)} \{{(?P<fields>.*?)\}};", msl, re.S)
    if body is None:
        raise ValueError(f"the MSL text has no definition of struct {struct_name}")
    fields = re.findall(r"^\s*(\w+) (\w+);\s*$", body.group("fields"), re.M)
    scalars = [ScalarParam(name, ftype, first_slot + i) for i, (ftype, name) in enumerate(fields)]
    replacement = ",\n    ".join(f"constant {'float' if s.is_float else 'long'}& enc_arg_{s.name} [[buffer({s.slot})]]"
                                   for s in scalars)
    new_params = params[:m.start()] + replacement + params[m.end():]
    rebuild = ", ".join(f"static_cast<{s.field_type}>(enc_arg_{s.name})" for s in scalars)
    start, end = sig.span("params")
    head = msl[:start] + new_params + msl[end:sig.end()]
    return head + f"\n    const {struct_name} enc_args = {{{rebuild}}};" + msl[sig.end():], scalars
