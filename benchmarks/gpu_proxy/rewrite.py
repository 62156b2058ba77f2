"""MSL -> CUDA: the mechanical rewrite of the GPU proxy, plus one generated ``__global__`` wrapper per kernel.

The exact MSL Enceladus emits becomes a CUDA translation unit, line for line (``#line`` maps nvcc's
messages back to the MSL). Every rule is textual and local; the semantics live in
``include/metal_cuda.cuh``:

1. comments are blanked; Metal attributes ``[[...]]`` are removed (``[[max_total_threads_per_threadgroup(N)]]``
   becomes ``__launch_bounds__(N)`` on the kernel's wrapper);
2. ``#include <metal_*>``, the Metal Performance Primitives include, ``#pragma METAL ...`` and
   ``using namespace metal;`` are dropped: the whole file is placed inside ``namespace metal { ... }``, so
   unqualified names (``floor``, ``max``, ``simd_sum``, ``float4``) find the header's Metal definitions
   and never CUDA's global overloads;
3. ``kernel void NAME(`` becomes a ``__device__ __forceinline__`` function; file-scope ``static inline``
   helpers become ``__device__``; file-scope ``constant`` data becomes ``__device__ const``;
4. a function-scope ``threadgroup T name[N];`` becomes ``__shared__ __align__(16) T name[N];``;
5. the address-space qualifiers ``device``, ``constant``, ``thread``, ``threadgroup`` and Metal 3.2's
   ``coherent(device)`` are removed from types (CUDA's generic addressing; global memory is coherent);
6. ``1.5h`` / ``2bf`` literals become ``half(1.5f)`` / ``bfloat(2.0f)``; ``#pragma unroll full`` becomes
   ``#pragma unroll``.

A DIAGNOSTIC, never the default and never a config Enceladus ships: ``translate(..., diagnostic_fast_math=True)``
turns every ``precise::`` call into its ``fast::`` form (``fast::exp`` is ``__expf``, an ``ex2.approx`` like
Triton's ``tl.exp`` on NVIDIA; ``fast::exp2`` is ``ex2.approx.ftz``, Triton's ``tl.exp2``) and asks nvcc for ``-prec-div=false`` (fp32 ``/`` becomes ``div.full.f32``,
Triton's lowering of ``/``), so the table can time our same MSL with Triton's approximate math: what is
left of a gap against Triton is then not precision (issue 22).

The wrapper ``extern "C" __global__ enc_proxy_NAME`` takes the kernel's buffers in parameter order:
pointers as device pointers, ``constant T&`` argument structs by value (CUDA's parameter space), and
computes Metal's builtins (``threadgroup_position_in_grid``, ``thread_index_in_threadgroup``, ...)
from ``blockIdx``/``threadIdx``. The proxy launches 1-D blocks only (``cuda.launch`` takes one block size, as
Enceladus launches (n, 1, 1) threadgroups on Metal), so ``thread_index_in_threadgroup`` is ``threadIdx.x``:
one register read, as on Metal, where flattening a 3-D index cost three reads and two multiply-adds at the
head of every kernel, a cost Apple's GPUs do not pay.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from enceladus.backends.cpu.signature import KernelParam, parse_kernels, strip_comments


class ProxyTranslationError(Exception):
    """The MSL uses something the proxy's rewrite does not handle (a failure to fix, never to skip)."""


@dataclass(frozen=True)
class WrapperParam:
    """One parameter of the generated ``__global__`` wrapper: a buffer slot passed as a device pointer
    (``kind='pointer'``) or as the bytes of a ``constant T&`` struct (``kind='bytes'``)."""

    name: str
    slot: int
    kind: str
    cuda_type: str


@dataclass(frozen=True)
class CudaKernel:
    """One translated kernel: the wrapper's symbol, its parameters and the declared launch bound."""

    name: str
    symbol: str
    params: tuple[WrapperParam, ...]
    launch_bound: int | None


@dataclass(frozen=True)
class CudaModule:
    """A translated MSL file: CUDA source text and its kernels by MSL name."""

    source: str
    kernels: dict[str, CudaKernel]
    nvcc_flags: tuple[str, ...] = ()  # extra nvcc options the source needs (only the diagnostic sets any)


