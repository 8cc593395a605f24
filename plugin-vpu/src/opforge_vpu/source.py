"""Making MYRIAD OpenCL C run unchanged on another OpenCL device: the preamble, the ``half`` shim,
the manual-DMA companions, and the kernel signatures (argument names bind MVCL parameters).

* ``half`` on a device without ``cl_khr_fp16``: the program is compiled with ``half`` (and
  ``halfN``, ``convert_half*``, ``vload_half*``/``vstore_half*``) mapped onto ``float``. The VPU
  device then hands every half tensor to such a kernel as a float copy and rounds what it writes
  back to half, so storage stays FP16 and arithmetic runs in float (more accurate than the
  VPU's half arithmetic, never less). ``sizeof(half)`` is 4 under the shim: byte sizes a binding
  computes for half data (inter-stage buffers, local data) are doubled by the device, so kernels
  that compute offsets with ``sizeof(half)`` stay inside their buffers. Bit tricks on half
  (``as_short(h)``) cannot work under the shim; such kernels need a device with ``cl_khr_fp16``.
* Manual DMA: a kernel ``K`` with ``__dma_preload_K`` / ``__dma_postwrite_K`` companions (same
  arguments) becomes one kernel ``K`` that runs preload, a barrier, the body of ``K``, a barrier,
  and postwrite, in every work group: on an ordinary OpenCL device, ``__local`` memory lives only
  as long as one kernel, so the three cannot be separate launches. ``WorkGroupDmaCreate*``
  are work-group-cooperative copies (every work-item of the group calls them, as the VPU's DMA
  built-ins require) ending with a barrier, so the data is in place when they return.
"""

from __future__ import annotations

import dataclasses
import re

from opforge_gpu.runtime import KernelConfigError

_TYPES = ("uchar", "char", "short", "ushort", "int", "uint", "long", "ulong", "half", "float")

def _undef_first(lines: list[str]) -> list[str]:
    """Each ``#define`` preceded by an ``#undef``: drivers define some of these names as macros."""
    out = []
    for line in lines:
        if line.startswith("#define "):
            out.append("#undef " + line.split()[1].split("(")[0])
        out.append(line)
    return out


#: maps MYRIAD's half arithmetic onto float where the device has no cl_khr_fp16
HALF_SHIM = "\n".join(_undef_first([
    "#define OPFORGE_VPU_HALF_SHIM 1",
    "#define half float",
    *[f"#define half{n} float{n}" for n in (2, 3, 4, 8, 16)],
    "#define convert_half convert_float",
    *[f"#define convert_half{suf} convert_float{suf}" for suf in ("_rte", "_rtz", "_rtp", "_rtn")],
    *[f"#define convert_half{n} convert_float{n}" for n in (2, 3, 4, 8, 16)],
    "#define vload_half(i, p) ((p)[(i)])",
    "#define vloada_half(i, p) ((p)[(i)])",
    *[f"#define vstore_half{r}(v, i, p) ((p)[(i)] = (float)(v))" for r in ("", "_rte", "_rtz", "_rtp", "_rtn")],
    *[f"#define vload_half{n}(i, p) vload{n}((i), (p))" for n in (2, 3, 4, 8, 16)],
    *[f"#define vloada_half{n}(i, p) vload{n}((i), (p))" for n in (2, 3, 4, 8, 16)],
    *[f"#define vstore_half{n}{r}(v, i, p) vstore{n}((v), (i), (p))" for n in (2, 3, 4, 8, 16)
      for r in ("", "_rte", "_rtz", "_rtp", "_rtn")],
    "#ifndef HALF_MAX", "#define HALF_MAX 65504.0f", "#endif",
    "#ifndef HALF_MIN", "#define HALF_MIN 6.103515625e-05f", "#endif",
    "#ifndef HALF_EPSILON", "#define HALF_EPSILON 9.765625e-04f", "#endif",
    "",
]))

