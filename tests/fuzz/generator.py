"""Random well-typed tile programs for the differential fuzzer, as Python source text.

A program is a list of steps drawn by hypothesis (so failures shrink step by step); ``render`` turns it
into a module with one ``@enceladus.jit`` kernel named ``fuzz_kernel`` and a ``LAUNCH`` dict that says how
to call it (see ``harness.py``). The generator keeps a small type model (dtype and shape per value) that
follows Triton's rules (``enceladus.language.dtypes.computation_type``) so every program is well typed,
and it guards every operation whose result C leaves undefined: integer division by zero, shifts by the
bit width or more, float-to-int casts of out-of-range values or NaN.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hypothesis import strategies as st

from enceladus.language import dtypes as D

INT_TYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
FLOAT_TYPES = ("float16", "bfloat16", "float32")
ALL_TYPES = ("int1", *INT_TYPES, *FLOAT_TYPES)
SIZES = (2, 4, 8, 16, 32)

BINARY = ("+", "-", "*", "/", "//", "%", "&", "|", "^", "<<", ">>", "==", "!=", "<", "<=", ">", ">=",
          "maximum", "minimum")
COMPARE = ("==", "!=", "<", "<=", ">", ">=")
# float math: name -> guarded call, so inputs stay in the function's domain
MATH = {
    "exp": "tl.exp(tl.minimum({x}, 8.0))",
    "exp2": "tl.exp2(tl.minimum({x}, 8.0))",
    "log": "tl.log(tl.abs({x}) + 1.0)",
    "log2": "tl.log2(tl.abs({x}) + 1.0)",
    "sqrt": "tl.sqrt(tl.abs({x}))",
    "rsqrt": "tl.rsqrt(tl.abs({x}) + 1.0)",
    "sin": "tl.sin({x})",
    "cos": "tl.cos({x})",
    "sigmoid": "tl.sigmoid({x})",
    "erf": "tl.erf({x})",
    "floor": "tl.floor({x})",
    "ceil": "tl.ceil({x})",
    "abs": "tl.abs({x})",
}
TRANSCENDENTAL = {"exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "sigmoid", "erf"}
# float -> int casts clamp first (C leaves out-of-range conversions undefined); bounds exact in bf16 and fp16
CAST_BOUNDS = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32000, 32000), "uint16": (0, 65000),
               "int32": (-1e9, 1e9), "uint32": (0, 4e9), "int64": (-9e18, 9e18), "uint64": (0, 1.8e19)}
SAME_WIDTH = {8: ("int8", "uint8"), 16: ("int16", "uint16", "float16", "bfloat16"),
              32: ("int32", "uint32", "float32"), 64: ("int64", "uint64")}


def dt(name: str) -> D.dtype:
    return D.BY_NAME[{"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}.get(name, name)]


def name_of(d: D.dtype) -> str:
    return {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}.get(d.name, d.name)


def is_float(t: str) -> bool:
    return t in FLOAT_TYPES


def is_int(t: str) -> bool:
    return t in INT_TYPES


def bits(t: str) -> int:
    return dt(t).primitive_bitwidth


def promote(a: str, b: str, div_or_mod: bool = False) -> str:
    return name_of(D.computation_type(dt(a), False, dt(b), False, div_or_mod))


def broadcast(s1: tuple, s2: tuple) -> tuple | None:
    """NumPy/Triton broadcasting of two shapes (left-padded with 1s), or None if they do not broadcast."""
    n = max(len(s1), len(s2))
    a, b = (1,) * (n - len(s1)) + s1, (1,) * (n - len(s2)) + s2
    out = []
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y))
    return tuple(out)


def no_nan(v: Val, expr: str) -> str:
    """``expr`` with NaNs replaced by 0 when ``v`` is a float: which operand max/min/argmax pick when one
    is NaN is unspecified (Triton: the hardware's min/max; the compiled reduction's tree order decides)."""
    return f"tl.where({expr} == {expr}, {expr}, 0.0)" if is_float(v.dtype) else expr


@dataclass
class Val:
    name: str
    dtype: str
    shape: tuple
    # derived from a result whose last bits depend on the implementation (transcendentals, float
    # reductions, scans and dots): such values never feed an operation that is discontinuous in its input
    # (comparisons, float->int casts, floor/ceil, argmax/argmin, //, %), where one ulp flips the result
    inexact: bool = False


@dataclass
class Program:
    """The rendered kernel's pieces and what the harness needs to launch it."""

    M: int
    N: int
    grid: int
    inputs: list[dict] = field(default_factory=list)  # {"dtype", "layout", "other", "masked"}
    stmts: list[tuple[str, list[str]]] = field(default_factory=list)  # (name defined, its lines)
    outputs: list[Val] = field(default_factory=list)
    features: set[str] = field(default_factory=set)
    floats: set[str] = field(default_factory=set)  # float dtypes of any value: they set the tolerance
    n_iter: int = 2
    flag: int = 1
    seed: int = 0
    masked_store: bool = False
    atomics: list[str] = field(default_factory=list)  # dtype of each atomic target buffer (M * N per program)
    early_return: str = ""  # a uniform condition on which a program returns before its stores

    def live(self) -> tuple[list[str], set[int]]:
        """The lines that outputs depend on (dead steps dropped, so shrunk programs are minimal) and the
        inputs they read."""
        need = {v.name for v in self.outputs}
        kept: list[list[str]] = []
        for name, lines in reversed(self.stmts):
            if name in need:
                kept.append(lines)
                need |= set(re.findall(r"\b(?:v|x|s)\d+\b", " ".join(lines)))
        body = [line for lines in reversed(kept) for line in lines]
        text = " ".join(body) + " " + self.early_return
        return body, {i for i in range(len(self.inputs)) if f"x{i}" in need or f"in{i}_ptr" in text}

    def source(self) -> str:
        lines, used = self.live()
        params = [f"in{i}_ptr" for i in sorted(used)] + [f"out{i}_ptr" for i in range(len(self.outputs))]
        params += [f"at{k}_ptr" for k in range(len(self.atomics))]
        params += ["n", "n_iter", "flag", "M: tl.constexpr", "N: tl.constexpr"]
        body = ["    pid = tl.program_id(0)",
                "    rows = tl.arange(0, M)",
                "    cols = tl.arange(0, N)",
                "    flat = rows[:, None] * N + cols[None, :]",
                "    offs = pid * (M * N) + flat",
                "    mask = offs < n"]
        for i, inp in enumerate(self.inputs):
            if i not in used:
                continue
            addr = {"2d": "offs", "t": "pid * (M * N) + cols[None, :] * M + rows[:, None]",
                    "row": "pid * M + rows", "col": "pid * N + cols"}[inp["layout"]]
            m = {"2d": "mask", "t": "mask", "row": "pid * M + rows < n", "col": "pid * N + cols < n"}[inp["layout"]]
            if inp["masked"]:
                body.append(f"    x{i} = tl.load(in{i}_ptr + {addr}, mask={m}, other={inp['other']})")
            else:
                body.append(f"    x{i} = tl.load(in{i}_ptr + {addr})")
        body += ["    " + line for line in lines]
        if self.early_return:
            body += [f"    if {self.early_return}:", "        return"]
        for i, v in enumerate(self.outputs):
            value = f"{v.name}.to(tl.int8)" if v.dtype == "int1" else v.name
            if v.shape == ():
                body.append(f"    tl.store(out{i}_ptr + pid, {value})")
                continue
            if len(v.shape) == 1:
                addr = f"pid * {v.shape[0]} + tl.arange(0, {v.shape[0]})"
            else:
                a, b = v.shape
                addr = f"pid * {a * b} + tl.arange(0, {a})[:, None] * {b} + tl.arange(0, {b})[None, :]"
            if self.masked_store and v.shape == (self.M, self.N):
                body.append(f"    tl.store(out{i}_ptr + {addr}, {value}, mask=mask)")
            else:
                body.append(f"    tl.store(out{i}_ptr + {addr}, {value})")
        launch = {
            "M": self.M, "N": self.N, "grid": self.grid, "n": self.n, "n_iter": self.n_iter, "flag": self.flag,
            "seed": self.seed,
            "inputs": [(i, inp["dtype"], inp["layout"]) for i, inp in enumerate(self.inputs) if i in used],
            "outputs": [("int8" if v.dtype == "int1" else v.dtype, list(v.shape)) for v in self.outputs],
            "atomics": list(self.atomics),
            "features": sorted(self.features),
            "floats": sorted(self.floats),
        }
        return "\n".join([
            "# ruff: noqa: F841",
            '"""A program from the differential fuzzer (tests/fuzz/generator.py)."""',
            "",
            "import enceladus",
            "import enceladus.language as tl",
            "",
            f"LAUNCH = {launch!r}",
            "",
            "",
            "@enceladus.jit",
            f"def fuzz_kernel({', '.join(params)}):",
            *body,
            "",
        ])

    n: int = 0


