"""An ``onnx.backend.base.Backend`` over opforge, so ONNX's own backend test suite (and anything
written against that API) runs on opforge devices.

Device names are opforge's (``"CPU"``, ``"GPU.1"``...): ``prepare(model, device)`` converts the
model with the ONNX frontend and compiles it with ``opforge.Core().compile_model`` on that device,
which must be installed and available here. One more name exists only in this backend:
``"REFERENCE"`` evaluates the converted model with :func:`opforge.reference.evaluate_model`, the
NumPy reference implementations of the ops. It is the test oracle (slow, single-threaded, meant
for tests and for checking devices against), not a device.

    rep = OpforgeBackend.prepare(model_proto, "REFERENCE")
    (y,) = rep.run([x])

Precision: the ONNX backend API promises ONNX's semantics (its test suite compares with f32
results at rtol 1e-3, as ONNX Runtime's backend computes them), so a device whose default
precision is bf16 (the CPU on a host with bf16 arithmetic) compiles in f32 here unless
``config`` names an ``INFERENCE_PRECISION_HINT``. ``rep.precision`` says what ran.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import helper
from onnx.backend.base import Backend, BackendRep, namedtupledict
from opforge.errors import DeviceNotFoundError, OpforgeError
from opforge.frontend.convert import convert_model
from opforge.graph import Model
from opforge.reference import evaluate_model
from opforge.runtime.device_name import parse_device_name

#: the device name that evaluates with the NumPy reference (tests only)
REFERENCE = "REFERENCE"


class BackendError(OpforgeError):
    """A request the backend cannot serve (an unknown device, inputs that do not fit)."""


def _is_reference(device: str) -> bool:
    return device.strip().upper() == REFERENCE


def _core() -> Any:
    import opforge

    return opforge.Core()


def onnx_semantics_config(core: Any, device: str, config: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """``config`` for ``device`` with ``INFERENCE_PRECISION_HINT=f32`` added when the device would
    otherwise compute in bf16 by default (its f16 devices keep theirs: f16 is what they run) and
    the caller named no precision; None when there is nothing to pass."""
    out = dict(config or {})
    if any(str(k).upper() == "INFERENCE_PRECISION_HINT" for k in out):
        return out
    try:
        default = str(core.get_property(device, "INFERENCE_PRECISION_HINT")).lower()
    except OpforgeError:  # a device without the property (a meta device) keeps its own defaults
        default = ""
    if default == "bf16":
        out["INFERENCE_PRECISION_HINT"] = "f32"
    return out or None


class OpforgeBackendRep(BackendRep):
    """A converted (and, for devices, compiled) model; ``run(inputs)`` returns its outputs in the
    ONNX graph's output order, as a named tuple keyed by the output names."""

    def __init__(self, model: Model, input_names: Sequence[str], output_names: Sequence[str], device: str,
                 compiled: Any = None) -> None:
        self.model = model
        self.input_names = list(input_names)
        self.output_names = list(output_names)
        self.device = device
        self._compiled = compiled

    @property
    def precision(self) -> str:
        """What the compiled model computes in (``INFERENCE_PRECISION_HINT``); ``"f32"`` for the
        reference evaluation; ``""`` for a device that does not say."""
        if self._compiled is None:
            return "f32"
        try:
            return str(self._compiled.get_property("INFERENCE_PRECISION_HINT"))
        except OpforgeError:
            return ""

    def _feeds(self, inputs: Any) -> dict[str, np.ndarray]:
        if isinstance(inputs, Mapping):
            unknown = sorted(set(inputs) - set(self.input_names))
            if unknown:
                raise BackendError(f"unknown input(s) {unknown}; the model's inputs: {self.input_names}")
            return {k: np.asarray(v) for k, v in inputs.items()}
        if isinstance(inputs, np.ndarray):
            inputs = [inputs]
        values = list(inputs)
        if len(values) != len(self.input_names):
            raise BackendError(
                f"got {len(values)} input(s), the model takes {len(self.input_names)}: {self.input_names}"
            )
        return {n: np.asarray(v) for n, v in zip(self.input_names, values)}

    def run(self, inputs: Any, **kwargs: Any) -> tuple[Any, ...]:
        feeds = self._feeds(inputs)
        if self._compiled is None:
            outs = evaluate_model(self.model, feeds)
        else:
            outs = list(self._compiled(feeds).to_tuple())
        # namedtupledict renames names that are not identifiers; outputs["name"] still works
        return namedtupledict("Outputs", self.output_names)(*outs)  # type: ignore[no-any-return]


