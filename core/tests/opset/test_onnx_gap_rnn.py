"""RNNSequence-5, GRUSequence-5 and LSTMSequence-5: shape inference and the NumPy reference checked
against OpenVINO's CPU device, in every direction, with ragged sequence lengths and clipping."""

from __future__ import annotations

from typing import Any

import numpy as np
import opforge
import pytest
from opforge.element_type import Type
from opforge.errors import AttributeValidationError, ShapeInferenceError
from opforge.graph import Model, Node
from opforge.reference import evaluate_model
from opforge.shape import PartialShape

RNG = np.random.default_rng(0)
B, T, IN, H = 3, 4, 5, 6


def param(a: np.ndarray) -> Node:
    return opforge.op("Parameter", element_type=Type.from_numpy(a.dtype), shape=PartialShape(a.shape))


def ours(type_name: str, arrays: list[np.ndarray], **attrs: Any) -> list[np.ndarray]:
    params = [param(a) for a in arrays]
    node = opforge.op(type_name, *params, **attrs)
    outs = evaluate_model(Model(node.outputs(), params), arrays)
    for o, spec in zip(outs, node.output_specs):
        assert o.dtype == spec.type.np and spec.shape.compatible(o.shape)
    return outs


def openvino(fn: str, arrays: list[np.ndarray], *args: Any, **kwargs: Any) -> list[np.ndarray]:
    ov = pytest.importorskip("openvino")
    o5 = pytest.importorskip("openvino.opset5")
    params = [o5.parameter(list(a.shape), a.dtype) for a in arrays]
    node = getattr(o5, fn)(*params, *args, **kwargs)
    compiled = ov.Core().compile_model(ov.Model(node.outputs(), params), "CPU",
                                       {"INFERENCE_PRECISION_HINT": "f32"})
    res = compiled(arrays)
    return [np.asarray(res[compiled.output(i)]) for i in range(len(compiled.outputs))]


def inputs(gates: int, nd: int, states: int, bias_gates: int | None = None) -> list[np.ndarray]:
    f = np.float32
    x = RNG.standard_normal((B, T, IN)).astype(f)
    st = [RNG.standard_normal((B, nd, H)).astype(f) for _ in range(states)]
    lengths = np.array([4, 2, 0], np.int32)
    w = RNG.standard_normal((nd, gates * H, IN)).astype(f) * 0.5
    r = RNG.standard_normal((nd, gates * H, H)).astype(f) * 0.5
    b = RNG.standard_normal((nd, (bias_gates or gates) * H)).astype(f)
    return [x, *st, lengths, w, r, b]


def close(a: list[np.ndarray], b: list[np.ndarray]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.shape == y.shape
        np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_lstm_matches_openvino(direction: str) -> None:
    nd = 2 if direction == "bidirectional" else 1
    arrs = inputs(4, nd, 2)
    close(ours("LSTMSequence", arrs, hidden_size=H, direction=direction, clip=2.0),
          openvino("lstm_sequence", arrs, H, direction, clip=2.0))


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("lbr", [False, True])
def test_gru_matches_openvino(direction: str, lbr: bool) -> None:
    nd = 2 if direction == "bidirectional" else 1
    arrs = inputs(3, nd, 1, 4 if lbr else 3)
    close(ours("GRUSequence", arrs, hidden_size=H, direction=direction, linear_before_reset=lbr),
          openvino("gru_sequence", arrs, H, direction, linear_before_reset=lbr))


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_rnn_matches_openvino(direction: str) -> None:
    nd = 2 if direction == "bidirectional" else 1
    arrs = inputs(1, nd, 1)
    close(ours("RNNSequence", arrs, hidden_size=H, direction=direction, activations=["relu"]),
          openvino("rnn_sequence", arrs, H, direction, activations=["relu"]))


def test_shapes_with_dynamic_dims() -> None:
    x = opforge.op("Parameter", element_type=Type.f32, shape=PartialShape([None, None, IN]))
    h = opforge.op("Parameter", element_type=Type.f32, shape=PartialShape.dynamic())
    ln = opforge.op("Parameter", element_type=Type.i64, shape=PartialShape([None]))
    w = opforge.op("Constant", value=np.zeros((2, 3 * H, IN), np.float32))
    r = opforge.op("Constant", value=np.zeros((2, 3 * H, H), np.float32))
    b = opforge.op("Constant", value=np.zeros((2, 3 * H), np.float32))
    node = opforge.op("GRUSequence", x, h, ln, w, r, b, hidden_size=H, direction="bidirectional")
    assert [s.shape for s in node.output_specs] == [PartialShape([None, 2, None, H]), PartialShape([None, 2, H])]


def test_bad_weights_and_attributes() -> None:
    arrs = inputs(1, 1, 1)
    params = [param(a) for a in arrs]
    with pytest.raises(ShapeInferenceError, match="hidden_size"):
        opforge.op("RNNSequence", *params, hidden_size=H + 1)
    with pytest.raises(ShapeInferenceError, match="num_directions"):
        opforge.op("RNNSequence", *params, hidden_size=H, direction="bidirectional")
    with pytest.raises(AttributeValidationError, match="unsupported activation"):
        opforge.op("RNNSequence", *params, hidden_size=H, activations=["softsign"])
