"""Running an MVCL layer: Where selection, stages in order, arguments bound by name, format
reorders, the half shim's float copies, inter-stage buffers, local data and work sizes."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from opforge.element_type import Type
from opforge.errors import UnsupportedOpError
from opforge.graph import Node
from opforge_gpu.runtime import (
    Epilogue,
    KernelConfigError,
    LocalArg,
    Lowering,
    ScalarArg,
    Tensor,
    bfyx,
    contiguous,
    pitches,
    run_unary,
    static_shape,
    storage_for,
    strided_copy,
)
from opforge_vpu.binary import load_binary
from opforge_vpu.mvcl.config import LOCAL_MEMORY_BUDGET, Param, Stage, is_literal, selector
from opforge_vpu.source import Arg, prepare

#: OpenCL scalar and pointer base types -> element types
_CL_TYPES = {"float": Type.f32, "half": Type.f16, "int": Type.i32, "uint": Type.u32, "short": Type.i16,
             "ushort": Type.u16, "char": Type.i8, "uchar": Type.u8, "long": Type.i64, "ulong": Type.u64}
#: the storage format the BFYX view uses for each MVCL format (3-D formats have no batch: B is 1)
_LAYOUT = {"BFYX": "BFYX", "FYX": "BFYX", "BYXF": "BYXF", "YXF": "BYXF", "ANY": "BFYX"}


def mvcl_dims(shape: Any) -> list[int]:
    """The B, F, Y, X view of a tensor: ranks below 4 padded with 1 at the end (OpenVINO's view),
    ranks above 4 with the dimensions between F and Y folded into F, so ``B*F*Y*X`` still
    counts every element and a BFYX kernel sees each (Z, Y, X) block as channels."""
    d = bfyx(list(shape))
    if len(d) > 4:
        d = [d[0], int(np.prod(d[1:-2], dtype=np.int64)), d[-2], d[-1]]
    return d


def attr_value(node: Node, name: str) -> Any:
    attrs = node.attrs
    if name not in type(attrs).model_fields:
        return None
    v = getattr(attrs, name)
    if isinstance(v, (bool, int, float, str, list, tuple, np.ndarray)):
        return v
    return getattr(v, "value", v)


def _values(v: Any) -> list[str]:
    if isinstance(v, np.ndarray):
        v = v.reshape(-1).tolist()
    if isinstance(v, (list, tuple)):
        return [str(x) for x in v]
    if isinstance(v, bool):
        return ["1" if v else "0"]
    # a Where value "true"/"false" compares with a boolean attribute
    return [{"true": "1", "false": "0"}.get(p.strip().lower(), p.strip()) for p in str(v).split(",")]


def _same(a: str, b: str) -> bool:
    try:
        return float(a) == float(b)
    except ValueError:
        return a.lower() == b.lower()


def where_matches(stage: Stage, node: Node) -> bool:
    for key, want in stage.where.items():
        have = attr_value(node, key)
        if have is None:
            return False
        a, b = _values(have), _values(want)
        if len(a) != len(b) or not all(_same(x, y) for x, y in zip(a, b)):
            return False
    return True


def _base(arg: Arg) -> str:
    """``half8`` -> ``half``."""
    return arg.type.rstrip("0123456789").split()[-1] if arg.type else ""


@dataclasses.dataclass
class _Bound:
    """What one launch of a node needs: the program and the signature of its entry."""

    program: Any
    args: list[Arg]


class MvclKernel:
    """A :class:`~opforge_gpu.runtime.KernelImpl` for every CustomLayer entry of one name."""

    def __init__(self, name: str, stages: list[Stage], origin: str) -> None:
        self.name = name
        self.stages = stages
        self.origin = origin

    def __repr__(self) -> str:
        return f"<MvclKernel {self.name}: {len(self.stages)} entries from {self.stages[0].at}>"

    # --- selection ---------------------------------------------------------------------------
    def select(self, node: Node) -> list[Stage] | str:
        """The stages that run ``node`` in order, or why none do (a Where matching no entry)."""
        matching = [s for s in self.stages if where_matches(s, node)]
        if not matching:
            wheres = "; ".join(f"{s.at} Where {' '.join(f'{k}={v!r}' for k, v in s.where.items())}"
                               for s in self.stages if s.where)
            have = ", ".join(f"{k}={attr_value(node, k)!r}" for s in self.stages for k in s.where)
            return (f"no MVCL CustomLayer '{self.name}' matches node '{node.name}': its Where elements ({wheres}) "
                    f"match none of the node's attributes ({have})")
        by_stage: dict[int, Stage] = {}
        for s in sorted(matching, key=lambda s: not s.where):  # a Where is more specific than none
            by_stage.setdefault(s.stage, s)
        return [by_stage[k] for k in sorted(by_stage)]

    def supports(self, node: Node) -> str | None:
        stages = self.select(node)
        if isinstance(stages, str):
            return stages
        for s in stages:
            for p in s.params:
                if p.kind in ("input", "output") and p.port is not None:
                    n = len(node.inputs) if p.kind == "input" else len(node.output_specs)
                    if p.port >= n:
                        return (f"{s.file}:{p.line}: '{p.arg_name}' binds {p.kind} port {p.port}, but node "
                                f"'{node.name}' has {n} {p.kind}s")
                why = self._source_problem(p, node)
                if why:
                    return f"{s.file}:{p.line}: {why}"
        for et in [i.element_type for i in node.inputs] + [o.type for o in node.output_specs]:
            if storage_for(et) is None:
                return f"MVCL layer '{self.name}': element type {et} is not supported on VPU"
        return None

    def _source_problem(self, p: Param, node: Node) -> str | None:
        if p.kind == "scalar":
            src = str(p.source)
            if selector(src) is not None or is_literal(src):
                return None
            if attr_value(node, src) is None:
                return (f"Scalar '{p.arg_name}' takes source=\"{src}\", which is neither a number, a dimension "
                        f"(I.X, O.F...) nor an attribute of node '{node.name}' ({node.type_name})")
        if p.kind == "data" and p.source is not None and p.port is None and attr_value(node, p.source) is None:
            return f"Data '{p.arg_name}' takes source=\"{p.source}\", which node '{node.name}' does not have"
        return None

    def unknown_params(self, node: Node) -> list[str]:
        return []  # a missing attribute makes supports() fail with the file and line instead

    # --- lowering ----------------------------------------------------------------------------
    def lower(self, node: Node, lw: Lowering, epilogue: Epilogue | None = None) -> None:
        stages = self.select(node)
        if isinstance(stages, str):
            raise KernelConfigError(stages)
        shim = not lw.dev.info.has_fp16
        buffers: dict[int, tuple[Tensor, str]] = {}
        # output port -> (the buffer the kernels write, the output's elements in it, format)
        staged: dict[int, tuple[Tensor, Tensor, str]] = {}
        # A launch of more work-items than an output has elements (a work size rounded up to the
        # local size, as OpenVINO's own examples do) must not write past the output when the
        # kernel does not check bounds: outputs get at least one element per work-item.
        items = max(int(np.prod(self._work_sizes(s, node)[0], dtype=np.int64)) for s in stages)
        for s in stages:
            bound = self._program(s, lw, node)
            self._launch(s, bound, node, lw, shim, buffers, staged, items)
        for port, (_, t, fmt) in staged.items():
            y = lw.new_output(node, port)
            out = t
            if _LAYOUT[fmt] != "BFYX":
                dims = mvcl_dims(out.shape)
                tmp = lw.temp(out.shape, out.storage)
                strided_copy(lw, node, out, tmp, dims, pitches(dims, _LAYOUT[fmt]), contiguous(dims))
                out = tmp
            if out.storage != y.storage:
                run_unary(lw, node, out, y, "(x)")
            else:
                strided_copy(lw, node, out, y, y.shape, contiguous(y.shape), contiguous(y.shape))
        for i in range(len(node.output_specs)):
            if i not in staged and (node.id, i) in lw.used:
                raise KernelConfigError(f"{self.stages[0].at}: MVCL layer '{self.name}' writes no <Tensor type=\"output\" "
                                        f"port-index=\"{i}\">, but node '{node.name}' output {i} is used")

    def _program(self, s: Stage, lw: Lowering, node: Node) -> _Bound:
        dev = lw.dev
        if s.sources[0].is_binary:
            program, header = load_binary(dev, str(s.sources[0].path), f"{s.file}:{s.sources[0].line}")
            kernels = header.kernels
            origin = s.sources[0].path
        else:
            prepared = prepare([(src.label, str(src.text)) for src in s.sources], dev.info.has_fp16)
            files = {src.label: src.path for src in s.sources if src.path}
            program = dev.program(prepared.source, "", lw.cache_dir,
                                  what=f"MVCL kernel '{s.entry}' ({s.at}) for node '{node.name}'",
                                  files=files)  # type: ignore[arg-type]
            kernels = prepared.kernels
            origin = ", ".join(src.label for src in s.sources)
        if s.entry not in kernels:
            raise KernelConfigError(f"{s.at}: <Kernel entry=\"{s.entry}\">: {origin} has no kernel '{s.entry}'; its "
                                    f"kernels: {', '.join(sorted(kernels)) or 'none'}")
        args = kernels[s.entry]
        bound = {p.arg_name: p for p in s.params}
        for a in args:
            if a.name not in bound:
                raise KernelConfigError(f"{s.at}: argument '{a.name}' of kernel '{s.entry}' ({origin}) has no binding "
                                        "in <Parameters> (bind it with arg-name=\"" + a.name + "\")")
        names = {a.name for a in args}
        for p in s.params:
            if p.arg_name not in names:
                raise KernelConfigError(f"{s.file}:{p.line}: arg-name \"{p.arg_name}\" names no argument of kernel "
                                        f"'{s.entry}' (its arguments: {', '.join(a.name for a in args)})")
        return _Bound(program, args)

    def _dims(self, s: Stage, node: Node, dim: tuple[str, int], line: int) -> list[int]:
        direction, port = dim
        n = len(node.inputs) if direction == "input" else len(node.output_specs)
        if port >= n:
            raise KernelConfigError(f"{s.file}:{line}: dim=\"{direction},{port}\": node '{node.name}' has {n} "
                                    f"{direction}s")
        shape = node.inputs[port].shape if direction == "input" else static_shape(node, port)
        return mvcl_dims(shape)

    def _launch(self, s: Stage, bound: _Bound, node: Node, lw: Lowering, shim: bool,
                buffers: dict[int, tuple[Tensor, str]], staged: dict[int, tuple[Tensor, Tensor, str]],
                items: int) -> None:
        params = {p.arg_name: p for p in s.params}
        gws, lws, letters = self._work_sizes(s, node)
        if any(g < 0 for g in gws) or any(v <= 0 for v in lws):
            raise KernelConfigError(f"{s.at}: work sizes global {gws} / local {lws} for node '{node.name}' are not "
                                    f"positive (B,F,Y,X = {letters['B']},{letters['F']},{letters['Y']},{letters['X']})")
        if any(g % v for g, v in zip(gws, lws) if g):
            raise KernelConfigError(f"{s.at}: global work size {gws} is not a multiple of local {lws} for node "
                                    f"'{node.name}' (B,F,Y,X = {letters['B']},{letters['F']},{letters['Y']},"
                                    f"{letters['X']})")
        args: list[Any] = []
        declared_local = 0
        local_bytes = 0
        for a in bound.args:
            p = params[a.name]
            if p.kind == "input":
                x = lw.input(node, int(p.port))  # type: ignore[arg-type]
                x = self._reorder_in(lw, node, self._as(lw, node, x, a, shim), p.format)
                if items > x.size:
                    # reads by work-item id past the input stay inside a buffer (their values unused)
                    big = lw.temp((items,), x.storage)
                    if x.size:
                        strided_copy(lw, node, x, lw.plan.view(big, x.shape), x.shape, contiguous(x.shape),
                                     contiguous(x.shape))
                    x = big
                args.append(x)
            elif p.kind == "output":
                port = int(p.port)  # type: ignore[arg-type]
                got = staged.get(port)
                if got is None:
                    et = node.output_specs[port].type
                    want = self._kernel_storage(lw, et, a, shim)
                    shape = static_shape(node, port)
                    size = int(np.prod(shape, dtype=np.int64))
                    if items > size:
                        big = lw.temp((items,), want)
                        got = staged[port] = (big, lw.plan.view(big, shape) if size else lw.temp(shape, want),
                                              p.format)
                    else:
                        t = lw.temp(shape, want)
                        got = staged[port] = (t, t, p.format)
                args.append(got[0])
            elif p.kind == "output_buffer":
                nbytes = self._size(s, p, node) * (2 if shim else 1)
                t = lw.temp((max(nbytes, 1),), storage_for(Type.u8))  # type: ignore[arg-type]
                buffers[int(p.port)] = (t, f"{s.file}:{p.line}")  # type: ignore[arg-type]
                args.append(t)
            elif p.kind == "input_buffer":
                got_buf = buffers.get(int(p.port))  # type: ignore[arg-type]
                if got_buf is None:
                    raise KernelConfigError(f"{s.file}:{p.line}: input_buffer port-index=\"{p.port}\" of stage {s.stage} "
                                            "is not written by an earlier stage (an output_buffer with that "
                                            "port-index)")
                args.append(got_buf[0])
            elif p.kind == "data":
                args.append(self._data(s, p, node, lw, a, shim))
            elif p.kind == "local_data":
                declared = self._size(s, p, node)
                declared_local += declared
                nbytes = declared * (2 if shim else 1)
                local_bytes += nbytes
                args.append(LocalArg(max(nbytes, 1)))
            else:
                args.append(ScalarArg(self._scalar(s, p, node, a, lw)))
        if declared_local > LOCAL_MEMORY_BUDGET:
            raise KernelConfigError(f"{s.at}: local_data of kernel '{s.entry}' needs {declared_local} bytes per work "
                                    f"group for node '{node.name}', over the VPU's {LOCAL_MEMORY_BUDGET} bytes (CMX)")
        if local_bytes > lw.dev.info.local_mem_size:
            raise KernelConfigError(f"{s.at}: local_data of kernel '{s.entry}' needs {local_bytes} bytes per work group "
                                    f"for node '{node.name}', over this device's {lw.dev.info.local_mem_size}")
        lw.launch("", s.entry, {}, args, gws, lws, node=node, program=bound.program)
        lw.plan.launches[-1].source_file = f"stage {s.stage}: {s.at}"

    def _work_sizes(self, s: Stage, node: Node) -> tuple[list[int], list[int], dict[str, int]]:
        wdims = self._dims(s, node, s.dim, s.line)
        letters = {"B": wdims[0], "F": wdims[1], "Y": wdims[-2], "X": wdims[-1]}
        return [f(letters) for f in s.global_ws], [f(letters) for f in s.local_ws], letters

    # --- argument values ---------------------------------------------------------------------
    @staticmethod
    def _kernel_storage(lw: Lowering, et: Type, a: Arg, shim: bool) -> Any:
        """The storage a tensor must have for a kernel argument of ``a``'s type: floats convert
        between half and float (the VPU's own conversion), anything else must match, since an
        integer tensor read through a ``half*`` would lose values silently."""
        want = _CL_TYPES.get(_base(a))
        if want is not None and want != et and (not want.is_float or not et.is_float):
            node = lw.node
            raise UnsupportedOpError(
                f"node '{node.name if node else '?'}': kernel argument '{a.name}' is {a.type}*, but the tensor "
                f"bound to it is {et}; MVCL kernels get tensors of their declared element type only")
        if want is Type.f16 and shim:
            want = Type.f32  # the shim compiled half as float
        if want is None:
            want = et
        st = storage_for(want)
        if st is None:
            raise KernelConfigError(f"argument '{a.name}': element type {want} is not supported on VPU")
        return st

    def _as(self, lw: Lowering, node: Node, x: Tensor, a: Arg, shim: bool) -> Tensor:
        want = self._kernel_storage(lw, x.storage.type, a, shim)
        if want == x.storage:
            return x
        tmp = lw.temp(x.shape, want)
        run_unary(lw, node, x, tmp, "(x)")
        return tmp

    @staticmethod
    def _reorder_in(lw: Lowering, node: Node, x: Tensor, fmt: str) -> Tensor:
        layout = _LAYOUT[fmt]
        if layout == "BFYX":
            return x
        dims = mvcl_dims(x.shape)
        tmp = lw.temp(x.shape, x.storage)
        strided_copy(lw, node, x, tmp, dims, contiguous(dims), pitches(dims, layout))
        return tmp

    def _size(self, s: Stage, p: Param, node: Node) -> int:
        dims = self._dims(s, node, p.dim, p.line)
        assert p.size is not None  # the parser requires a size for buffers and local data
        n = p.size({"B": dims[0], "F": dims[1], "Y": dims[-2], "X": dims[-1]})
        if n < 0:
            raise KernelConfigError(f"{s.file}:{p.line}: size '{p.size.text}' of '{p.arg_name}' is negative ({n}) for "
                                    f"node '{node.name}'")
        return n

    def _data(self, s: Stage, p: Param, node: Node, lw: Lowering, a: Arg, shim: bool) -> Tensor:
        if p.port is not None:
            x = lw.input(node, p.port)
            return self._as(lw, node, x, a, shim)
        value = np.asarray(attr_value(node, str(p.source)))
        want = _CL_TYPES.get(_base(a), Type.f32)
        if want is Type.f16 and shim:
            want = Type.f32
        return lw.const_tensor(value.astype(want.np).reshape(-1), want,
                               key=("mvcl-data", node.name, p.arg_name, want.value), exact=True)

    def _scalar(self, s: Stage, p: Param, node: Node, a: Arg, lw: Lowering) -> Any:
        src = str(p.source)
        sel = selector(src)
        value: Any
        if sel is not None:
            direction, port, letter = sel
            dims = self._dims(s, node, (direction, port if port is not None else int(p.port or 0)), p.line)
            value = {"B": dims[0], "F": dims[1], "Y": dims[-2], "X": dims[-1]}[letter]
        elif is_literal(src):
            value = float(src)
        else:
            v = attr_value(node, src)
            if v is None:
                raise KernelConfigError(f"{s.file}:{p.line}: Scalar '{p.arg_name}': node '{node.name}' has no attribute "
                                        f"'{src}'")
            vals = np.asarray(v).reshape(-1)
            if vals.size != 1:
                k = int(p.port or 0)
                if not 0 <= k < vals.size:
                    raise KernelConfigError(f"{s.file}:{p.line}: Scalar '{p.arg_name}': port-index {k} is outside "
                                            f"attribute '{src}' of node '{node.name}' ({vals.size} values)")
                vals = vals[k:k + 1]
            value = vals[0]
        base = _base(a) or p.scalar_type
        et = _CL_TYPES.get(base, Type.f32 if p.scalar_type == "float" else Type.i32)
        if et is Type.f16 and not lw.dev.info.has_fp16:
            et = Type.f32
        try:
            return et.np.type(value)
        except (TypeError, ValueError):
            raise KernelConfigError(f"{s.file}:{p.line}: Scalar '{p.arg_name}' ({base}) cannot take the value "
                                    f"{value!r}") from None
