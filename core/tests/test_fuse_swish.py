"""FuseSwish: Multiply(x, Sigmoid(x)) in either order -> Swish(x); near-misses stay as they are."""

from __future__ import annotations

import numpy as np
import opforge
import pytest
from opforge import Model, Node, Type
from opforge.graph import Value
from opforge.reference import evaluate_model
from opforge.transformations.fuse_swish import FuseSwish


def param(name: str = "x", shape: tuple[int, ...] = (2, 5), et: Type = Type.f32) -> Node:
    return opforge.op("Parameter", element_type=et, shape=list(shape), name=name)


def sigmoid(a: Value, name: str | None = None) -> Node:
    return opforge.op("Sigmoid", a, name=name)


def mul(a: Value, b: Value, name: str | None = None, **attrs: str) -> Node:
    return opforge.op("Multiply", a, b, name=name, **attrs)


def types_of(model: Model) -> list[str]:
    return [n.type_name for n in model.get_ordered_ops()]


def sample(shape: tuple[int, ...] = (2, 5), dtype: type = np.float32) -> np.ndarray:
    # both tails of the sigmoid, zero, and ordinary values
    v = np.array([-100.0, -8.0, -1.5, -0.25, 0.0, 0.25, 1.5, 8.0, 60.0, 100.0])
    return np.resize(v, shape).astype(dtype)


@pytest.mark.parametrize("sigmoid_first", [False, True])
def test_silu_becomes_one_swish_with_the_same_values_and_names(sigmoid_first: bool) -> None:
    x = param()
    s = sigmoid(x, "sig")
    m = mul(s, x, "silu") if sigmoid_first else mul(x, s, "silu")
    m.output(0).set_names(["y"])
    model = Model([m], name="m")
    xs = sample()
    (want,) = evaluate_model(model, [xs])

    assert FuseSwish().run(model) == 1
    assert types_of(model) == ["Parameter", "Swish", "Result"]
    swish = model.output(0).node
    assert swish.name == "silu"
    assert len(swish.inputs) == 1 and swish.inputs[0].node.name == "x"  # beta absent: 1.0
    assert list(model.output(0).names) == ["y"]
    (got,) = evaluate_model(model, [xs])
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    assert FuseSwish().run(model) == 0  # nothing left to fuse


@pytest.mark.parametrize("et", [Type.f16, Type.bf16, Type.f64])
def test_low_and_double_precision_silu_is_fused_keeping_its_type(et: Type) -> None:
    x = param(et=et)
    model = Model([mul(x, sigmoid(x), "silu")])
    assert FuseSwish().run(model) == 1
    assert types_of(model) == ["Parameter", "Swish", "Result"]
    assert model.output(0).element_type is et


def test_f16_values_agree_with_the_unfused_graph() -> None:
    x = param(et=Type.f16)
    model = Model([mul(sigmoid(x), x)])
    xs = sample(dtype=np.float16)
    (want,) = evaluate_model(model, [xs])
    FuseSwish().run(model)
    (got,) = evaluate_model(model, [xs])
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=1e-3)


def test_sigmoid_with_other_readers_stays_for_them_and_the_multiply_is_fused() -> None:
    x = param()
    s = sigmoid(x, "sig")
    m = mul(x, s, "silu")
    other = opforge.op("Add", s, opforge.op("Constant", value=np.float32(1.0)), name="other")
    model = Model([m, other])
    xs = sample()
    want = evaluate_model(model, [xs])

    assert FuseSwish().run(model) == 1
    assert sorted(types_of(model)) == sorted(["Parameter", "Sigmoid", "Swish", "Constant", "Add", "Result", "Result"])
    assert model.output(0).node.type_name == "Swish"
    assert model.output(1).node.inputs[0].node.name == "sig"
    for got, w in zip(evaluate_model(model, [xs]), want):
        np.testing.assert_allclose(got, w, rtol=1e-6, atol=1e-7)


def test_near_misses_are_left_alone() -> None:
    x = param("x")
    y = param("y")
    relu_x = opforge.op("Relu", x, name="relu_x")
    cases = [
        mul(sigmoid(y), x, "sigmoid_of_another_tensor"),
        mul(sigmoid(relu_x), x, "sigmoid_of_a_function_of_x"),
        mul(x, x, "square"),
        mul(sigmoid(x), sigmoid(x), "two_sigmoids"),
        opforge.op("Add", x, sigmoid(x), name="add_not_multiply"),
        opforge.op("Divide", x, sigmoid(x), name="divide_not_multiply"),
    ]
    model = Model(cases)
    before = types_of(model)
    assert FuseSwish().run(model) == 0
    assert types_of(model) == before


def test_a_stack_of_silu_blocks_is_fused_in_one_run() -> None:
    # conv-free stand-in for an EfficientNet stage: SiLU(SiLU(x) + c) three times over
    cur: Value = param(shape=(1, 4, 3, 3))
    for i in range(3):
        act = mul(cur, sigmoid(cur, f"sig{i}"), f"silu{i}")
        cur = opforge.op("Add", act, opforge.op("Constant", value=np.float32(0.5)), name=f"add{i}")
    model = Model([cur])
    xs = sample((1, 4, 3, 3))
    (want,) = evaluate_model(model, [xs])

    assert FuseSwish().run(model) == 3
    assert types_of(model).count("Swish") == 3
    assert "Sigmoid" not in types_of(model) and "Multiply" not in types_of(model)
    (got,) = evaluate_model(model, [xs])
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_paddle_broadcast_multiply_is_still_elementwise_and_fused() -> None:
    x = param()
    model = Model([mul(sigmoid(x), x, "silu", auto_broadcast="pdpd")])
    assert FuseSwish().run(model) == 1
    assert types_of(model) == ["Parameter", "Swish", "Result"]
