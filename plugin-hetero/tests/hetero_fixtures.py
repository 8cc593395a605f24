"""Fake devices and model builders for the HETERO tests (loaded by conftest.py as ``hetero_fixtures``).


Each fake device runs the Python kernels registered for it (``kernel(node, inputs)``) and
nothing else, so which device supports which op is decided here, not by the CPU/GPU plugins:

* ``FAST`` -- Relu, Add, Multiply, MatMul, Convert, Reshape (a "GPU" lacking most activations)
* ``SLOW`` -- everything the tests use (the "CPU" fallback)
* ``MID``  -- Relu, Sigmoid (a third device for priority lists)

Every compile and every inference is logged (device, model, config, times), so tests can check
what HETERO handed to each device and whether sub-graphs overlapped in time.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import opforge
from opforge.errors import UnsupportedOpError
from opforge.graph import Model, Node
from opforge.op import STRUCTURAL
from opforge.runtime import CompileContext, Device, Executable, PropertySpec
from opforge.runtime.properties import COMMON_PROPERTIES

Kernel = Callable[[Node, list[np.ndarray]], list[np.ndarray]]


def reference(node: Node, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """A kernel that runs the op's NumPy reference (fine for a test device)."""
    return list(node.op.evaluate(node.attrs, inputs))


FAST_OPS = ("Relu", "Add", "Multiply", "MatMul", "Convert", "Reshape")
SLOW_OPS = ("Relu", "Add", "Multiply", "MatMul", "Convert", "Reshape", "Sigmoid", "Swish", "Tanh",
            "Subtract", "ShapeOf", "Concat", "Gather", "Exp")
MID_OPS = ("Relu", "Sigmoid")
KERNELS: dict[str, tuple[str, ...]] = {"FAST": FAST_OPS, "SLOW": SLOW_OPS, "MID": MID_OPS}


@dataclasses.dataclass
class CompileRecord:
    device: str
    model: str
    config: dict[str, Any]
    nodes: list[str]


@dataclasses.dataclass
class RunRecord:
    device: str
    model: str
    start: float
    end: float


class Log:
    """What the fake devices saw, shared by all of them in a test."""

    def __init__(self) -> None:
        self.compiles: list[CompileRecord] = []
        self.runs: list[RunRecord] = []
        self.lock = threading.Lock()

    def overlapped(self, a: str, b: str) -> bool:
        """Whether a run on device ``a`` overlapped in time with a run on device ``b``."""
        ra = [r for r in self.runs if r.device == a]
        rb = [r for r in self.runs if r.device == b]
        return any(x.start < y.end and y.start < x.end for x in ra for y in rb)


class FakeExecutable(Executable):
    def __init__(self, device: str, model: Model, kernels: dict[str, Kernel], delay: float, log: Log) -> None:
        self.device = device
        self.name = model.name
        self.order = model.get_ordered_ops()
        self.params = [p.id for p in model.parameters]
        self.results = [r.id for r in model.results]
        self.kernels = {n.id: kernels[n.type_name] for n in self.order if n.type_name not in STRUCTURAL}
        self.delay = delay
        self.log = log

    def infer(self, inputs: Sequence[np.ndarray], state: Any) -> list[np.ndarray]:
        start = time.perf_counter()
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
                values[n.id] = self.kernels[n.id](n, [values[i.node.id][i.index] for i in n.inputs])
        with self.log.lock:
            self.log.runs.append(RunRecord(self.device, self.name, start, time.perf_counter()))
        return [values[r][0] for r in self.results]

    def properties(self) -> dict[str, Any]:
        return {"EXECUTION_DEVICES": [self.device]}


class FakeDevice(Device):
    property_specs = (*COMMON_PROPERTIES, PropertySpec("FAKE_DELAY_S", float, 0.0, minimum=0),
                      PropertySpec("FAKE_TAG", str, ""))

    def __init__(self, name: str, log: Log) -> None:
        super().__init__(name)
        self.log = log

    def query_model(self, model: Model, ctx: CompileContext) -> dict[str, str]:
        kernels = ctx.kernels()
        return {n.name: self.name for n in model.get_ordered_ops()
                if n.type_name in STRUCTURAL or (n.type_name, None) in kernels}

    def compile_model(self, model: Model, ctx: CompileContext) -> Executable:
        kernels = ctx.kernels()
        missing = sorted({n.type_name for n in model.get_ordered_ops()
                          if n.type_name not in STRUCTURAL and (n.type_name, None) not in kernels})
        if missing:
            raise UnsupportedOpError(f"device {self.name} has no kernel for: {', '.join(missing)}")
        with self.log.lock:
            self.log.compiles.append(CompileRecord(self.name, model.name, dict(ctx.config),
                                                   [n.name for n in model.get_ordered_ops()]))
        return FakeExecutable(self.name, model, {k[0]: v for k, v in kernels.items()},
                              float(ctx.config["FAKE_DELAY_S"]), self.log)


class FakeDevicesPlugin:
    def __init__(self, log: Log) -> None:
        self.log = log

    @opforge.hookimpl
    def opforge_register_devices(self, register: Any) -> None:
        for name in KERNELS:
            register(name, lambda name=name: FakeDevice(name, self.log))

    @opforge.hookimpl
    def opforge_register_kernels(self, register: Any) -> None:
        for dev, ops in KERNELS.items():
            for op_name in ops:
                register(dev, op_name, reference)





# ============================================================================ models
def param(name: str, shape: Sequence[int] = (2, 3), dtype: str = "f32") -> Node:
    p = opforge.op("Parameter", element_type=dtype, shape=list(shape), name=name)
    p.output(0).set_names([name])
    return p


def const(name: str, value: Any) -> Node:
    return opforge.op("Constant", value=np.asarray(value, np.float32), name=name)


def named(node: Node, tensor: str) -> Node:
    node.output(0).set_names([tensor])
    return node




def swish_model() -> Model:
    """x -> Relu -> Swish (SLOW only) -> Add(bias) -> y: one op FAST cannot run."""
    x = param("x")
    r = opforge.op("Relu", x, name="relu")
    s = opforge.op("Swish", r, name="swish")
    y = named(opforge.op("Add", s, const("bias", [1.0, -2.0, 3.0]), name="add"), "y")
    return Model([y], [x], name="swish_model")


def fast_model() -> Model:
    """Only ops FAST supports (two independent outputs, to check it is still one sub-graph)."""
    x = param("x")
    w = const("w", np.arange(12, dtype=np.float32).reshape(3, 4) / 10)
    m = opforge.op("MatMul", opforge.op("Relu", x, name="relu"), w, name="matmul")
    y = named(opforge.op("Add", m, const("b", np.ones(4)), name="add"), "y")
    z = named(opforge.op("Multiply", x, x, name="square"), "z")
    return Model([y, z], [x], name="fast_model")


def sandwich_model() -> Model:
    """x -> Sigmoid(SLOW) -> Relu (cheap, either) -> Tanh(SLOW) -> y: greedy puts the Relu on
    FAST between two SLOW nodes, which would cost two transfers."""
    x = param("x")
    a = opforge.op("Sigmoid", x, name="sig")
    b = opforge.op("Relu", a, name="relu")
    y = named(opforge.op("Tanh", b, name="tanh"), "y")
    return Model([y], [x], name="sandwich")


def load_module(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