class OpforgeBackend(Backend):
    """ONNX backend API on opforge devices, plus the ``"REFERENCE"`` oracle."""

    @classmethod
    def supports_device(cls, device: str) -> bool:
        """``REFERENCE`` always; otherwise whether an installed opforge device of that name is
        available here (``"GPU"`` matches ``GPU.0``)."""
        if _is_reference(device):
            return True
        try:
            base = parse_device_name(device).base
        except OpforgeError:
            return False
        available = _core().available_devices
        return any(d == device or parse_device_name(d).base == base for d in available)

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> OpforgeBackendRep:
        """Convert ``model`` and compile it for ``device``. ``kwargs`` go to the conversion
        (``extension=``, ``input=``), except ``config`` (a mapping of device properties for
        ``compile_model``; without a precision in it, a device whose default is bf16 gets f32: see
        the module's docstring)."""
        config = kwargs.pop("config", None)
        converted = convert_model(model.SerializeToString(), framework="onnx", **kwargs)
        inits = {t.name for t in model.graph.initializer} | {t.values.name for t in model.graph.sparse_initializer}
        input_names = [vi.name for vi in model.graph.input if vi.name not in inits]
        output_names = [vi.name for vi in model.graph.output]
        if _is_reference(device):
            return OpforgeBackendRep(converted, input_names, output_names, REFERENCE)
        if not cls.supports_device(device):
            core = _core()
            raise DeviceNotFoundError(
                f"opforge device '{device}' is not available here (available: "
                f"{', '.join(core.available_devices) or 'none'}; '{REFERENCE}' evaluates by reference)"
            )
        core = _core()
        compiled = core.compile_model(converted, device, onnx_semantics_config(core, device, config))
        return OpforgeBackendRep(converted, input_names, output_names, device, compiled)

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any) -> tuple[Any, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: onnx.NodeProto, inputs: Any, device: str = "CPU",
                 outputs_info: Sequence[tuple[np.dtype[Any], tuple[int, ...]]] | None = None,
                 **kwargs: Any) -> tuple[Any, ...]:
        """Run one node: a model is built around it, its inputs typed from ``inputs`` (in the
        node's input order, empty names skipped), its outputs from ``outputs_info`` when given."""
        opset = int(kwargs.pop("opset_version", onnx.defs.onnx_opset_version()))
        names = [n for n in node.input if n]
        if isinstance(inputs, Mapping):
            values = [np.asarray(inputs[n]) for n in names]
        else:
            values = [np.asarray(v) for v in (inputs if isinstance(inputs, (list, tuple)) else [inputs])]
        if len(values) != len(names):
            raise BackendError(f"node '{node.name or node.op_type}' has {len(names)} input(s), got {len(values)}")
        graph_inputs = [
            helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape))
            for n, v in zip(names, values)
        ]
        outs = [n for n in node.output if n]
        if outputs_info is not None:
            graph_outputs = [
                helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(np.dtype(dt)), list(shape))
                for n, (dt, shape) in zip(outs, outputs_info)
            ]
        else:
            graph_outputs = [helper.make_empty_tensor_value_info(n) for n in outs]
        domains = {node.domain} if node.domain not in ("", "ai.onnx") else set()
        imports = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in domains]
        graph = helper.make_graph([node], f"run_node_{node.op_type}", graph_inputs, graph_outputs)
        model = helper.make_model(graph, opset_imports=imports)
        return cls.run_model(model, {n: v for n, v in zip(names, values)}, device, **kwargs)


prepare = OpforgeBackend.prepare
run_model = OpforgeBackend.run_model
run_node = OpforgeBackend.run_node
supports_device = OpforgeBackend.supports_device
