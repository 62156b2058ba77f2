"""Structured control flow in MSL: ``for`` and ``while`` loops and ``if`` with the values they carry (declared in
their home layout, a pointer tile compressed to one register per contiguous run), and the assignment of the
values a region yields. A mixin of ``MSLEmitter``."""

from __future__ import annotations

from .. import ir
from ..layout import BlockedLayout
from ..msl_types import msl_type


class ControlFlowMixin:
    """Loops and branches of the emitter (see the module docstring)."""

    def carried_run(self, values: list[ir.Value]) -> tuple[int, bool]:
        """How many consecutive registers of a loop-carried tile one register stands for, and whether they differ
        by their position in the run (pointers):

        - a slice of its parent layout without the parent's fastest register dimension (attention's row max and
          row sum, reduced along the rows of a dot's fragments): the thread's registers along that dimension hold
          one value, so element e is ``c[e / run]``;
        - a pointer tile whose values (initial, carried, yielded, result) are all known to be contiguous over
          each thread's runs along the layout's fastest dimension (axis analysis): element e is
          ``c[e / run] + e % run``."""
        v = values[0]
        home = self.plan.homes[v.id]
        p = home.parent
        dropped = [d for d in range(len(p.shape)) if d not in home.dims]
        if len(dropped) == 1 and len(home.dims) == len(p.shape) - 1 and p.slot_stride(dropped[0]) == 1:
            return p.per_thread[dropped[0]], False
        if not v.type.is_ptr or not isinstance(p, BlockedLayout) or home.dims != tuple(range(len(p.shape))):
            return 1, True
        fast = p.order[0]
        run = p.size_per_thread[fast]
        if run <= 1 or p.replicated[fast] or any(x.id not in self.axis or self.axis[x.id].contiguity[fast] < run
                                                 for x in values):
            return 1, True
        return run, True

    def declare_carried(self, v: ir.Value, init: ir.Value | None, same: list[ir.Value] = ()) -> str:
        """A variable that holds a loop-carried value or a control-flow result (in its home layout). A slice
        without its parent's fastest register dimension, or a pointer tile contiguous over each thread's runs
        (``same``: the other values the variable holds), keeps one register per run (``carried_run``): fewer
        registers carried across the loop."""
        name = f"c{v.id}"
        t = "auto" if v.type.is_ptr and not v.type.is_tile else msl_type(v.type.element)
        if v.type.is_tile:
            home = self.plan.homes[v.id]
            if v.type.is_ptr:
                t = msl_type(v.type.element, const=not self._writes_through(init) if init is not None else False)
            run, step = self.carried_run([v, *same]) if same and init is not None else (1, True)
            if run > 1:
                n = home.parent.elems_per_thread
                self.emit(f"{t} {name}[{n // run}];  // " + (f"one pointer per run of {run} contiguous elements"
                                                            if step else f"one value per {run} registers"))
                self.emit(f"for (int e = 0; e < {n}; e += {run}) {name}[e / {run}] = {self.ref(init, home)};")
                ref = f"({name}[({{e}}) / {run}] + ({{e}}) % {run})" if step else f"{name}[({{e}}) / {run}]"
                self.carried_runs[ref] = (name, run)
                return ref
            self.emit(f"{t} {name}[{home.parent.elems_per_thread}];")
            if init is not None:
                self.loop(home, f"{name}[e] = {self.ref(init, home)};")
            return name + "[{e}]"
        if init is not None:
            self.emit(f"{t} {name} = {self.ref(init, None)};")
        else:
            self.emit(f"{msl_type(v.type.element)} {name};")
        return name

    def value_def(self, v: ir.Value) -> ir.Op | None:
        """The op that makes ``v`` (None for arguments and block arguments)."""
        if not hasattr(self, "_defs"):
            self._defs = {r.id: op for op in ir.walk(self.fn.ops) for r in op.results}
        return self._defs.get(v.id)

    def bind(self, v: ir.Value, ref: str) -> None:
        layout = self.plan.homes.get(v.id) if v.type.is_tile else None
        self.refs[(v.id, layout)] = ref

    def assign_yields(self, term: ir.Op, targets: list[ir.Value], refs: list[str],
                      yielded: list[ir.Value] | None = None) -> None:
        """Copy yielded values (``term``'s operands, or ``yielded``) into the carried variables (through
        temporaries: yields may read them)."""
        temps = []
        for y, t in zip(term.operands if yielded is None else yielded, targets):
            if t.type.is_tile:
                home = self.plan.homes[t.id]
                tmp = self.fresh("y")
                decl_t = msl_type(t.type.element) if not t.type.is_ptr else \
                    msl_type(t.type.element, const=not self._writes_through(y))
                self.emit(f"{decl_t} {tmp}[{home.parent.elems_per_thread}];")
                self.loop(home, f"{tmp}[e] = {self.ref(y, home)};")
                temps.append((tmp + "[e]", home))
            else:
                tmp = self.fresh("y")
                self.emit(f"const auto {tmp} = {self.ref(y, None)};")
                temps.append((tmp, None))
        for (tmp, home), ref in zip(temps, refs):
            if home is None:
                self.emit(f"{ref} = {tmp};")
            elif ref in self.carried_runs:
                name, run = self.carried_runs[ref]
                self.emit(f"for (int e = 0; e < {home.parent.elems_per_thread}; e += {run}) {name}[e / {run}] = {tmp};")
            else:
                self.loop(home, f"{ref.replace('{e}', 'e')} = {tmp};")

    def emit_loop(self, op: ir.Op) -> None:
        is_for = op.name == "for"
        inits = op.operands[3:] if is_for else op.operands
        body = op.regions[-1]
        carried_args = body.args[1:] if is_for else body.args
        coop = {c.index: (r, c) for r in op.results if (c := self.plan.coop.get(r.id)) is not None}
        refs: list[str | None] = []
        for idx, (r, i, a, y) in enumerate(zip(op.results, inits, carried_args, body.terminator.operands)):
            if idx in coop:  # kept in a matmul2d cooperative tensor (matmul.py): no registers, no yield copy
                c = coop[idx][1]
                dot = next(o for o in body.ops if o.results and o.result.id == c.dot)
                self.begin_carried_matmul2d(dot, i, self.value_def(i), self.plan.homes[r.id])
                self.coop_hidden.update({a.id, c.dot} | ({c.absorbed} if c.absorbed is not None else set()))
                refs.append(None)
            else:
                refs.append(self.declare_carried(r, i, [a, y, i] if is_for else []))
        if is_for:
            lb, ub, step = (self.ref(o, None) for o in op.operands[:3])
            iv = body.args[0]
            ivn = f"i{iv.id}"
            sign = op.attrs.get("step_sign")
            cond = f"{ivn} < {ub}" if sign == 1 else (f"{ivn} > {ub}" if sign == -1 else
                                                         f"({step} > 0 ? {ivn} < {ub} : {ivn} > {ub})")
            self.emit(f"for ({msl_type(iv.type.element)} {ivn} = {lb}; {cond}; {ivn} += {step}) {{")
            self.refs[(iv.id, None)] = ivn
        else:
            self.emit("while (true) {")
        self.indent += 1
        self.depth += 1
        self.sync.open("loop")
        if not is_for:
            cond_block = op.regions[0]
            for a, ref in zip(cond_block.args, refs):
                self.bind(a, ref)
            self.convert_to_needs(cond_block.args)
            self.emit_block(cond_block)
            self.emit(f"if (!{self.ref(cond_block.terminator.operands[0], None)}) break;")
        for a, ref in zip(carried_args, refs):
            if ref is not None:
                self.bind(a, ref)
        self.convert_to_needs(carried_args)
        self.emit_block(body)
        kept = [i for i, ref in enumerate(refs) if ref is not None]
        self.assign_yields(body.terminator, [op.results[i] for i in kept], [refs[i] for i in kept],
                           [body.terminator.operands[i] for i in kept])
        self.sync.close()
        self.depth -= 1
        self.indent -= 1
        self.emit("}")
        for idx, (r, ref) in enumerate(zip(op.results, refs)):
            if ref is None:
                self.end_carried_matmul2d(coop[idx][1].dot, r)
            else:
                self.bind(r, ref)

    def emit_if(self, op: ir.Op) -> None:
        refs = [self.declare_carried(r, None) for r in op.results]
        self.emit(f"if ({self.ref(op.operands[0], None)}) {{")
        self.sync.open("if")
        for i, region in enumerate(op.regions):
            if i == 1:
                self.emit("} else {")
            self.indent += 1
            self.sync.open("branch")
            self.emit_block(region)
            self.assign_yields(region.terminator, list(op.results), refs)
            self.sync.close()
            self.indent -= 1
        self.sync.close()
        self.emit("}")
        for r, ref in zip(op.results, refs):
            self.bind(r, ref)