_ATTRIBUTE = re.compile(r"\[\[\s*([A-Za-z_]\w*)\s*(?:\(([^\]]*)\))?\s*\]\]")
_MAX_THREADS = re.compile(r"\[\[\s*max_total_threads_per_threadgroup\s*\(\s*(\d+)\s*\)\s*\]\]")
_KERNEL_DECL = re.compile(r"(?:\bkernel\s+|\[\[\s*kernel\s*\]\]\s*)void\s+([A-Za-z_]\w*)\s*\(")
_DROP_LINE = re.compile(
    r"^\s*(?:#\s*include\s*<(?:metal_\w+|MetalPerformancePrimitives/[\w.]+)>|#\s*pragma\s+METAL\b.*"
    r"|using\s+namespace\s+metal\s*;)\s*$"
)
_TG_DECL = re.compile(
    r"(?P<lead>(?:^|[;{}])\s*)threadgroup\s+(?P<type>[A-Za-z_][\w:<>, ]*?)\s+(?P<name>[A-Za-z_]\w*)"
    r"\s*(?P<dims>(?:\[[^\]\[;]+\]\s*)*);",
    re.MULTILINE,
)
_ADDRESS_SPACE = re.compile(r"\b(?:device|constant|thread|threadgroup)\b(?!\s*::)")
# Metal 3.2 coherence qualifiers (coherent(device) device int* p): CUDA's global memory is coherent
# across the device for atomics and fenced accesses, so the qualifier has no CUDA spelling.
_COHERENT = re.compile(r"\bcoherent\s*\(\s*\w+\s*\)")
_LITERAL = re.compile(
    r"(?<![\w.])(\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+(?:[eE][+-]?\d+)?)(h|bf)\b"
)
_PRECISE = re.compile(r"\bprecise::")
_UNROLL_FULL = re.compile(r"^(\s*#\s*pragma\s+unroll)\s+full\b", re.MULTILINE)
_STATIC_INLINE = re.compile(r"\bstatic\s+inline\b|^(\s*)inline\b")
_FILE_CONSTANT = re.compile(r"^(\s*)constant\b")
# A file-scope function definition or declaration that none of the rules above marked __device__.
_FUNCTION_HEAD = re.compile(r"^\s*(?:template\s*<[^>]*>\s*)?[A-Za-z_][\w:<>, ]*[\s*&]+[A-Za-z_]\w*\s*\(")
_NOT_FUNCTION = ("struct", "using", "typedef", "#", "enum", "union", "namespace", "static_assert", "class")

_BUILTIN_EXPR = {
    "thread_position_in_grid": ("blockIdx.x * blockDim.x + threadIdx.x", "blockIdx.y * blockDim.y + threadIdx.y",
                                "blockIdx.z * blockDim.z + threadIdx.z"),
    "threadgroup_position_in_grid": ("blockIdx.x", "blockIdx.y", "blockIdx.z"),
    "threadgroups_per_grid": ("gridDim.x", "gridDim.y", "gridDim.z"),
    "threads_per_threadgroup": ("blockDim.x", "blockDim.y", "blockDim.z"),
    "thread_position_in_threadgroup": ("threadIdx.x", "threadIdx.y", "threadIdx.z"),
    "threads_per_grid": ("gridDim.x * blockDim.x", "gridDim.y * blockDim.y", "gridDim.z * blockDim.z"),
    "thread_index_in_threadgroup": ("enc_linear_tid",),
    "thread_index_in_simdgroup": ("(enc_linear_tid & 31u)",),
    "simdgroup_index_in_threadgroup": ("(enc_linear_tid >> 5)",),
    "simdgroups_per_threadgroup": ("((blockDim.x * blockDim.y * blockDim.z + 31u) >> 5)",),
    "threads_per_simdgroup": ("32u",),
    "thread_execution_width": ("32u",),
}


def _strip_spaces(msl_type: str) -> str:
    return " ".join(_ADDRESS_SPACE.sub(" ", _COHERENT.sub(" ", msl_type)).split())


def _wrapper_param(p: KernelParam) -> WrapperParam:
    if p.attribute == "threadgroup":
        raise ProxyTranslationError(
            f"parameter '{p.name}' is a [[threadgroup({p.index})]] buffer; Enceladus kernels declare their "
            "threadgroup memory statically, and the proxy has no dynamic threadgroup parameters")
    base = _strip_spaces(p.msl_type)
    if base.endswith("&"):
        # the qualifier only: a struct named const_copy_kernel_args keeps its name
        return WrapperParam(p.name, int(p.index), "bytes", re.sub(r"\bconst\b", "", base[:-1]).strip())
    return WrapperParam(p.name, int(p.index), "pointer", base)


def _builtin_arg(p: KernelParam) -> str:
    exprs = _BUILTIN_EXPR[p.attribute]
    base = _strip_spaces(p.msl_type).replace("const ", "").strip()
    n = int(base[-1]) if base[-1].isdigit() else 1
    if n == 1:
        return f"{base}({exprs[0]})"
    return f"{base}({', '.join(exprs[:n])})"


def _launch_bounds(text: str) -> dict[str, int]:
    """Kernel name -> the N of a [[max_total_threads_per_threadgroup(N)]] in its declaration."""
    bounds: dict[str, int] = {}
    previous_end = 0
    for m in _KERNEL_DECL.finditer(text):
        body = text.find("{", m.end())
        region = text[previous_end : body if body >= 0 else len(text)]
        found = _MAX_THREADS.findall(region[max(0, m.start() - previous_end - 200):])
        if found:
            bounds[m.group(1)] = int(found[-1])
        previous_end = body if body >= 0 else len(text)
    return bounds