#: the manual-DMA built-ins of the MYRIAD OpenCL compiler, as work-group-cooperative copies
DMA_PREAMBLE = r"""
inline size_t __opf_lid(void) {
    return get_local_id(0) + get_local_size(0) * (get_local_id(1) + get_local_size(1) * get_local_id(2));
}
inline size_t __opf_lsize(void) { return get_local_size(0) * get_local_size(1) * get_local_size(2); }
#define __OPF_DMA_COPY(SRC, DST)                                                              \
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);                                      \
    for (size_t p = 0; p < num_planes; ++p) {                                                 \
        for (size_t j = __opf_lid(); j < size; j += __opf_lsize()) {                          \
            size_t sl = j / src_width, dl = j / dst_width;                                    \
            (DST)[p * dst_plane_stride + dl * dst_stride + (j - dl * dst_width)] =            \
                (SRC)[p * src_plane_stride + sl * src_stride + (j - sl * src_width)];         \
        }                                                                                     \
    }                                                                                         \
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
inline void __opf_dma_g2l(const __global uchar* src, __local uchar* dst, size_t src_width, size_t dst_width,
                          size_t src_stride, size_t dst_stride, size_t num_planes, size_t src_plane_stride,
                          size_t dst_plane_stride, size_t size) { __OPF_DMA_COPY(src, dst) }
inline void __opf_dma_l2g(const __local uchar* src, __global uchar* dst, size_t src_width, size_t dst_width,
                          size_t src_stride, size_t dst_stride, size_t num_planes, size_t src_plane_stride,
                          size_t dst_plane_stride, size_t size) { __OPF_DMA_COPY(src, dst) }
event_t __attribute__((overloadable)) WorkGroupDmaCreateStrideTransaction(
        const __global void* src, __local void* dst, size_t src_width, size_t dst_width, size_t src_stride,
        size_t dst_stride, size_t size, event_t event) {
    __opf_dma_g2l((const __global uchar*)src, (__local uchar*)dst, src_width, dst_width, src_stride, dst_stride,
                  1, 0, 0, size);
    return event;
}
event_t __attribute__((overloadable)) WorkGroupDmaCreateStrideTransaction(
        const __local void* src, __global void* dst, size_t src_width, size_t dst_width, size_t src_stride,
        size_t dst_stride, size_t size, event_t event) {
    __opf_dma_l2g((const __local uchar*)src, (__global uchar*)dst, src_width, dst_width, src_stride, dst_stride,
                  1, 0, 0, size);
    return event;
}
event_t __attribute__((overloadable)) WorkGroupDmaCreate3DTransaction(
        const __global void* src, __local void* dst, size_t src_width, size_t dst_width, size_t src_stride,
        size_t dst_stride, size_t num_planes, size_t src_plane_stride, size_t dst_plane_stride, size_t size,
        event_t event) {
    __opf_dma_g2l((const __global uchar*)src, (__local uchar*)dst, src_width, dst_width, src_stride, dst_stride,
                  num_planes, src_plane_stride, dst_plane_stride, size);
    return event;
}
event_t __attribute__((overloadable)) WorkGroupDmaCreate3DTransaction(
        const __local void* src, __global void* dst, size_t src_width, size_t dst_width, size_t src_stride,
        size_t dst_stride, size_t num_planes, size_t src_plane_stride, size_t dst_plane_stride, size_t size,
        event_t event) {
    __opf_dma_l2g((const __local uchar*)src, (__global uchar*)dst, src_width, dst_width, src_stride, dst_stride,
                  num_planes, src_plane_stride, dst_plane_stride, size);
    return event;
}
#define WaitWorkGroupDmaEvents(num_events, event_list) barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)
"""


@dataclasses.dataclass(frozen=True)
class Arg:
    """One kernel argument: its name, base type (``half``, ``float4``, ``int``), address space
    (``global``, ``local``, ``constant``, ``private``) and whether it is a pointer."""

    name: str
    type: str
    space: str
    pointer: bool

    def to_json(self) -> list[object]:
        return [self.name, self.type, self.space, self.pointer]

    @staticmethod
    def from_json(v: list[object]) -> Arg:
        return Arg(str(v[0]), str(v[1]), str(v[2]), bool(v[3]))


@dataclasses.dataclass
class _Kernel:
    name: str
    head_start: int  # where "__kernel" starts
    head_end: int  # just after the "(" of the parameter list
    params_end: int  # the ")" closing it
    attrs: str
    line: int


_HEAD = re.compile(r"(?<![\w])(?:__kernel|kernel)\s+((?:__attribute__\s*\(\(.*?\)\)\s*)*)void\s+(\w+)\s*\(",
                   re.DOTALL)
_SPACES = {"__global": "global", "global": "global", "__local": "local", "local": "local",
           "__constant": "constant", "constant": "constant", "__private": "private", "private": "private"}
_QUALIFIERS = {"const", "restrict", "__restrict", "volatile", "__read_only", "read_only", "__write_only",
               "write_only"}


