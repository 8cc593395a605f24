"""Running a CustomLayer: the JIT definitions OpenVINO promises, format reorders, work sizes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from opforge.element_type import Type
from opforge.graph import Node

from opforge_gpu.custom.config import CustomLayerSpec, KernelConfigError, eval_formula
from opforge_gpu.library.elementwise import run_unary
from opforge_gpu.library.movement import contiguous, strided_copy
from opforge_gpu.lowering import Epilogue, Lowering, static_shape
from opforge_gpu.plan import Tensor, render_defines
from opforge_gpu.storage import storage_for

#: the BFYX position of each letter of a format, outermost first
_ORDER = {"BFYX": "BFYX", "BYXF": "BYXF", "YXFB": "YXFB", "FYXB": "FYXB"}

_TYPE_NAMES = {"half": "half", "float": "float", "char": "char", "uchar": "uchar", "int": "int",
               "long": "long", "short": "short", "ushort": "ushort", "uint": "uint"}


def bfyx(shape: Sequence[int]) -> list[int]:
    """OpenVINO's 4-D view of a tensor: B, F, Y, X (lower ranks padded with 1 at the end;
    5-D and 6-D keep their rank: B, F, Z, Y, X / B, F, W, Z, Y, X)."""
    s = list(shape)
    if len(s) >= 4:
        return s
    return s + [1] * (4 - len(s)) if s else [1, 1, 1, 1]


def pitches(dims: list[int], fmt: str) -> list[int]:
    """Element pitch of each BFYX dimension for a tensor stored in ``fmt``."""
    if len(dims) != 4 or fmt == "BFYX":
        return contiguous(dims)
    pos = {c: i for i, c in enumerate("BFYX")}
    order = _ORDER[fmt]
    out = [0, 0, 0, 0]
    acc = 1
    for c in reversed(order):
        out[pos[c]] = acc
        acc *= dims[pos[c]]
    return out


def _c_array(ctype: str, values: Sequence[Any]) -> str:
    return f"({ctype} []){{ {','.join(str(v) for v in values)}, }}"


def _fmt_scalar(v: Any, ctype: str | None) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    if ctype == "float" or (ctype is None and isinstance(v, float)):
        f = float(v)
        text = repr(f) if np.isfinite(f) else ("INFINITY" if f > 0 else "-INFINITY" if f < 0 else "NAN")
        return text + ("f" if np.isfinite(f) and not text.endswith("f") else "")
    if ctype == "int":
        return str(int(float(v)))
    return str(v)


class CustomKernel:
    """A :class:`~opforge_gpu.lowering.KernelImpl` for one CustomLayer of a configuration file."""

    def __init__(self, spec: CustomLayerSpec, origin: str) -> None:
        self.spec = spec
        self.origin = origin

    def __repr__(self) -> str:
        return f"<CustomKernel {self.spec.name} entry={self.spec.entry} from {self.spec.where}>"

    # --- support -----------------------------------------------------------------------------
    def supports(self, node: Node) -> str | None:
        s = self.spec
        for t in s.tensors:
            n = len(node.inputs) if t.direction == "input" else len(node.output_specs)
            if t.port >= n:
                return (f"custom kernel {s.entry} ({s.where}) binds {t.direction} port {t.port}, but the node "
                        f"has {n} {t.direction}s")
        types = [i.element_type for i in node.inputs] + [o.type for o in node.output_specs]
        for et in types:
            if storage_for(et) is None:
                return f"custom kernel {s.entry} ({s.where}): element type {et} is not supported on GPU"
        for d in s.defines:
            if d.param is not None and d.default is None and _attr_value(node, d.param) is None:
                return f"custom kernel {s.entry} ({s.where}:{d.line}) needs attribute '{d.param}' (no default)"
        for dd in s.data:
            if _attr_value(node, dd.name) is None:
                return f"custom kernel {s.entry} ({s.where}:{dd.line}) needs a data blob '{dd.name}' on the node"
        return None

    def unknown_params(self, node: Node) -> list[str]:
        """``<Define param=...>`` naming an attribute the node's op does not have: the kernel
        would silently get the default (or fail): a typo OpenVINO also lets through."""
        fields = list(type(node.attrs).model_fields)
        out = []
        for d in self.spec.defines:
            if d.param is not None and d.param not in fields:
                fallback = f"the default {d.default!r} is used" if d.default is not None else "the kernel cannot run"
                out.append(f"custom kernel {self.spec.entry} ({self.spec.file}:{d.line}): <Define name=\"{d.name}\" "
                           f"param=\"{d.param}\">: {node.type_name} has no attribute '{d.param}' (its attributes: "
                           f"{', '.join(fields) or 'none'}); {fallback}")
        return out

    # --- lowering ----------------------------------------------------------------------------
    def lower(self, node: Node, lw: Lowering, epilogue: Epilogue | None = None) -> None:
        s = self.spec
        fp16 = lw.dev.info.has_fp16
        args: dict[int, Any] = {}
        jit: dict[str, Any] = {}
        outputs_after: list[tuple[Tensor, Tensor, str]] = []
        output_args: list[tuple[int, Tensor, Tensor, str]] = []  # (arg index, staged, y, format)
        n_inputs = 0
        tensor_dims: dict[tuple[str, int], list[int]] = {}
        for t in s.tensors:
            if t.direction == "input":
                n_inputs += 1
                x = lw.input(node, t.port)
                x = self._as_kernel_type(lw, node, x, fp16)
                x = self._reorder_in(lw, node, x, t.format)
                args[t.arg_index] = x
                name = f"INPUT{t.port}"
                shape = list(node.inputs[t.port].shape)
            else:
                y = lw.new_output(node, t.port)
                shape = list(static_shape(node, t.port))
                st = y.storage
                kernel_st = st
                if st.is_half and not fp16:
                    kernel_st = storage_for(Type.f32)  # type: ignore[assignment]
                staged = y
                if kernel_st != st or t.format != "BFYX":
                    staged = lw.temp(y.shape, kernel_st)  # type: ignore[arg-type]
                    outputs_after.append((staged, y, t.format))
                args[t.arg_index] = staged
                output_args.append((t.arg_index, staged, y, t.format))
                name = f"OUTPUT{t.port}"
                x = staged
            dims = bfyx(shape)
            tensor_dims[(t.direction, t.port)] = dims
            self._tensor_jit(jit, name, x, dims, t.format)
        for d in s.data:
            value = np.asarray(_attr_value(node, d.name))
            out_st = storage_for(node.output_specs[0].type, lw.half)
            et = Type.f32 if out_st is None or not out_st.is_float or (out_st.is_half and not fp16) else \
                (Type.f16 if out_st.is_half else Type.f32)
            args[d.arg_index] = lw.const_tensor(value.astype(et.np).reshape(-1),
                                                key=("custom-data", node.name, d.name, et.value), exact=True)
        ws_dims = tensor_dims.get((s.dim_source, s.dim_index))
        if ws_dims is None:
            raise KernelConfigError(
                f"{s.where}: WorkSizes dim=\"{s.dim_source} {s.dim_index}\" names no tensor bound in <Buffers> "
                f"(node '{node.name}')"
            )
        dims = ws_dims
        letters = _letters(dims)
        gws = [eval_formula(f, letters) for f in s.global_ws]
        lws = [eval_formula(f, letters) for f in s.local_ws] if s.local_ws else None
        if any(g < 0 for g in gws) or (lws and any(v <= 0 for v in lws)):
            raise KernelConfigError(f"{s.where}: work sizes {gws} / {lws} for node '{node.name}' are not positive")
        if lws and any(g % v for g, v in zip(gws, lws)):
            raise KernelConfigError(
                f"{s.where}: global work size {gws} is not a multiple of local {lws} for node '{node.name}' "
                f"(dims B,F,Y,X = {dims})"
            )
        self._pad_outputs(lw, gws, args, output_args, outputs_after)
        jit["NUM_INPUTS"] = n_inputs
        jit["GLOBAL_WORKSIZE_SIZE"] = len(gws)
        jit["GLOBAL_WORKSIZE"] = _c_array("size_t", gws)
        jit["LOCAL_WORKSIZE_SIZE"] = len(lws or [])
        jit["LOCAL_WORKSIZE"] = _c_array("size_t", lws or [0])
        user = "".join(self._define(d, node) for d in s.defines)
        header = ("#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n" if fp16 else "") + render_defines(jit) + user
        source = header + "".join(f'#line 1 "{src.label}"\n{src.text}\n' for src in s.sources)
        files = {src.label: src.path for src in s.sources if src.path}
        options = " ".join(s.options)
        program = lw.dev.program(source, options, lw.cache_dir,
                                 what=f"custom kernel '{s.entry}' ({s.where}) for node '{node.name}'",
                                 files=files)  # type: ignore[arg-type]
        self._check_entry(lw, program)
        ordered = [args[i] for i in range(len(args))]
        lw.launch("", s.entry, {}, ordered, gws, lws, node=node, program=program)
        for staged, y, fmt in outputs_after:
            staged_bfyx = self._reorder_out(lw, node, staged, fmt)
            if staged_bfyx.storage != y.storage:
                run_unary(lw, node, staged_bfyx, y, "(x)")
            else:
                strided_copy(lw, node, staged_bfyx, y, y.shape, contiguous(y.shape), contiguous(y.shape))

    # --- helpers -----------------------------------------------------------------------------
    @staticmethod
    def _pad_outputs(lw: Lowering, gws: list[int], args: dict[int, Any],
                     output_args: list[tuple[int, Tensor, Tensor, str]],
                     outputs_after: list[tuple[Tensor, Tensor, str]]) -> None:
        """A launch of more work-items than an output has elements (a work size rounded up, or
        written for another layout) must not write past the buffer when the kernel indexes by
        its global id without a bound check: such outputs get a buffer of one element per
        work-item, and only the tensor's own elements are copied out."""
        items = int(np.prod(gws, dtype=np.int64)) if gws else 1
        for arg_index, staged, y, fmt in output_args:
            if items <= staged.size:
                continue
            big = lw.temp((items,), staged.storage)
            args[arg_index] = big
            view = lw.plan.view(big, staged.shape)
            if staged is y:
                outputs_after.append((view, y, fmt))
            else:
                outputs_after[:] = [(view if s is staged else s, yy, f) for s, yy, f in outputs_after]

    def _check_entry(self, lw: Lowering, program: Any) -> None:
        """The entry point must be a kernel of the built program: else the first inference
        failed with a bare pyopencl LogicError (CL_INVALID_KERNEL_NAME)."""
        s = self.spec
        cl = lw.dev.cl
        try:
            names = [k for k in str(program.get_info(cl.program_info.KERNEL_NAMES)).split(";") if k]
        except Exception:  # noqa: BLE001 - an OpenCL 1.1 driver without KERNEL_NAMES: ask for the kernel
            try:
                cl.Kernel(program, s.entry)
                return
            except cl.Error:
                names = None  # type: ignore[assignment]
        if names is not None and s.entry in names:
            return
        sources = ", ".join(src.path or src.label for src in s.sources) or "no <Source>"
        found = (", ".join(sorted(names)) or "none") if names is not None else "unknown (the driver does not list them)"
        raise KernelConfigError(
            f"{s.where}: <Kernel entry=\"{s.entry}\">: the program built from {sources} has no kernel "
            f"'{s.entry}'; its kernels: {found}"
        )

    def _as_kernel_type(self, lw: Lowering, node: Node, x: Tensor, fp16: bool) -> Tensor:
        """Half tensors are handed to kernels as float where the device lacks cl_khr_fp16: OpenVINO-style
        kernels do arithmetic on ``INPUT0_TYPE`` values, which half does not allow there."""
        if not x.storage.is_half or fp16:
            return x
        f32 = storage_for(Type.f32)
        tmp = lw.temp(x.shape, f32)  # type: ignore[arg-type]
        run_unary(lw, node, x, tmp, "(x)")
        return tmp

    def _reorder_in(self, lw: Lowering, node: Node, x: Tensor, fmt: str) -> Tensor:
        if fmt == "BFYX" or len(x.shape) > 4:
            return x
        dims = bfyx(x.shape)
        tmp = lw.temp(x.shape, x.storage)
        strided_copy(lw, node, x, tmp, dims, contiguous(dims), pitches(dims, fmt))
        return tmp

    def _reorder_out(self, lw: Lowering, node: Node, staged: Tensor, fmt: str) -> Tensor:
        if fmt == "BFYX" or len(staged.shape) > 4:
            return staged
        dims = bfyx(staged.shape)
        tmp = lw.temp(staged.shape, staged.storage)
        strided_copy(lw, node, staged, tmp, dims, pitches(dims, fmt), contiguous(dims))
        return tmp

    def _tensor_jit(self, jit: dict[str, Any], name: str, x: Tensor, dims: list[int], fmt: str) -> None:
        n = len(dims)
        jit[f"{name}_DIMS_SIZE"] = n
        jit[f"{name}_DIMS"] = _c_array("int", dims)
        jit[f"{name}_TYPE"] = _TYPE_NAMES.get(x.storage.ctype, x.storage.ctype)
        jit[f"{name}_FORMAT_{fmt if n == 4 else 'ANY'}"] = 1
        jit[f"{name}_LOWER_PADDING_SIZE"] = n
        jit[f"{name}_LOWER_PADDING"] = _c_array("int", [0] * n)
        jit[f"{name}_UPPER_PADDING_SIZE"] = n
        jit[f"{name}_UPPER_PADDING"] = _c_array("int", [0] * n)
        jit[f"{name}_PITCHES_SIZE"] = n
        jit[f"{name}_PITCHES"] = _c_array("int", pitches(dims, fmt))
        jit[f"{name}_OFFSET"] = 0

    def _define(self, d: Any, node: Node) -> str:
        s = self.spec
        if d.param is None and d.type is None and d.default is None:
            # a static constant: "NAME" or "NAME VALUE" in the name itself
            return f"#define {d.name}\n"
        value = _attr_value(node, d.param) if d.param is not None else None
        if value is None:
            if d.default is None:
                raise KernelConfigError(
                    f"{s.file}:{d.line}: <Define name=\"{d.name}\" param=\"{d.param}\">: node '{node.name}' "
                    f"({node.type_name}) has no attribute '{d.param}' and the Define has no default"
                )
            value = d.default
        if d.type in ("int[]", "float[]"):
            base = d.type[:-2]
            if isinstance(value, str):
                items: list[Any] = [v.strip() for v in value.split(",") if v.strip()]
            else:
                items = list(np.asarray(value).reshape(-1))
            return f"#define {d.name} {_c_array(base, [_fmt_scalar(v, base) for v in items])}\n"
        if isinstance(value, (list, tuple, np.ndarray)):
            arr = np.asarray(value).reshape(-1)
            base = "float" if arr.dtype.kind == "f" else "int"
            return f"#define {d.name} {_c_array(base, [_fmt_scalar(v, base) for v in arr])}\n"
        return f"#define {d.name} {_fmt_scalar(value, d.type)}\n"


def _letters(dims: list[int]) -> dict[str, int]:
    d = list(dims)
    out = {"B": d[0], "F": d[1], "Y": d[-2], "X": d[-1], "Z": 1, "W": 1}
    if len(d) >= 5:
        out["Z"] = d[-3]
    if len(d) >= 6:
        out["W"] = d[-4]
    return out


def _attr_value(node: Node, name: str) -> Any:
    attrs = node.attrs
    if name in type(attrs).model_fields:
        v = getattr(attrs, name)
        return getattr(v, "value", v) if not isinstance(v, (int, float, bool, str, list, tuple, np.ndarray)) else v
    return None
