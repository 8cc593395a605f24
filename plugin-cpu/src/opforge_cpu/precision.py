"""f16/bf16/f64 nodes the CPU has no kernel for in their type compute in f32 between Converts
(a planning pass: it runs on every specialized model, before a stage is split off, so a lone
data-dependent node already has the types its kernel takes)."""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from opforge.graph import Model, Node, Output
from opforge.op import STRUCTURAL
from opforge.opset.constant import Constant
from opforge.opset.convert import Convert
from opforge.transformations.base import Transformation

from opforge_cpu.emit import attrs_dict, find_plugin_kernel
from opforge_cpu.support import LOW_PRECISION, has_low_precision, node_reason, plugin_kernel_needs_f32


def lower_precision(core: types.ModuleType, model: Model, kernels: Mapping[tuple[str, str | None], Any]) -> bool:
    """Nodes of f16/bf16 (or f64) that have no kernel for that type compute in f32: their
    inputs are converted to f32 and their outputs back to the model's type, so every value the
    model exposes keeps its element type (f16 storage, f32 compute, rounded after each op as
    the reference rounds). Returns whether it changed the model."""
    builtin = set(core.kernel_types())
    low_names = {t.ir for t in LOW_PRECISION}
    as_f32: dict[Output, Output] = {}  # one f32 copy of each value, however many nodes read it
    changed = False
    for n in model.get_ordered_ops():
        if n.type_name in STRUCTURAL or n.type_name == "Convert" or not has_low_precision(n):
            continue
        plugin_kernel = find_plugin_kernel(kernels, n)
        if plugin_kernel is not None:
            # a plugin's kernel gets the same treatment: f32 compute when it refuses the type
            if not plugin_kernel_needs_f32(core, n, plugin_kernel):
                continue
        elif (not n.op.is_standard or n.type_name not in builtin or not node_reason(core, n)
              or node_reason(core, n, f32_types=True)):
            continue
        new_inputs: list[Output] = []
        for i in n.inputs:
            if i.element_type in LOW_PRECISION:
                if i not in as_f32:
                    v = i.node.constant_value()
                    tag = f"{i.node.name}/{i.index}/f32"
                    if v is not None:
                        c = Node.create(Constant, [], {"value": np.asarray(v, np.float32)}, name=tag)
                    else:
                        c = Node.create(Convert, [i], {"destination_type": "f32"}, name=tag)
                    as_f32[i] = c.output(0)
                new_inputs.append(as_f32[i])
            else:
                new_inputs.append(i)
        update = {k: "f32" for k, v in attrs_dict(n).items() if isinstance(v, str) and v in low_names}
        attrs = n.attrs
        if update:
            attrs = type(n.attrs).model_validate(n.attrs.model_dump() | update)
        clone = Node(n.op, new_inputs, attrs, n.name)
        for k, (old, new) in enumerate(zip(n.outputs(), clone.outputs())):
            res = new
            if old.element_type is not new.element_type:
                res = Node.create(Convert, [new], {"destination_type": old.element_type.ir},
                                  name=f"{n.name}/out{k}/{old.element_type.ir}").output(0)
            res.set_names(old.names)
            model.replace_output(old, res)
        changed = True
    if changed:
        model.validate()
    return changed


class LowerPrecision(Transformation):
    """:func:`lower_precision` as the CPU's last planning pass (after the fusions, which match
    the model's own types)."""

    name: ClassVar[str] = "cpu_lower_precision"
    stage: ClassVar[str] = "back"

    def __init__(self, core: types.ModuleType, kernels: Mapping[tuple[str, str | None], Any]) -> None:
        self.core = core
        self.kernels = kernels

    def apply(self, model: Model) -> bool:
        return lower_precision(self.core, model, self.kernels)
