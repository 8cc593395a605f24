"""HETERO on the real installed devices (GPU = PoCL in CI): a custom op that only has a CPU
kernel falls back to CPU, and the split model gives the all-CPU outputs."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import opforge
import pytest
from opforge import InferContext, Op, OpAttrs, TensorSpec
from opforge.plugins import PluginInfo, PluginSystem, default_plugins


class CpuOnlySwishAttrs(OpAttrs):
    beta: float = 1.0


class CpuOnlySwish(Op):
    """A custom op whose plugin ships a CPU kernel and nothing for GPU."""

    type_name = "CpuOnlySwish"
    version = "test_hetero_ext"
    Attrs = CpuOnlySwishAttrs

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        return [TensorSpec(ctx.input_type(0), ctx.input_shape(0))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x = inputs[0]
        return [(x / (1 + np.exp(-attrs.beta * x))).astype(x.dtype)]


class CpuOnlyPlugin:
    @opforge.hookimpl
    def opforge_register_ops(self, register: Any) -> None:
        register(CpuOnlySwish)

    @opforge.hookimpl
    def opforge_register_kernels(self, register: Any) -> None:
        # the documented slow path: a NumPy callable the CPU executor calls for this node only
        register("CPU", CpuOnlySwish, lambda attrs, xs: [CpuOnlySwish.evaluate(attrs, xs)[0]])


@pytest.fixture
def core() -> opforge.Core:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ps: PluginSystem = default_plugins().copy()
    ps.register_module(CpuOnlyPlugin(), PluginInfo("cpu_only_ext", "opforge-test-cpu-only", "1.0"))
    c = opforge.Core(ps)
    have = set(c.available_devices)
    if "CPU" not in have or not any(d.startswith("GPU") for d in have) or "HETERO" not in c.meta_devices():
        pytest.skip(f"needs CPU, a GPU device and HETERO (have {sorted(have)})")
    return c


def _model() -> opforge.Model:
    rng = np.random.default_rng(0)
    x = opforge.op("Parameter", element_type="f32", shape=[1, 3, 16, 16], name="x")
    x.output(0).set_names(["x"])
    w1 = opforge.op("Constant", value=(rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32))
    c1 = opforge.op("Convolution", x, w1, strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1],
                    dilations=[1, 1], name="conv1")
    s = opforge.Node.create(CpuOnlySwish, [opforge.op("Relu", c1, name="relu1")], {"beta": 1.5}, name="swish")
    w2 = opforge.op("Constant", value=(rng.standard_normal((4, 8, 3, 3)) * 0.3).astype(np.float32))
    c2 = opforge.op("Convolution", s, w2, strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1],
                    dilations=[1, 1], name="conv2")
    y = opforge.op("Relu", c2, name="relu2")
    y.output(0).set_names(["y"])
    return opforge.Model([y], [x], name="cpu_only_op")


def test_custom_op_with_only_a_cpu_kernel_runs_on_hetero_gpu_cpu(core: opforge.Core) -> None:
    model = _model()
    x = np.random.default_rng(1).standard_normal((1, 3, 16, 16)).astype(np.float32)
    want = core.compile_model(model, "CPU")([x])[0]
    with pytest.warns(UserWarning):  # the fallback from the first device is announced once
        compiled = core.compile_model(model, "HETERO:GPU,CPU")
    np.testing.assert_allclose(compiled([x])["y"], want, rtol=1e-4, atol=1e-5)
    assert compiled.get_property("HETERO_NUMBER_OF_SUBMODELS") == 3
    placement = compiled.get_property("HETERO_PLACEMENT")
    assert placement.nodes["swish"].device == "CPU"
    assert "no GPU kernel" in placement.nodes["swish"].reason
    assert placement.nodes["conv1"].device.startswith("GPU")


def test_fully_supported_model_is_one_subgraph_without_transfers(core: opforge.Core) -> None:
    x = opforge.op("Parameter", element_type="f32", shape=[2, 8], name="x")
    y = opforge.op("Relu", opforge.op("Add", x, x))
    compiled = core.compile_model(opforge.Model([y], [x]), "HETERO:GPU,CPU")
    assert compiled.get_property("HETERO_NUMBER_OF_SUBMODELS") == 1
    assert compiled.get_property("HETERO_NUMBER_OF_TRANSFERS") == 0
