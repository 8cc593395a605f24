"""Which nodes the CPU device can run, and why not: the built-in C++ kernel table's own checks
(``_core.check_node``), plugin kernels (Python callables and compiled C ABI kernels), and the
f16/bf16/f64 nodes that run in f32 (see :mod:`.precision`)."""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Any

import numpy as np
from opforge.element_type import Type
from opforge.graph import Model, Node, Output
from opforge.op import STRUCTURAL

from opforge_cpu.emit import attrs_dict, capsule_of, contiguous, find_plugin_kernel, index_mapped

#: element types the CPU device computes in f32 when an op has no kernel of its own for them
LOW_PRECISION = (Type.f16, Type.bf16, Type.f64)


def node_reason(core: types.ModuleType, n: Node, f32_types: bool = False) -> str:
    """Why the built-in kernel table cannot run standard node ``n`` ("" when it can); with
    ``f32_types``, as if its f16/bf16/f64 inputs and outputs were f32 (see ``lower_precision``)."""
    def ty(t: Type) -> str:
        return Type.f32.ir if f32_types and t in LOW_PRECISION else t.ir

    def val(v: np.ndarray | None) -> np.ndarray | None:
        if f32_types and v is not None and v.dtype.kind == "f":
            return np.asarray(v, np.float32)
        return v

    ins = [(ty(i.element_type), list(i.partial_shape.dims) if i.partial_shape.is_static else [])
           for i in n.inputs]
    vals = [val(i.node.constant_value()) for i in n.inputs]
    outs = [(ty(o.element_type), list(o.partial_shape.dims) if o.partial_shape.is_static else [])
            for o in n.outputs()]
    if any(not i.partial_shape.is_static for i in n.inputs):
        # Shapes decided per inference: judge by element types only.
        ins = [(t, [1] * (i.partial_shape.rank or 0)) for (t, _), i in zip(ins, n.inputs)]
        outs = [(t, [1] * (o.partial_shape.rank or 0)) for (t, _), o in zip(outs, n.outputs())]
    attrs = attrs_dict(n)
    if f32_types:
        attrs = {k: (Type.f32.ir if isinstance(v, str) and v in {t.ir for t in LOW_PRECISION} else v)
                 for k, v in attrs.items()}
    return str(core.check_node(n.type_name, n.version, attrs, ins, vals, outs))


def plugin_kernel_needs_f32(core: types.ModuleType, n: Node, kernel: Any) -> bool:
    """Whether a plugin's kernel refuses ``n``'s f16/bf16/f64 types but takes f32. A compiled
    (C ABI) kernel is asked: its ``create`` runs on a one-node program with the node's types,
    then with f32. A Python kernel says which types it takes with an ``element_types``
    attribute (IR names, e.g. ``{"f32"}``); without one it gets the arrays as they are."""
    cap = capsule_of(kernel)
    if cap is None:
        declared = getattr(kernel, "element_types", None)
        if declared is None:
            return False
        names = {str(t) for t in declared}
        used = {t.element_type.ir for t in n.inputs} | {o.element_type.ir for o in n.outputs()}
        return bool({t.ir for t in LOW_PRECISION} & used - names) and "f32" in names
    return bool(_abi_reason(core, n, cap, f32_types=False)) and not _abi_reason(core, n, cap, f32_types=True)


