"""InputBinder: the per-request input path's fast lane (exact arrays, by position or name) takes
the same inputs as bind_inputs and hands over the same arrays; everything else, every error
included, is bind_inputs' own."""

from __future__ import annotations

from typing import Any

import numpy as np
import opforge
import pytest
from opforge import Model
from opforge.errors import InferenceInputError, InputTypeError
from opforge.runtime import inputs as inputs_module
from opforge.runtime.inputs import InputBinder, bind_inputs


def two_input_model(batch: int | None = 2) -> Model:
    a = opforge.op("Parameter", element_type="f32", shape=[batch, 3], name="a_node")
    a.output(0).set_names(["a", "alias_a"])
    b = opforge.op("Parameter", element_type="i64", shape=[3], name="b_node")
    b.output(0).set_names(["b"])
    y = opforge.op("Add", a, opforge.op("Convert", b, destination_type="f32"), name="add")
    y.output(0).set_names(["y"])
    return Model([y], [a, b], name="two")


A = np.arange(6, dtype=np.float32).reshape(2, 3)
B = np.array([1, 2, 3], np.int64)


@pytest.fixture
def no_general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fails a test that reaches bind_inputs: what it binds must take the fast lane."""
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("bind_inputs was called")

    monkeypatch.setattr(inputs_module, "bind_inputs", refuse)


@pytest.mark.parametrize("given", [
    [A, B], (A, B), {"a": A, "b": B}, {"b": B, "alias_a": A}, {"a_node": A, "b_node": B},
])
def test_exact_arrays_take_the_fast_lane_in_input_order(given: Any, no_general_path: None) -> None:
    model = two_input_model()
    got = InputBinder(model, model.inputs).bind(given)
    assert len(got) == 2 and got[0] is A and got[1] is B  # the caller's arrays, not copies


def test_one_input_model_takes_a_bare_array(no_general_path: None) -> None:
    x = opforge.op("Parameter", element_type="f32", shape=[2, 3], name="x")
    model = Model([opforge.op("Relu", x, name="r")], [x])
    assert InputBinder(model, model.inputs).bind(A)[0] is A


def test_a_non_contiguous_exact_array_is_handed_over_as_it_is(no_general_path: None) -> None:
    # the binder checks type, dtype and shape only; devices make their own copies where they need one
    model = two_input_model()
    view = np.arange(12, dtype=np.float32).reshape(3, 4)[:2, :3]
    assert InputBinder(model, model.inputs).bind([view, B])[0] is view


@pytest.mark.parametrize("given", [
    [A],                                     # too few
    [A, B, B],                               # too many
    [A.astype(np.float64), B],               # wrong element type
    [A[:1], B],                              # wrong shape
    [A.tolist(), B],                         # a list (converted by the general path)
    {"a": A},                                # missing one
    {"a": A, "alias_a": A},                  # the same input twice, the other missing
    {"a": A, "nope": B},                     # unknown name
    {0: A, 1: B},                            # by index
    np.stack([A, A]),                        # a bare array for a two-input model
    None, 3, "ab",
])
def test_anything_else_gets_exactly_what_bind_inputs_does(given: Any) -> None:
    model = two_input_model()
    binder = InputBinder(model, model.inputs)
    try:
        want: Any = bind_inputs(model, given, model.inputs)
    except (InferenceInputError, InputTypeError) as err:
        with pytest.raises(type(err)) as got:
            binder.bind(given)
        assert str(got.value) == str(err)
        return
    got_arrays = binder.bind(given)
    assert len(got_arrays) == len(want)
    for g, w in zip(got_arrays, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_a_dynamic_input_always_takes_the_general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    model = two_input_model(batch=None)
    binder = InputBinder(model, model.inputs)
    assert binder.signature is None
    calls: list[Any] = []
    real = inputs_module.bind_inputs

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(inputs_module, "bind_inputs", counting)
    got = binder.bind([np.zeros((5, 3), np.float32), B])
    assert got[0].shape == (5, 3) and len(calls) == 1


def test_a_subclass_of_ndarray_takes_the_general_path() -> None:
    class Tagged(np.ndarray):
        pass

    model = two_input_model()
    tagged = A.view(Tagged)
    got = InputBinder(model, model.inputs).bind([tagged, B])
    np.testing.assert_array_equal(got[0], A)


def test_requests_use_it_and_keep_their_checks(core: opforge.Core, relu_add_model: Model) -> None:
    req = core.compile_model(relu_add_model, "TEMPLATE").create_infer_request()
    x = np.array([[-1.0, 2.0, -3.0], [4.0, -5.0, 6.0]], np.float32)
    want = np.maximum(x, 0) + np.array([1.0, -2.0, 3.0], np.float32)
    np.testing.assert_array_equal(req.infer([x])[0], want)
    np.testing.assert_array_equal(req.infer({"x": x})[0], want)
    assert req.get_tensor("x") is x  # the request keeps the caller's array (no copy)
    with pytest.raises(InferenceInputError, match=r"Input 'x' has wrong shape: got \(3, 3\), expected \(2, 3\)"):
        req.infer([np.zeros((3, 3), np.float32)])
    with pytest.raises(InputTypeError, match=r"Input 'x' has wrong element type: got float64, expected float32"):
        req.infer({"x": x.astype(np.float64)})
