"""The rewrites devices run when planning (``planning_passes``): BatchNorm folded into the
convolution before it, the erf GELU and the decomposed layer norm fused. Each pattern in the
orders exporters write it (same values by the reference before and after), and near-misses
that must stay as they are."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from graph_building import const, op, param, rand, types_of
from opforge import Model, Node
from opforge.graph import Value
from opforge.reference import evaluate_model
from opforge.transformations.fold_batch_norm import FoldBatchNormIntoConvolution
from opforge.transformations.fuse_gelu_erf import FuseGeluErf
from opforge.transformations.fuse_layer_norm import FuseLayerNormToMVN
from opforge.transformations.pattern import MatcherPass


def rewritten(model: Model, pass_: MatcherPass, feed: list[np.ndarray], rtol: float = 1e-5) -> list[str]:
    """Apply ``pass_`` once, check the values did not change, and return the op types left."""
    want = evaluate_model(model, feed)
    pass_.run(model)
    got = evaluate_model(model, feed)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-5)
    return types_of(model)


# ------------------------------------------------------------------------------- BatchNorm
def _bn(data: Value, channels: int, seed: int = 3) -> Node:
    g, b, m = (const(rand((channels,), seed + k)) for k in range(3))
    v = const(rand((channels,), seed + 3, 0.5, 1.5))
    return op("BatchNormInference", data, g, b, m, v, epsilon=1e-5, name="bn")


def _conv(x: Value, group: bool) -> Node:
    kw = dict(strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1], dilations=[1, 1], name="conv")
    if group:
        return op("GroupConvolution", x, const(rand((2, 3, 2, 3, 3), 1)), **kw)
    return op("Convolution", x, const(rand((6, 4, 3, 3), 1)), **kw)


@pytest.mark.parametrize("group", [False, True])
def test_batch_norm_after_a_convolution_becomes_scaled_weights_and_a_shift(group: bool) -> None:
    x = param([1, 4, 5, 5])
    bn = _bn(_conv(x, group), 6)
    model = Model([op("Relu", bn)], [x])
    left = rewritten(model, FoldBatchNormIntoConvolution(), [rand((1, 4, 5, 5), 9)], rtol=1e-4)
    assert left == ["GroupConvolution" if group else "Convolution", "Add", "Relu"]
    add = model.results[0].inputs[0].node.inputs[0].node
    assert add.name == "bn" and add.inputs[1].node.constant_value().shape == (1, 6, 1, 1)


def test_batch_norm_is_not_folded_into_a_convolution_someone_else_reads() -> None:
    x = param([1, 4, 5, 5])
    conv = _conv(x, False)
    model = Model([op("Result", _bn(conv, 6)), op("Result", conv)], [x])
    assert FoldBatchNormIntoConvolution().run(model) == 0


def test_batch_norm_with_a_parameter_fed_at_run_time_is_not_folded() -> None:
    x, mean = param([1, 4, 5, 5]), param([6], "mean")
    conv = _conv(x, False)
    g, b, v = const(np.ones(6)), const(np.zeros(6)), const(np.ones(6))
    model = Model([op("BatchNormInference", conv, g, b, mean, v, epsilon=1e-5)], [x, mean])
    assert FoldBatchNormIntoConvolution().run(model) == 0


# ------------------------------------------------------------------------------- GELU (erf)
def _scaled(x: Value, divide: bool) -> Node:
    if divide:
        return op("Divide", x, const(1.4142135))
    return op("Multiply", const(1 / math.sqrt(2.0)), x)


GELU_FORMS: dict[str, Callable[[Value, Node], Node]] = {
    # (x * (1 + erf)) * 0.5: PyTorch's exporter
    "x_times_then_half": lambda x, one_plus: op("Multiply", op("Multiply", x, one_plus), const(0.5)),
    # ((1 + erf) * 0.5) * x
    "half_then_x": lambda x, one_plus: op("Multiply", x, op("Multiply", one_plus, const([0.5]))),
    # (x * 0.5) * (1 + erf): TensorFlow/Keras
    "half_x_times": lambda x, one_plus: op("Multiply", op("Multiply", const(0.5), x), one_plus),
}


@pytest.mark.parametrize("divide", [True, False])
@pytest.mark.parametrize("form", sorted(GELU_FORMS))
def test_erf_gelu_in_every_exporter_order_becomes_one_gelu(form: str, divide: bool) -> None:
    x = param([2, 7])
    one_plus = op("Add", const(1.0), op("Erf", _scaled(x, divide)))
    model = Model([op("Tanh", GELU_FORMS[form](x, one_plus))], [x])
    assert rewritten(model, FuseGeluErf(), [rand((2, 7), 4, -4, 4)]) == ["Gelu", "Tanh"]
    gelu = model.results[0].inputs[0].node.inputs[0].node
    assert gelu.attrs.approximation_mode == "ERF" and gelu.inputs[0].node.name == "x"  # type: ignore[attr-defined]


@pytest.mark.parametrize("near_miss", ["wrong_half", "other_tensor", "erf_read_twice", "wrong_sqrt2"])
def test_gelu_near_misses_stay(near_miss: str) -> None:
    x, z = param([2, 7]), param([2, 7], "z")
    erf = op("Erf", op("Divide", x, const(1.3 if near_miss == "wrong_sqrt2" else math.sqrt(2.0))))
    one_plus = op("Add", erf, const(1.0))
    outer = z if near_miss == "other_tensor" else x
    y = op("Multiply", op("Multiply", outer, one_plus), const(0.6 if near_miss == "wrong_half" else 0.5))
    results = [op("Result", y)] + ([op("Result", erf)] if near_miss == "erf_read_twice" else [])
    model = Model(results, [x, z])
    assert FuseGeluErf().run(model) == 0


# ------------------------------------------------------------------------------- LayerNorm
def _layer_norm(x: Value, form: str, axis: int = -1, centred: Value | None = None) -> Node:
    ax = const([axis], np.int64)
    d = op("Subtract", x if centred is None else centred, op("ReduceMean", x, ax, keep_dims=True))
    sq = op("Power", d, const(2.0)) if form == "power" else op("Multiply", d, d)
    s = op("Sqrt", op("Add", op("ReduceMean", sq, ax, keep_dims=True), const(1e-5)))
    if form == "reciprocal":
        return op("Multiply", d, op("Divide", const(1.0), s))
    return op("Divide", d, s)


@pytest.mark.parametrize("form", ["divide", "reciprocal", "power"])
def test_decomposed_layer_norm_becomes_mvn_and_keeps_its_affine_tail(form: str) -> None:
    x = param([2, 5, 8])
    y = op("Add", op("Multiply", _layer_norm(x, form), const(rand((8,), 1))), const(rand((8,), 2)))
    model = Model([y], [x])
    assert rewritten(model, FuseLayerNormToMVN(), [rand((2, 5, 8), 3)]) == ["MVN", "Multiply", "Add"]
    mvn = next(n for n in model.get_ordered_ops() if n.type_name == "MVN")
    assert mvn.attrs.eps == pytest.approx(1e-5) and mvn.attrs.eps_mode == "inside_sqrt"  # type: ignore[attr-defined]
    assert mvn.inputs[1].node.constant_value().tolist() == [2]


@pytest.mark.parametrize("near_miss", ["axis_1", "other_tensor_centred", "mean_read_twice"])
def test_layer_norm_near_misses_stay(near_miss: str) -> None:
    x, z = param([2, 5, 8]), param([2, 5, 8], "z")
    y = _layer_norm(x, "divide", axis=1 if near_miss == "axis_1" else -1,
                    centred=z if near_miss == "other_tensor_centred" else None)
    results = [op("Result", y)]
    if near_miss == "mean_read_twice":
        mean = y.inputs[0].node.inputs[1]  # Subtract(x, mean)
        results.append(op("Result", mean))
    model = Model(results, [x, z])
    assert FuseLayerNormToMVN().run(model) == 0
