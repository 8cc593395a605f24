"""FuseGeluTanh: ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`` in the forms exporters write
(cube as Pow or two Multiplies, three outer orders, rounded constants) -> Gelu(TANH) with the same
values by the reference; near-misses stay as they are."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from graph_building import const, op, param, types_of
from opforge import Model, Node
from opforge.graph import Value
from opforge.reference import evaluate_model
from opforge.transformations.fuse_gelu_tanh import FuseGeluTanh

K = math.sqrt(2 / math.pi)


def sample(shape: tuple[int, ...]) -> np.ndarray:
    # the tails (tanh saturated), zero and ordinary values
    v = np.random.default_rng(5).uniform(-6, 6, int(np.prod(shape)))
    v[:6] = [-30.0, -3.0, 0.0, 0.5, 3.0, 30.0]
    return v.reshape(shape).astype(np.float32)


def cube(x: Value, form: str, power: float = 3.0) -> Node:
    if form == "pow":
        return op("Power", x, const(power))
    if form == "x_xx":  # torch.onnx's GELU(approximate="tanh") before opset 20
        return op("Multiply", x, op("Multiply", x, x))
    return op("Multiply", op("Multiply", x, x), x)


def one_plus_tanh(x: Value, form: str, k: float = K, c: float = 0.044715, x_inner: Value | None = None,
                  power: float = 3.0) -> Node:
    inner = op("Add", x if x_inner is None else x_inner, op("Multiply", const(c), cube(x, form, power)))
    return op("Add", const(1.0), op("Tanh", op("Multiply", inner, const(k))))


OUTER: dict[str, Callable[[Value, Node], Node]] = {
    "half_x_times": lambda x, t: op("Multiply", op("Multiply", const(0.5), x), t),  # HF gelu_new
    "x_times_then_half": lambda x, t: op("Multiply", const(0.5), op("Multiply", x, t)),  # torch.onnx
    "half_then_x": lambda x, t: op("Multiply", x, op("Multiply", t, const([0.5]))),
}


@pytest.mark.parametrize("outer", sorted(OUTER))
@pytest.mark.parametrize("form", ["pow", "x_xx", "xx_x"])
def test_tanh_gelu_in_every_exporter_form_becomes_one_gelu(form: str, outer: str) -> None:
    x = param([3, 16])
    model = Model([op("Relu", OUTER[outer](x, one_plus_tanh(x, form)))], [x])
    feed = [sample((3, 16))]
    (want,) = evaluate_model(model, feed)
    assert FuseGeluTanh().run(model) == 1
    assert types_of(model) == ["Gelu", "Relu"]
    gelu = model.results[0].inputs[0].node.inputs[0].node
    assert gelu.attrs.approximation_mode == "TANH" and gelu.inputs[0].node.name == "x"  # type: ignore[attr-defined]
    (got,) = evaluate_model(model, feed)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert FuseGeluTanh().run(model) == 0


def test_rounded_constants_are_accepted() -> None:
    x = param([2, 8])
    model = Model([OUTER["half_x_times"](x, one_plus_tanh(x, "pow", k=0.79788456))], [x])
    assert FuseGeluTanh().run(model) == 1 and types_of(model) == ["Gelu"]


@pytest.mark.parametrize("near_miss", ["wrong_k", "wrong_c", "other_inner", "cubic_term_read_twice", "square",
                                       "broadcast_half"])
def test_tanh_gelu_near_misses_stay(near_miss: str) -> None:
    x, z = param([2, 8]), param([2, 8], "z")
    k = 0.7 if near_miss == "wrong_k" else K
    c = 0.05 if near_miss == "wrong_c" else 0.044715
    t = one_plus_tanh(x, "pow", k, c, x_inner=z if near_miss == "other_inner" else None,
                      power=2.0 if near_miss == "square" else 3.0)
    half = const(np.full((2, 2, 8), 0.5)) if near_miss == "broadcast_half" else const(0.5)
    y = op("Multiply", op("Multiply", half, x), t)
    results = [op("Result", y)]
    if near_miss == "cubic_term_read_twice":
        results.append(op("Result", t.inputs[1].node.inputs[0].node.inputs[0].node.inputs[1].node))
    model = Model(results, [x, z])
    assert FuseGeluTanh().run(model) == 0


def test_a_plugin_subclass_of_a_standard_op_inside_the_pattern_stays() -> None:
    # A third party's Tanh subclass may compute something else under the same shape: the
    # fusion must not swallow it (Match.all_standard).
    from opforge.opset.tanh import Tanh

    class PluginTanh(Tanh):
        type_name = "Tanh"
        version = "acme1"

    x = param([2, 8])
    inner = op("Add", x, op("Multiply", const(0.044715), cube(x, "pow")))
    t = op("Add", const(1.0), Node.create(PluginTanh, [op("Multiply", inner, const(K)).output(0)], {}))
    model = Model([OUTER["half_x_times"](x, t)], [x])
    assert not PluginTanh.is_standard
    assert FuseGeluTanh().run(model) == 0 and "Gelu" not in types_of(model)
