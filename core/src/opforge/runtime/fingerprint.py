"""What identifies a compiled model: a hash of the model (graph, attributes, weights), and the
versions of the plugins its compilation depends on. The compile cache is keyed by these, and
exported blobs carry them so an import can refuse a blob made by other versions."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from opforge.runtime.device_name import parse_device_name
from opforge.versions import opforge_version

if TYPE_CHECKING:
    from opforge.graph import Model
    from opforge.plugins.manager import PluginSystem


def _attr_text(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"array{value.dtype}{value.shape}"
    return repr(value)


def model_hash(model: Model) -> str:
    """sha256 over every node (type, opset, attributes, output types and shapes, edges, tensor
    names) and every constant's bytes, in topological order. Two models that hash alike compile
    alike; any change of a weight, an attribute or an input shape changes it."""
    h = hashlib.sha256()
    index: dict[int, int] = {}
    for i, node in enumerate(model.get_ordered_ops()):
        index[node.id] = i
        fields = node.attrs.model_dump() if hasattr(node.attrs, "model_dump") else dict(vars(node.attrs))
        head = {
            "type": node.type_name, "version": node.version, "name": node.name,
            "inputs": [(index[o.node.id], o.index) for o in node.inputs],
            "attrs": {k: _attr_text(v) for k, v in sorted(fields.items())},
            "outputs": [(str(sp.type), str(sp.shape)) for sp in node.output_specs],
            "names": [sorted(n) for n in node.output_names],
        }
        h.update(json.dumps(head, sort_keys=True, default=str).encode())
        value = node.constant_value()
        if value is not None:
            h.update(np.ascontiguousarray(value).view(np.uint8).reshape(-1).data)
    h.update(json.dumps([index[p.id] for p in model.parameters]).encode())
    h.update(json.dumps([index[r.id] for r in model.results]).encode())
    return h.hexdigest()


def relevant_versions(plugins: PluginSystem, model: Model, device_name: str) -> dict[str, str]:
    """``{distribution: version}`` of what compiling ``model`` for ``device_name`` depends on:
    opforge, the plugins of the device (and of the devices a meta device lists), the plugins of
    the model's custom ops, and every plugin with kernels for those devices."""
    parsed = parse_device_name(device_name)
    bases = {parsed.base, *(parse_device_name(t).base for t in parsed.targets)}
    regs = [plugins.devices.registration(b) for b in sorted(bases)]
    infos = [r.plugin for r in regs if r is not None]
    for node in model.get_ordered_ops():
        if not node.op.is_standard:
            reg = plugins.ops.registration(node.op.key())
            if reg is not None:
                infos.append(reg.plugin)
    for key in plugins.kernels.keys():  # noqa: SIM118 - a Registry, not a dict
        if isinstance(key, tuple) and str(key[0]) in bases:
            reg = plugins.kernels.registration(key)
            if reg is not None:
                infos.append(reg.plugin)
    out = {"opforge": opforge_version()}
    for info in infos:
        if info.builtin:
            continue
        out[info.distribution or info.name] = info.version or "unversioned"
    return dict(sorted(out.items()))


def config_text(config: Mapping[str, Any]) -> str:
    """A canonical text of a compile config (for cache keys): sorted keys, JSON where possible."""
    return json.dumps({k: config[k] for k in sorted(config)}, sort_keys=True, default=str)
