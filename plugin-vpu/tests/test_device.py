"""The VPU device: enumeration, FP16 execution of the built-in kernel library, query, HETERO."""

from __future__ import annotations

import numpy as np
import opforge
import pytest
from opforge.errors import DeviceNotFoundError, PropertyError, UnsupportedOpError
from opforge.graph import Model, Node
from opforge.reference import evaluate_model
from vpu_util import const, half, param, rand


def conv_model() -> Model:
    x = param([1, 3, 10, 10])
    w = const(rand([8, 3, 3, 3], seed=1) * 0.3)
    conv = opforge.op("Convolution", x.output(0), w.output(0), strides=[1, 1], pads_begin=[1, 1],
                      pads_end=[1, 1], dilations=[1, 1])
    b = opforge.op("Add", conv.output(0), const(rand([1, 8, 1, 1], seed=2)).output(0))
    r = opforge.op("Relu", b.output(0))
    pool = opforge.op("MaxPool", r.output(0), strides=[2, 2], pads_begin=[0, 0], pads_end=[0, 0],
                      kernel=[2, 2], dilations=[1, 1])
    return Model([pool.output(0)], [x], name="conv")


def test_devices_are_enumerated_with_the_myriad_alias(core: opforge.Core) -> None:
    avail = core.available_devices
    # MYRIAD is the same device under OpenVINO's name: usable, but listed once (as VPU)
    assert "VPU.0" in avail and not any(d.startswith("MYRIAD") for d in avail)
    assert core.compile_model(conv_model(), "MYRIAD.0").get_property("EXECUTION_DEVICES") == ["MYRIAD.0"]
    with pytest.raises(DeviceNotFoundError, match=r"VPU\.99"):
        core.compile_model(conv_model(), "VPU.99")


def test_runs_in_fp16_by_default_and_f32_for_debugging(core: opforge.Core) -> None:
    m = conv_model()
    x = rand([1, 3, 10, 10])
    want = evaluate_model(m, [x])[0]
    got16 = core.compile_model(m, "VPU")([x])[0]
    assert got16.dtype == np.float32  # the model's type; the device stored half
    err16 = float(np.abs(got16 - want).max())
    # every stored tensor is half: the result is exactly representable in FP16, and close
    np.testing.assert_array_equal(got16, half(got16))
    assert 0 < err16 < 2e-2 * float(np.abs(want).max())
    got32 = core.compile_model(m, "MYRIAD", {"INFERENCE_PRECISION_HINT": "f32"})([x])[0]
    np.testing.assert_allclose(got32, want, rtol=1e-4, atol=1e-5)
    with pytest.raises(PropertyError):
        core.compile_model(m, "VPU", {"INFERENCE_PRECISION_HINT": "bf16"})


def test_query_model_and_hetero_fallback(core: opforge.Core) -> None:
    m = conv_model()
    assert set(core.query_model(m, "VPU").values()) == {"VPU"}
    x = rand([1, 3, 10, 10])
    want = evaluate_model(m, [x])[0]
    got = core.compile_model(m, "HETERO:VPU,CPU")([x])[0]
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2)


def test_an_op_without_a_kernel_is_left_out_of_query_and_refused_naming_hetero(core: opforge.Core) -> None:
    class NoKernel(opforge.Op):
        type_name = "NoVpuKernel"
        version = "vpu_test"

        @classmethod
        def infer(cls, ctx: opforge.InferContext) -> list[opforge.TensorSpec]:
            return [opforge.TensorSpec(ctx.input_type(0), ctx.input_shape(0))]

        @classmethod
        def evaluate(cls, attrs: object, inputs: list[np.ndarray]) -> list[np.ndarray]:
            return [inputs[0] * 2]

    core.add_extension(NoKernel)
    x = param([4])
    n = Node.create(NoKernel, [x.output(0)], {})
    m = Model([n.output(0)], [x])
    assert n.name not in core.query_model(m, "VPU")
    with pytest.raises(UnsupportedOpError, match=r"HETERO:VPU,CPU"):
        core.compile_model(m, "VPU")