class Builder:
    """Draws steps and keeps the type model of every value it defines."""

    def __init__(self, draw, prog: Program) -> None:
        self.draw = draw
        self.p = prog
        self.vals: list[Val] = []
        self.count = 0

    def tainted(self, text: str) -> bool:
        names = set(re.findall(r"\b(?:v|x|s)\d+\b", text))
        return any(v.inexact for v in self.vals if v.name in names)

    def new(self, expr: str, dtype: str, shape: tuple, inexact: bool = False) -> Val:
        v = Val(f"v{self.count}", dtype, shape, inexact or self.tainted(expr))
        self.count += 1
        if is_float(dtype):
            self.p.floats.add(dtype)
        self.p.stmts.append((v.name, [f"{v.name} = {expr}"]))
        self.vals.append(v)
        return v

    def pick(self, pred=lambda v: True) -> Val | None:
        cands = [v for v in self.vals if pred(v)]
        if not cands:
            return None
        return cands[self.draw(st.integers(0, len(cands) - 1))]

    # --- expressions that make an operand usable -----------------------------------------------------
    def as_shape(self, v: Val, shape: tuple) -> str | None:
        """``v`` written so that it broadcasts against ``shape`` (1-D tiles get an axis), or None."""
        if v.shape == () or (len(v.shape) == len(shape) and broadcast(v.shape, shape) == shape):
            return v.name  # Triton broadcasts only between tiles of one rank (and scalars)
        if len(v.shape) == 1 and len(shape) == 2:
            if v.shape[0] == shape[0]:
                return f"{v.name}[:, None]"
            if v.shape[0] == shape[1]:
                return f"{v.name}[None, :]"
        return None

    def pair(self, pred=lambda v: True) -> tuple[Val, str, Val, str, tuple] | None:
        a = self.pick(pred)
        b = self.pick(pred)
        if a is None or b is None:
            return None
        shape = broadcast(a.shape, b.shape)
        if shape is not None and len(a.shape) == len(b.shape) or () in (a.shape, b.shape):
            return a, a.name, b, b.name, shape
        big = a.shape if len(a.shape) >= len(b.shape) else b.shape
        ea, eb = self.as_shape(a, big), self.as_shape(b, big)
        if ea is None or eb is None:
            return None
        return a, ea, b, eb, big

    # --- steps ------------------------------------------------------------------------------------------
    def binary(self) -> None:
        op = self.draw(st.sampled_from(BINARY))
        pr = self.pair()
        if pr is None:
            return
        a, ea, b, eb, shape = pr
        ta, tb = a.dtype, b.dtype
        if (a.inexact or b.inexact) and op in (*COMPARE, "//", "%"):
            return
        if op in ("+", "-", "*"):  # int1 included: a 1-bit integer that wraps
            self.new(f"{ea} {op} {eb}", promote(ta, tb), shape)
        elif op in ("&", "|", "^"):
            if is_float(ta) or is_float(tb):
                return
            self.new(f"{ea} {op} {eb}", promote(ta, tb), shape)
        elif op in ("<<", ">>"):
            if not (is_int(ta) and is_int(tb)):
                return
            t = promote(ta, tb)
            self.new(f"{ea} {op} ({eb} & {bits(t) - 1})", t, shape)
        elif op in ("//", "%"):
            if "int1" in (ta, tb):
                return
            if is_float(ta) or is_float(tb):
                if op == "//":
                    return
                t = promote(ta, tb, True)
                self.p.features.add("fmod")
                self.new(f"{ea} % (tl.abs({eb}) + 1)", t, shape)
                return
            if dt(ta).is_int_signed() != dt(tb).is_int_signed():
                return
            # the divisor is 1..8: no division by zero, no INT_MIN // -1
            self.new(f"{ea} {op} (({eb} & 7) + 1)", promote(ta, tb, True), shape)
        elif op == "/":
            if is_int(ta) and is_int(tb) and dt(ta).is_int_signed() != dt(tb).is_int_signed():
                return
            if "int1" in (ta, tb):
                return
            self.p.features.add("div")
            if not b.name.startswith("x") or a.inexact:
                # a computed denominator near 0 turns its last-bit differences (scan order, an ulp of exp)
                # into unbounded quotient differences; loaded denominators are exact on both paths. An inexact
                # numerator over a loaded 0 is inf on one path and NaN (0/0) on the other when it cancels to 0
                eb = f"(tl.abs({eb}) + 1)"
            self.new(f"{ea} / {eb}", "float32" if not (is_float(ta) or is_float(tb)) else promote(ta, tb, True),
                     shape)
        elif op in COMPARE:
            self.new(f"{ea} {op} {eb}", "int1", shape)
        else:  # maximum / minimum
            if "int1" in (ta, tb):
                return
            self.new(f"tl.{op}({no_nan(a, ea)}, {no_nan(b, eb)})", promote(ta, tb), shape)

    def literal(self) -> None:
        a = self.pick(lambda v: v.dtype != "int1")
        if a is None:
            return
        op = self.draw(st.sampled_from(("+", "-", "*")))
        lit = self.draw(st.sampled_from((0, 1, 2, 3, 7, 100, -1, -3, 0.5, 2.5, -1.5)))
        if isinstance(lit, int) and lit < 0 and dt(a.dtype).is_int_unsigned():
            return
        if isinstance(lit, int) and a.dtype in ("int8", "uint8") and lit > 100:
            return
        t = "float32" if isinstance(lit, float) and not is_float(a.dtype) else a.dtype
        if self.draw(st.booleans()):
            self.new(f"{a.name} {op} {lit}", t, a.shape)
        else:
            self.new(f"{lit} {op} {a.name}", t, a.shape)

    def unary(self) -> None:
        kind = self.draw(st.sampled_from(("neg", "not", "math", "abs")))
        a = self.pick(lambda v: v.dtype != "int1")
        if a is None:
            return
        if kind == "neg":
            self.new(f"-{a.name}", a.dtype, a.shape)
        elif kind == "not":
            if is_int(a.dtype):
                self.new(f"~{a.name}", a.dtype, a.shape)
        elif kind == "abs":
            self.new(f"tl.abs({a.name})", a.dtype, a.shape)
        else:
            fn = self.draw(st.sampled_from(sorted(MATH)))
            x = a.name if a.dtype == "float32" or fn == "abs" else f"{a.name}.to(tl.float32)"
            t = a.dtype if is_float(a.dtype) or fn == "abs" else "float32"  # tl.abs keeps an integer type
            if fn in ("floor", "ceil") and a.inexact:
                return
            if fn in TRANSCENDENTAL:
                self.p.features.add("transcendental")
            if fn in ("sin", "cos") and a.inexact:  # an ulp of a large inexact argument is any value of sin/cos
                x = f"tl.minimum(tl.maximum({x}, -8.0), 8.0)"
            expr = MATH[fn].format(x=x)
            if t != "float32" and fn != "abs":  # Triton's math takes fp32 only: half precision converts back
                expr = f"{expr}.to(tl.{t})"
            self.new(expr, t, a.shape, inexact=fn in TRANSCENDENTAL)

    def cast(self) -> None:
        a = self.pick()
        if a is None:
            return
        to = self.draw(st.sampled_from(ALL_TYPES))
        if a.inexact and not is_float(to):
            return
        if self.draw(st.integers(0, 3)) == 0 and a.dtype != "int1" and not a.inexact:
            for width, group in SAME_WIDTH.items():
                if a.dtype in group and bits(a.dtype) == width:
                    to = group[self.draw(st.integers(0, len(group) - 1))]
                    if is_float(to) and not is_float(a.dtype):
                        self.p.features.add("bitcast_to_float")
                    self.new(f"{a.name}.to(tl.{to}, bitcast=True)", to, a.shape)
                    return
        x = a.name
        if is_float(a.dtype) and is_int(to):
            lo, hi = CAST_BOUNDS[to]
            if a.dtype == "float16":  # the bounds are typed like the tile: beyond fp16's range they would be inf
                lo, hi = max(lo, -65504.0), min(hi, 65504.0)
            x = f"tl.minimum(tl.maximum(tl.where({x} == {x}, {x}, 0.0), {float(lo)!r}), {float(hi)!r})"
        self.new(f"{x}.to(tl.{to})", to, a.shape)

    def where(self) -> None:
        c = self.pick(lambda v: v.dtype == "int1")
        pr = self.pair()
        if pr is None:
            return
        a, ea, b, eb, shape = pr
        if c is None:
            if a.inexact or b.inexact:
                return
            cond = f"{ea} > {eb}"
        else:
            ec = self.as_shape(c, shape)
            if ec is None:
                return
            cond = ec
        self.new(f"tl.where({cond}, {ea}, {eb})", promote(a.dtype, b.dtype), shape)

    def reduce(self) -> None:
        a = self.pick(lambda v: len(v.shape) >= 1)
        if a is None:
            return
        fn = self.draw(st.sampled_from(("sum", "max", "min", "argmax", "argmin", "xor_sum")))
        axis = self.draw(st.integers(0, len(a.shape) - 1))
        shape = a.shape[:axis] + a.shape[axis + 1:]
        t = a.dtype
        if fn == "xor_sum":
            if not is_int(t):
                return
        elif fn == "sum":
            if t == "int1":
                return
            if is_int(t) and bits(t) < 32:
                t = "int32" if dt(t).is_int_signed() else "uint32"
            if is_float(t):
                self.p.features.add("float_reduction")
        elif fn in ("argmax", "argmin"):
            if t == "int1" or a.inexact:
                return
            t = "int32"
        elif bits(t) < 32:  # Triton 3.9's max/min reduce narrower types as fp32 / int32 (and return that)
            t = "float32" if is_float(t) else "int32"
        x = no_nan(a, a.name) if fn in ("max", "min", "argmax", "argmin") else a.name
        self.new(f"tl.{fn}({x}, axis={axis})", t, shape, inexact=fn == "sum" and is_float(t))

    def scan(self) -> None:
        a = self.pick(lambda v: len(v.shape) >= 1 and v.dtype != "int1")
        if a is None:
            return
        fn = self.draw(st.sampled_from(("cumsum", "cumprod")))
        axis = self.draw(st.integers(0, len(a.shape) - 1))
        reverse = self.draw(st.booleans())
        t = a.dtype
        if is_int(t) and bits(t) < 32:
            t = "int32" if dt(t).is_int_signed() else "uint32"
        if is_float(t):
            self.p.features.add("float_reduction")
        rev = ", reverse=True" if reverse else ""
        x = a.name
        if fn == "cumprod" and a.inexact:
            # an inexact factor is only known to within ulps of its operands' scale (a cancelled sum, a dot
            # product): a product of 32 such factors is not known at all
            return
        if fn == "cumprod" and is_float(t):
            # bounded factors: a product that overflows to inf and then meets a 0 is NaN or 0 depending on
            # the (unspecified) association order of the scan
            x = f"tl.minimum(tl.maximum({x}, -1.25), 1.25)"
        self.new(f"tl.{fn}({x}, axis={axis}{rev})", t, a.shape, inexact=is_float(t))

    def shape_op(self) -> None:
        a = self.pick(lambda v: len(v.shape) >= 1)
        if a is None:
            return
        kind = self.draw(st.sampled_from(("trans", "ravel", "reshape", "expand", "flip", "broadcast")))
        if kind == "trans" and len(a.shape) == 2:
            self.new(f"tl.trans({a.name})", a.dtype, a.shape[::-1])
        elif kind == "ravel" and len(a.shape) == 2:
            self.new(f"tl.ravel({a.name})", a.dtype, (a.shape[0] * a.shape[1],))
        elif kind == "reshape":
            total = 1
            for s in a.shape:
                total *= s
            k = self.draw(st.sampled_from([s for s in SIZES if total % s == 0 and total // s in SIZES] or [0]))
            if k:
                self.new(f"tl.reshape({a.name}, ({k}, {total // k}))", a.dtype, (k, total // k))
        elif kind == "expand" and len(a.shape) == 1:
            other = self.draw(st.sampled_from((self.p.M, self.p.N)))
            if self.draw(st.booleans()):
                self.new(f"tl.broadcast_to({a.name}[:, None], ({a.shape[0]}, {other}))", a.dtype,
                         (a.shape[0], other))
            else:
                self.new(f"tl.broadcast_to({a.name}[None, :], ({other}, {a.shape[0]}))", a.dtype,
                         (other, a.shape[0]))
        elif kind == "flip":
            self.new(f"tl.flip({a.name}, 0)", a.dtype, a.shape)

    def loop(self) -> None:
        acc = self.pick(lambda v: len(v.shape) >= 1 and v.dtype != "int1")
        if acc is None:
            return
        # the body's result is cast back to acc's type: a float into an integer acc would be an undefined
        # out-of-range conversion
        b = self.pick(lambda v: v.dtype != "int1" and self.as_shape(v, acc.shape) is not None
                      and not (is_int(acc.dtype) and is_float(v.dtype)))
        if b is None:
            return
        eb = self.as_shape(b, acc.shape)
        op = self.draw(st.sampled_from(("+", "*", "^", "maximum", "where", "+i")))
        if op == "^" and not (is_int(acc.dtype) and is_int(b.dtype)):
            op = "+"
        if op == "where" and (acc.inexact or b.inexact):
            op = "maximum"
        body = {"+": f"acc + {eb}", "*": f"acc * {eb}", "^": f"acc ^ {eb}",
                "maximum": f"tl.maximum(acc, {eb})", "where": f"tl.where(acc > {eb}, acc - 1, acc + {eb})",
                "+i": f"acc + {eb} * i"}[op]
        kind = self.draw(st.sampled_from(("range", "static_range", "while")))
        name = f"v{self.count}"
        self.count += 1
        lines = [f"acc = {acc.name}"]
        if kind == "range":
            lines += ["for i in range(0, n_iter):", f"    acc = ({body}).to(tl.{acc.dtype})"]
        elif kind == "static_range":
            lines += ["for i in tl.static_range(3):", f"    acc = ({body}).to(tl.{acc.dtype})"]
        else:
            lines += ["i = 0", "while i < n_iter:", f"    acc = ({body}).to(tl.{acc.dtype})", "    i += 1"]
        lines.append(f"{name} = acc")
        self.p.stmts.append((name, lines))
        self.p.features.add("loop")
        self.vals.append(Val(name, acc.dtype, acc.shape, acc.inexact or b.inexact))

    def branch(self) -> None:
        pr = self.pair(lambda v: v.dtype != "int1")
        if pr is None:
            return
        a, ea, b, eb, shape = pr
        t = promote(a.dtype, b.dtype)
        ops = self.draw(st.sampled_from((("+", "-"), ("*", "+"), ("-", "*"))))
        cond = self.draw(st.sampled_from(("flag > 1", "pid == 0", "n_iter > 1")))
        name = f"v{self.count}"
        self.count += 1
        self.p.stmts.append((name, [f"if {cond}:", f"    {name} = ({ea} {ops[0]} {eb}).to(tl.{t})", "else:",
                                    f"    {name} = ({ea} {ops[1]} {eb}).to(tl.{t})"]))
        self.p.features.add("branch")
        self.vals.append(Val(name, t, shape, a.inexact or b.inexact))


    def scalar(self) -> str | None:
        """A scalar loaded from one of the inputs (one per program), or None."""
        if not self.p.inputs:
            return None
        i = self.draw(st.integers(0, len(self.p.inputs) - 1))
        name = f"s{self.count}"
        self.count += 1
        self.p.stmts.append((name, [f"{name} = tl.load(in{i}_ptr + pid)"]))
        self.p.features.add("loaded_scalar")
        return name

    def loaded_branch(self) -> None:
        """A runtime branch on a scalar loaded from memory, with tiles computed on both sides."""
        s = self.scalar()
        pr = self.pair(lambda v: v.dtype != "int1")
        if s is None or pr is None:
            return
        a, ea, b, eb, shape = pr
        t = promote(a.dtype, b.dtype)
        cond = self.draw(st.sampled_from((f"{s} > 0", f"{s} == 0", f"{s} < 3", f"{s} != {s}")))
        ops = self.draw(st.sampled_from((("+", "-"), ("*", "+"), ("-", "*"))))
        name = f"v{self.count}"
        self.count += 1
        lines = [f"if {cond}:", f"    {name} = ({ea} {ops[0]} {eb}).to(tl.{t})"]
        if self.draw(st.booleans()):  # an elif on a second loaded scalar
            s2 = self.scalar()
            lines += [f"elif {s2} < 0:", f"    {name} = ({eb} - {ea}).to(tl.{t})"]
        lines += ["else:", f"    {name} = ({ea} {ops[1]} {eb}).to(tl.{t})"]
        self.p.stmts.append((name, lines))
        self.p.features.add("branch")
        self.vals.append(Val(name, t, shape, a.inexact or b.inexact))

    def early_return(self) -> None:
        """Some programs return before their stores (their outputs keep the initial contents)."""
        if self.p.early_return:
            return
        if self.draw(st.booleans()):
            self.p.early_return = "pid == 1"
        elif self.p.inputs:
            i = self.draw(st.integers(0, len(self.p.inputs) - 1))
            self.p.early_return = f"tl.load(in{i}_ptr + pid) > 0"
        self.p.features.add("early_return")

    def atomic(self) -> None:
        """An atomic on this program's own region of a buffer (so the old values are deterministic); the old
        values are used. Shapes include [M, 1], whose layout replicates elements across threads."""
        v = self.pick(lambda v: len(v.shape) in (1, 2) and not v.inexact)
        if v is None:
            return
        t = self.draw(st.sampled_from(("int32", "uint32", "float32")))
        kind = self.draw(st.sampled_from(("add", "max", "min", "xchg", "and", "or", "xor", "cas")))
        if t == "float32" and kind in ("and", "or", "xor"):
            kind = "add"
        M, N = self.p.M, self.p.N
        if len(v.shape) == 2:
            rows, cols = v.shape
            e = v.name
        elif self.draw(st.booleans()):
            rows, cols, e = v.shape[0], 1, f"{v.name}[:, None]"
        else:
            rows, cols, e = 1, v.shape[0], f"{v.name}[None, :]"
        if rows * cols > M * N:
            return
        x = self.castable(Val(e, v.dtype, (rows, cols)))
        if t == "uint32" and (is_float(v.dtype) or dt(v.dtype).is_int_signed()):
            x = f"tl.abs({x})"
        value = f"({x}).to(tl.{t})"
        k = len(self.p.atomics)
        self.p.atomics.append(t)
        addr = f"at{k}_ptr + pid * {M * N} + tl.arange(0, {rows})[:, None] * {cols} + tl.arange(0, {cols})[None, :]"
        masked = self.draw(st.booleans())
        mask = f", mask=tl.arange(0, {rows})[:, None] + tl.arange(0, {cols})[None, :] < flag + {rows}" \
            if masked else ""
        if kind == "cas":
            call = f"tl.atomic_cas({addr}, tl.full(({rows}, {cols}), 2, tl.{t}), {value})"
        else:
            call = f"tl.atomic_{kind}({addr}, {value}{mask})"
        self.p.features.add("atomic")
        self.new(call, t, (rows, cols))

    def shape_move(self) -> None:
        """Layout-changing shape ops: join/split, interleave, permute, expand_dims + broadcast of a reduction."""
        a = self.pick(lambda v: len(v.shape) >= 1)
        if a is None:
            return
        kind = self.draw(st.sampled_from(("join_split", "interleave", "permute", "reduce_back")))
        if kind == "join_split":
            b = self.pick(lambda v: v.shape == a.shape and v.dtype == a.dtype) or a
            self.new(f"tl.split(tl.join({a.name}, {b.name}))[{self.draw(st.integers(0, 1))}]", a.dtype, a.shape)
        elif kind == "interleave" and len(a.shape) == 1 and a.shape[0] <= 16:
            self.new(f"tl.interleave({a.name}, {a.name} + {a.name})", a.dtype if a.dtype != "int1" else "int1",
                     (2 * a.shape[0],))
        elif kind == "permute" and len(a.shape) == 2:
            self.new(f"tl.permute({a.name}, (1, 0))", a.dtype, a.shape[::-1])
        elif kind == "reduce_back" and len(a.shape) == 2 and a.dtype not in ("int1",) and not a.inexact:
            axis = self.draw(st.integers(0, 1))
            x = no_nan(a, a.name)
            t = a.dtype if bits(a.dtype) >= 32 else promote(a.dtype, "float32" if is_float(a.dtype) else "int32")
            self.new(f"{x} - tl.max({x}, axis={axis}, keep_dims=True)", t, a.shape)

    def dot(self) -> None:
        a = self.pick(lambda v: len(v.shape) == 2 and v.dtype != "int1")
        if a is None:
            return
        P, Q = a.shape
        b = self.pick(lambda v: len(v.shape) == 2 and v.dtype != "int1" and v.shape[0] == Q)
        t = self.draw(st.sampled_from(("float16", "bfloat16", "float32", "int8")))
        if t == "int8" and (a.inexact or (b is not None and b.inexact)):
            t = "float32"
        ea = f"{self.castable(a)}.to(tl.{t})"
        if b is None:  # a @ a^T
            eb, R = f"tl.trans({ea})", P
        else:
            eb, R = f"{self.castable(b)}.to(tl.{t})", b.shape[1]
        self.p.features.add("dot")
        if is_float(t):
            self.p.features.add("float_reduction")
            self.p.floats.add(t)
        self.new(f"tl.dot({ea}, {eb})", "int32" if t == "int8" else "float32", (P, R), inexact=is_float(t))

    def castable(self, v: Val) -> str:
        """``v`` ready for .to(any dtype), clamped to [-16, 16] (into int8's range for an int8 dot; and a float
        dot's sums of large products would differ by more than the outputs' scale shows)."""
        if is_float(v.dtype):
            return f"tl.minimum(tl.maximum(tl.where({v.name} == {v.name}, {v.name}, 0.0), -16.0), 16.0)"
        if dt(v.dtype).is_int_unsigned():
            return f"tl.minimum({v.name}, 16)"
        return f"tl.minimum(tl.maximum({v.name}, -16), 16)"


STEPS = ("binary", "binary", "literal", "unary", "cast", "where", "reduce", "scan", "shape_op", "loop", "branch",
         "dot", "loaded_branch", "early_return", "atomic", "shape_move")


@st.composite
def programs(draw, max_steps: int = 8) -> Program:
    M = draw(st.sampled_from(SIZES))
    N = draw(st.sampled_from(SIZES))
    grid = draw(st.integers(1, 3))
    p = Program(M=M, N=N, grid=grid)
    b = Builder(draw, p)
    for i in range(draw(st.integers(1, 3))):
        t = draw(st.sampled_from(ALL_TYPES[1:] + ("int1",)))
        layout = draw(st.sampled_from(("2d", "t", "row", "col")))
        masked = draw(st.booleans())
        other = draw(st.sampled_from((0, 1, 3))) if not is_float(t) else draw(st.sampled_from((0.0, 1.5, -2.0)))
        if t == "int1":
            other = draw(st.sampled_from((0, 1))) if masked else 0
        p.inputs.append({"dtype": t, "layout": layout, "other": other, "masked": masked})
        shape = {"2d": (M, N), "t": (M, N), "row": (M,), "col": (N,)}[layout]
        b.vals.append(Val(f"x{i}", t, shape))
        if is_float(t):
            p.floats.add(t)
    if draw(st.booleans()):
        b.vals.append(Val("pid", "int32", ()))
    for _ in range(draw(st.integers(1, max_steps))):
        getattr(b, draw(st.sampled_from(STEPS)))()
    derived = [v for v in b.vals if v.name.startswith("v")] or b.vals[:1]
    outs = [derived[-1]]
    for v in derived[:-1]:
        if len(outs) < 3 and draw(st.booleans()):
            outs.append(v)
    p.outputs = outs
    p.masked_store = draw(st.booleans())
    p.n_iter = draw(st.integers(0, 3))
    p.flag = draw(st.integers(0, 2))
    size = M * N
    p.n = grid * size - draw(st.sampled_from((0, 0, 1, size // 2 + 1)))
    p.seed = draw(st.integers(0, 2**16))
    return p