def _abi_reason(core: types.ModuleType, n: Node, cap: Any, f32_types: bool) -> str:
    """Why a compiled plugin kernel cannot be created for ``n`` ("" when it can)."""
    def ty(t: Type) -> str:
        return Type.f32.ir if f32_types and t in LOW_PRECISION else t.ir

    def dims(o: Output) -> list[int]:
        ps = o.partial_shape
        return [int(d) for d in ps.dims] if ps.is_static else [1] * (ps.rank or 0)  # type: ignore[arg-type]

    prog = core.Program()
    ins = []
    for i in n.inputs:
        v = i.node.constant_value()
        if v is not None and f32_types and v.dtype.kind == "f":
            v = np.asarray(v, np.float32)
        ins.append(prog.add_tensor(ty(i.element_type), dims(i), None if v is None else contiguous(v)))
    outs = [prog.add_tensor(ty(o.element_type), dims(o), None) for o in n.outputs()]
    attrs = attrs_dict(n)
    if f32_types:
        attrs = {k: (Type.f32.ir if isinstance(v, str) and v in {t.ir for t in LOW_PRECISION} else v)
                 for k, v in attrs.items()}
    try:
        prog.add_node(n.name, n.type_name, n.version, attrs, ins, outs, [n.name], capsule=cap)
        prog.set_io([t for t, i in zip(ins, n.inputs) if i.node.constant_value() is None], outs)
        prog.finalize(1, False)
    except Exception as err:  # noqa: BLE001 - the kernel's own refusal, whatever its type
        return str(err) or type(err).__name__
    return ""


def has_low_precision(n: Node) -> bool:
    return any(i.element_type in LOW_PRECISION for i in n.inputs) or any(
        o.element_type in LOW_PRECISION for o in n.outputs())


def planned_values(n: Node) -> bool:
    """Whether a value port of ``n`` (``Op.value_inputs``) is not a constant yet: the model is
    the one compiled, not a specialized one, and the port's value comes with each plan."""
    return any(i < len(n.inputs) and n.inputs[i].node.constant_value() is None for i in n.op.value_inputs)


def supported_nodes(core: types.ModuleType, model: Model, kernels: Mapping[tuple[str, str | None], Any]
                    ) -> dict[str, str]:
    """``{node name: reason}`` for every node (an empty reason: supported). On a model not yet
    specialized, a node whose shapes or value-port values come with each plan is judged by its
    element types and attributes; its plan checks the rest."""
    builtin = set(core.kernel_types())
    out: dict[str, str] = {}
    for n in model.get_ordered_ops():
        if n.type_name in STRUCTURAL:
            out[n.name] = ""
            continue
        kernel = find_plugin_kernel(kernels, n)
        if kernel is not None:
            # A kernel may refuse some nodes of its op (FrameworkNode: placeholders, not fallbacks).
            refuse = getattr(kernel, "unsupported_reason", None)
            out[n.name] = str(refuse(n) or "") if callable(refuse) else ""
            continue
        if not n.op.is_standard:
            out[n.name] = f"no kernel for {n.type_name}-{n.version}"
            continue
        t = n.type_name
        if n.op.host_stage:
            out[n.name] = ""  # its stage runs on the host (Op.run_host_stage)
            if t == "Loop":  # ... and its body runs on this device: every body node needs a kernel
                body = supported_nodes(core, n.attrs.body, kernels)  # type: ignore[attr-defined]
                bad = [f"'{k}': {why}" for k, why in body.items() if why]
                out[n.name] = f"its body has nodes without a CPU kernel: {'; '.join(bad[:3])}" if bad else ""
            continue
        lowered = index_mapped(n, builtin)
        if t not in builtin and not lowered:
            # A node whose every input is a constant once planned folds then (a Range of fed
            # bounds): it needs no kernel.
            folds = all(i in n.op.value_inputs or src.node.constant_value() is not None
                        for i, src in enumerate(n.inputs))
            out[n.name] = "" if folds else f"no kernel for {t}"
            continue
        if lowered or planned_values(n):
            # Its parameters are constants once planned (opforge.planning: every value port is
            # then a constant, or the model is staged around it), so its kernel checks them
            # when each plan is built, and a refusal names the node then.
            out[n.name] = ""
            continue
        why = node_reason(core, n)
        if why and has_low_precision(n) and not node_reason(core, n, f32_types=True):
            why = ""  # computed in f32 between Converts (lower_precision)
        out[n.name] = why
    return out
