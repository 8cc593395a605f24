"""A TEMPLATE device for testing the runtime API, the counterpart of OpenVINO's template plugin.

It exists only in the tests: it executes Python kernels registered for device "TEMPLATE"
through the ``opforge_register_kernels`` hook (the documented slow path for third-party
kernels), and nothing else. It never calls the reference implementations.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import opforge
import pytest
from opforge.errors import UnsupportedOpError
from opforge.graph import Model, Node
from opforge.op import STRUCTURAL
from opforge.plugins import PluginInfo, PluginSystem
from opforge.runtime import Availability, CompileContext, Device, Executable, PropertySpec
from opforge.runtime.properties import COMMON_PROPERTIES


def find_kernel(kernels: dict[tuple[str, str | None], Any], node: Node) -> Any:
    return kernels.get((node.type_name, node.version)) or kernels.get((node.type_name, None))


class TemplateExecutable(Executable):
    def __init__(self, model: Model, kernels: dict[tuple[str, str | None], Any], delay: float) -> None:
        self.order = model.get_ordered_ops()
        self.params = [p.id for p in model.parameters]
        self.results = [r.id for r in model.results]
        self.kernels = {n.id: find_kernel(kernels, n) for n in self.order if n.type_name not in STRUCTURAL}
        self.delay = delay
        self.active = 0
        self.max_active = 0
        self.lock = threading.Lock()

    def infer(self, inputs: Sequence[np.ndarray], state: Any) -> list[np.ndarray]:
        with self.lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            if self.delay:
                time.sleep(self.delay)
            values: dict[int, list[np.ndarray]] = dict(zip(self.params, ([a] for a in inputs)))
            for n in self.order:
                if n.id in values:
                    continue
                if n.type_name == "Constant":
                    values[n.id] = [n.attrs.value]  # type: ignore[attr-defined]
                elif n.type_name == "Result":
                    src = n.inputs[0]
                    values[n.id] = [values[src.node.id][src.index]]
                else:
                    ins = [values[i.node.id][i.index] for i in n.inputs]
                    values[n.id] = list(self.kernels[n.id](n.attrs, ins))
            return [values[r][0] for r in self.results]
        finally:
            with self.lock:
                self.active -= 1

    def properties(self) -> dict[str, Any]:
        return {"EXECUTION_DEVICES": ["TEMPLATE"]}


class TemplateDevice(Device):
    property_specs = (*COMMON_PROPERTIES, PropertySpec("TEMPLATE_DELAY_S", float, 0.0, minimum=0))

    def query_model(self, model: Model, ctx: CompileContext) -> dict[str, str]:
        kernels = ctx.kernels()
        return {
            n.name: self.name for n in model.get_ordered_ops()
            if n.type_name in STRUCTURAL or find_kernel(kernels, n) is not None
        }

    def compile_model(self, model: Model, ctx: CompileContext) -> Executable:
        supported = self.query_model(model, ctx)
        missing = sorted({f"{n.type_name}-{n.version}" for n in model.get_ordered_ops() if n.name not in supported})
        if missing:
            raise UnsupportedOpError(f"device TEMPLATE has no kernel for: {', '.join(missing)}")
        return TemplateExecutable(model, ctx.kernels(), float(ctx.config["TEMPLATE_DELAY_S"]))


class BrokenDevice(Device):
    def availability(self) -> Availability:
        return Availability(False, "no BROKEN hardware found (test device)")

    def query_model(self, model: Model, ctx: CompileContext) -> dict[str, str]:
        return {}

    def compile_model(self, model: Model, ctx: CompileContext) -> Executable:
        raise RuntimeError("unreachable: the device is unavailable")


class TemplatePlugin:
    """The plugin object registering the devices and their Python kernels."""

    @opforge.hookimpl
    def opforge_register_devices(self, register: Any) -> None:
        register("TEMPLATE", lambda: TemplateDevice("TEMPLATE"))
        register("BROKEN", lambda: BrokenDevice("BROKEN"))

    @opforge.hookimpl
    def opforge_register_kernels(self, register: Any) -> None:
        register("TEMPLATE", "Relu", lambda a, x: [np.maximum(x[0], 0).astype(x[0].dtype)])
        register("TEMPLATE", "Add", lambda a, x: [np.add(x[0], x[1])])
        register("TEMPLATE", "Identity", lambda a, x: [x[0] * np.asarray(a.scale, x[0].dtype)],
                 version="template_extension")


@pytest.fixture
def plugins() -> PluginSystem:
    ps = PluginSystem(autoload=False)
    ps.register_module(TemplatePlugin(), PluginInfo("template_device", "opforge-test-template", "0.0"))
    return ps


@pytest.fixture
def core(plugins: PluginSystem) -> opforge.Core:
    return opforge.Core(plugins)


@pytest.fixture
def relu_add_model() -> Model:
    x = opforge.op("Parameter", element_type="f32", shape=[2, 3], name="x")
    x.output(0).set_names(["x"])
    b = opforge.op("Constant", value=np.array([1.0, -2.0, 3.0], np.float32), name="bias")
    y = opforge.op("Add", opforge.op("Relu", x, name="relu"), b, name="add")
    y.output(0).set_names(["y"])
    return Model([y], [x], name="relu_add")