def strip_comments(text: str) -> str:
    """``text`` with comments blanked (newlines kept, so line numbers stay true)."""
    def blank(m: re.Match[str]) -> str:
        s = m.group(0)
        if s.startswith("/"):
            return re.sub(r"[^\n]", " ", s)
        return s  # a string literal
    return re.sub(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', blank, text, flags=re.DOTALL)


def _kernels(text: str, label: str) -> list[_Kernel]:
    out = []
    for m in _HEAD.finditer(text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        if depth:
            line = text.count("\n", 0, m.start()) + 1
            raise KernelConfigError(f"{label}:{line}: the parameter list of kernel '{m.group(2)}' is not closed")
        out.append(_Kernel(m.group(2), m.start(), m.end(), i - 1, m.group(1) or "", text.count("\n", 0, m.start()) + 1))
    return out


def parse_args(params: str, kernel: str, label: str, line: int) -> list[Arg]:
    """The arguments of a kernel parameter list (``__global const half* restrict src, int C``)."""
    out: list[Arg] = []
    text = params.strip()
    if not text or text == "void":
        return out
    for part in text.split(","):
        words = re.findall(r"\w+|\*", part)
        if len(words) < 2:
            raise KernelConfigError(f"{label}:{line}: kernel '{kernel}': cannot read the parameter '{part.strip()}'")
        name = words[-1]
        space = "private"
        pointer = "*" in words
        base: list[str] = []
        for w in words[:-1]:
            if w in _SPACES:
                space = _SPACES[w]
            elif w not in _QUALIFIERS and w != "*":
                base.append(w)
        if pointer and space == "private":
            space = "global"  # OpenCL 1.2 pointers default to __private, but kernel pointers must be named
        out.append(Arg(name, " ".join(base), space, pointer))
    return out


@dataclasses.dataclass
class Prepared:
    """A MYRIAD source made ready for this device: the text to build and the signature of every
    kernel it defines (after the DMA rewrite)."""

    source: str
    kernels: dict[str, list[Arg]]


def prepare(sources: list[tuple[str, str]], fp16: bool) -> Prepared:
    """Build-ready source from ``(label, text)`` pairs: preamble, shim where the device lacks
    ``cl_khr_fp16``, ``#line`` directives naming the files, and the DMA rewrite."""
    head = ["#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n" if fp16 else HALF_SHIM]
    if any("WorkGroupDma" in text or "WaitWorkGroupDmaEvents" in text for _, text in sources):
        # only where used: the built-ins rely on clang's overloadable attribute (PoCL, Intel, AMD
        # and Mesa compilers have it), which a kernel without DMA should not depend on
        head.append(DMA_PREAMBLE)
    body: list[str] = []
    kernels: dict[str, list[Arg]] = {}
    for label, raw in sources:
        text = strip_comments(raw)
        if not fp16:
            # the shim defines half as float: the program's own request for the extension would be
            # an error on a driver that rejects unknown extensions, and is not needed any more
            text = re.sub(r"#\s*pragma\s+OPENCL\s+EXTENSION\s+cl_khr_fp16\s*:\s*enable", "", text)
        text, sigs, wrappers = _rewrite_dma(text, label)
        for name, args in sigs.items():
            kernels[name] = args
        body.append(f'#line 1 "{label}"\n{text}\n{wrappers}')
    return Prepared("".join(head) + "".join(body), kernels)


def _rewrite_dma(text: str, label: str) -> tuple[str, dict[str, list[Arg]], str]:
    found = _kernels(text, label)
    by_name = {k.name: k for k in found}
    sigs = {k.name: parse_args(text[k.head_end:k.params_end], k.name, label, k.line) for k in found}
    companions = {n for n in by_name if n.startswith(("__dma_preload_", "__dma_postwrite_"))}
    mains = [k for k in found if k.name not in companions and (
        f"__dma_preload_{k.name}" in by_name or f"__dma_postwrite_{k.name}" in by_name)]
    for c in companions:
        main = c[len("__dma_preload_"):] if c.startswith("__dma_preload_") else c[len("__dma_postwrite_"):]
        if main not in by_name:
            raise KernelConfigError(f"{label}:{by_name[c].line}: DMA companion kernel '{c}' has no kernel '{main}'")
    if not mains:
        return text, {n: a for n, a in sigs.items()}, ""
    edits: list[tuple[int, int, str]] = []
    wrappers = []
    for k in mains:
        edits.append((k.head_start, k.head_end, f"void __opf_body_{k.name}("))
        names = ", ".join(a.name for a in sigs[k.name])
        steps = []
        for prefix in ("__dma_preload_", None, "__dma_postwrite_"):
            fn = f"__opf_body_{k.name}" if prefix is None else prefix + k.name
            if prefix is not None and fn not in by_name:
                continue
            if prefix is not None:
                comp = by_name[fn]
                edits.append((comp.head_start, comp.head_end, f"void {fn}("))
                if [(a.type, a.space, a.pointer) for a in sigs[fn]] != [(a.type, a.space, a.pointer) for a in sigs[k.name]]:
                    raise KernelConfigError(
                        f"{label}:{comp.line}: DMA companion '{fn}' must take the same arguments as kernel "
                        f"'{k.name}' (line {k.line})")
            steps.append(f"    {fn}({names});\n    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);\n")
        params = text[k.head_end:k.params_end]
        wrappers.append(f'#line {k.line} "{label}"\n__kernel {k.attrs}void {k.name}({params}) {{\n'
                        + "".join(steps) + "}\n")
    for start, end, repl in sorted(edits, reverse=True):
        # keep the newlines of the replaced head, so #line numbers still match the file
        text = text[:start] + repl + "\n" * text.count("\n", start, end) + text[end:]
    kept = {n: a for n, a in sigs.items() if n not in companions}
    return text, kept, "".join(wrappers)