def _literal(m: re.Match[str]) -> str:
    num, suffix = m.group(1), m.group(2)
    if not any(c in num for c in ".eE"):
        num += ".0"
    return f"{'half' if suffix == 'h' else 'bfloat'}({num}f)"


def _rewrite_body(text: str) -> str:
    lines = text.split("\n")
    out, depth, parens = [], 0, 0
    for number, line in enumerate(lines, 1):
        if _DROP_LINE.match(line):
            out.append("")
            continue
        if depth == 0 and parens == 0 and line.strip():
            line, n = _KERNEL_DECL.subn(lambda m: f"__device__ __forceinline__ void {m.group(1)}(", line)
            if not n:
                line, n = _STATIC_INLINE.subn(
                    lambda m: (m.group(1) or "") + ("static " if m.group(0).lstrip().startswith("static") else "")
                    + "__device__ __forceinline__", line)
            if not n:
                line, n = _FILE_CONSTANT.subn(r"\1static __device__ const", line)
            stripped = line.lstrip()
            if (not n and _FUNCTION_HEAD.match(line) and not stripped.startswith(_NOT_FUNCTION)
                    and "__device__" not in line):
                raise ProxyTranslationError(
                    f"line {number}: a file-scope function the rewrite does not recognise: {line.strip()!r}; "
                    "teach benchmarks/gpu_proxy/rewrite.py this form")
        depth += line.count("{") - line.count("}")
        parens += line.count("(") - line.count(")")
        out.append(line)
    return "\n".join(out)


def translate(msl: str, header: str = "metal_cuda.cuh", inner_namespace: str = "", symbol_prefix: str = "enc_proxy_",
              filename: str = "kernel.metal", launch_bounds: bool = True,
              diagnostic_fast_math: bool = False) -> CudaModule:
    """Rewrite one MSL file (as Enceladus emits it) into a CUDA translation unit with wrappers.

    ``inner_namespace`` (inside ``metal``) and ``symbol_prefix`` let several files share one translation
    unit (the syntax check of a whole corpus); ``filename`` names the MSL in ``#line`` directives;
    ``launch_bounds=False`` drops the declared threadgroup size (to measure what it changes);
    ``diagnostic_fast_math=True`` is the diagnostic of the module docstring (fast:: math, approximate division)."""
    signatures = parse_kernels(msl)
    if not signatures:
        raise ProxyTranslationError("no 'kernel void NAME(...)' in the MSL")
    text = strip_comments(msl)
    bounds = _launch_bounds(text)
    text = _ATTRIBUTE.sub(lambda m: " " * len(m.group(0)), text)
    text = _COHERENT.sub(lambda m: " " * len(m.group(0)), text)
    text = _rewrite_body(text)
    text = _TG_DECL.sub(
        lambda m: f"{m.group('lead')}__shared__ __align__(16) {' '.join(m.group('type').split())} "
                  f"{m.group('name')}{''.join(m.group('dims').split())};", text)
    text = _ADDRESS_SPACE.sub("", text)
    text = _LITERAL.sub(_literal, text)
    text = _UNROLL_FULL.sub(r"\1     ", text)
    if diagnostic_fast_math:
        text = _PRECISE.sub("fast::", text)

    kernels: dict[str, CudaKernel] = {}
    wrappers = []
    for name, sig in signatures.items():
        params = tuple(_wrapper_param(p) for p in sig.params if p.attribute in ("buffer", "threadgroup"))
        if sorted(p.slot for p in params) != [p.slot for p in params]:
            params = tuple(sorted(params, key=lambda p: p.slot))
        symbol = f"{symbol_prefix}{name}"
        bound = bounds.get(name) if launch_bounds else None
        decl = ", ".join(f"{p.cuda_type} {p.name}" for p in params) or "void"
        call = ", ".join(p.name if p.attribute in ("buffer", "threadgroup") else _builtin_arg(p) for p in sig.params)
        wrappers.append(
            f'extern "C" __global__ void {f"__launch_bounds__({bound}) " if bound else ""}{symbol}({decl}) {{\n'
            "  const uint enc_linear_tid = threadIdx.x;  // 1-D blocks only (cuda.launch), as Metal's threadgroups\n"
            "  (void)enc_linear_tid;\n"
            f"  {name}({call});\n}}\n")
        kernels[name] = CudaKernel(name, symbol, params, bound)
    open_ns = "namespace metal {" + (f" namespace {inner_namespace} {{" if inner_namespace else "") + "\n"
    close_ns = ("}" if inner_namespace else "") + "}  // namespace metal\n"
    source = "".join([
        "// Generated by benchmarks/gpu_proxy/rewrite.py from Enceladus MSL (see its docstring for the rules).\n",
        f'#include "{header}"\n' if header else "",
        open_ns,
        f'#line 1 "{filename}"\n',
        text,
        f'\n#line 1 "{filename}.wrappers.cu"\n',
        *wrappers,
        close_ns,
    ])
    return CudaModule(source, kernels, ("-prec-div=false",) if diagnostic_fast_math else ())
