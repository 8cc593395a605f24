"""The device front half (opforge.planning), driven by a device whose plans run the reference:
value inputs, specialisation, the bounded plan cache and staging around data-dependent shapes.

``RefPlanned.build_plan`` refuses any model a real device could not plan (a dynamic shape, a
value port that is not a constant), so every test also proves the front half gave the device
what it promises."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import opforge
import pytest
from opforge import Model, Node
from opforge.errors import InferenceInputError, UnsupportedOpError
from opforge.graph import Value
from opforge.op import STRUCTURAL
from opforge.planning import (
    MAX_VALUE_INPUT_ELEMENTS,
    PlanCache,
    PlannedExecutable,
    PlanStates,
    StagedExecutable,
    lone_data_dependent_node,
    read_value_inputs,
    specialize,
    split_point,
    value_inputs,
)
from opforge.reference import evaluate_model
from opforge.runtime.device import Executable


class RefPlanned(PlannedExecutable[Model]):
    """A device whose plan is the specialised model itself, run by the reference."""

    device_name = "REF"

    def __init__(self, model: Model, log: list[Model] | None = None) -> None:
        super().__init__(model)
        self.log = log if log is not None else []
        if self.static_at_compile():
            self.plan_now()

    def build_plan(self, model: Model) -> Model:
        lone = lone_data_dependent_node(model)
        for n in model.get_ordered_ops():
            if n.type_name in STRUCTURAL:
                continue
            if not all(i.partial_shape.is_static for i in n.inputs):
                raise AssertionError(f"{n.name}: input shapes not static")
            if n is not lone and not all(o.partial_shape.is_static for o in n.outputs()):
                raise AssertionError(f"{n.name}: output shapes not static")
            for i in n.op.value_inputs:
                if i < len(n.inputs) and n.inputs[i].node.constant_value() is None:
                    raise AssertionError(f"{n.name}: value port {i} is not a constant")
        self.log.append(model)
        return model

    def compile_stage(self, model: Model) -> Executable:
        return RefPlanned(model, self.log)

    def infer(self, inputs: Sequence[np.ndarray], state: Any) -> list[np.ndarray]:
        _, plan = self.plan_for(inputs)
        if isinstance(plan, StagedExecutable):
            return plan.infer(inputs, plan.create_state())
        return evaluate_model(plan, list(inputs))


def param(name: str, shape: list[int | None], et: str = "f32") -> Node:
    return opforge.op("Parameter", element_type=et, shape=shape, name=name)


def const(value: Any, dtype: Any = np.int64) -> Node:
    return opforge.op("Constant", value=np.asarray(value, dtype=dtype))


def op(type_name: str, *args: Value, **attrs: Any) -> Node:
    return opforge.op(type_name, *args, **attrs)


def _mask_model() -> Model:
    """An attention-mask tail with dynamic batch and sequence axes: ConstantOfShape-like
    Broadcast and an Expand to ShapeOf arithmetic (what failed on CPU as 'Broadcast needs constant
    parameters')."""
    x = param("x", [None, None, 8])
    shp = op("ShapeOf", x)
    bs = op("Gather", shp, const([0, 1]), const(0))
    ones = op("Broadcast", const(1.0, np.float32), bs)  # ConstantOfShape([batch, seq])
    full = op("Concat", bs, const([1]), axis=0)
    mask = op("Broadcast", op("Unsqueeze", ones, const([2])), full)
    y = op("Multiply", x, mask)
    return Model([op("Result", y)], [x], name="mask")


def test_dynamic_axes_are_planned_per_shape_with_shape_arithmetic_folded() -> None:
    model = _mask_model()
    exe = RefPlanned(model)
    rng = np.random.default_rng(0)
    for shape in [(2, 5, 8), (1, 3, 8), (2, 5, 8)]:
        x = rng.standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(exe.infer([x], None)[0], x)
    assert len(exe.plans) == 2 and exe.plans.built == 2
    plan = exe.plans.values()[0]
    assert {n.type_name for n in plan.get_ordered_ops()} <= {"Parameter", "Constant", "Multiply", "Result"}


def test_value_inputs_plan_per_value_and_refuse_large_values() -> None:
    x = param("x", [2, 3, 4])
    target = param("shape", [2], "i64")
    model = Model([op("Result", op("Reshape", x, target, special_zero=False))], [x, target])
    assert value_inputs(model) == [1]
    exe = RefPlanned(model)
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    assert exe.infer([data, np.array([4, 6])], None)[0].shape == (4, 6)
    assert exe.infer([data, np.array([-1, 2])], None)[0].shape == (12, 2)
    assert len(exe.plans) == 2
    with pytest.raises(InferenceInputError, match=r"model input 1 \('shape'\).*at most 4096"):
        read_value_inputs(model, [1], [data, np.zeros(MAX_VALUE_INPUT_ELEMENTS + 1, np.int64)], "REF")


def test_value_input_feeding_data_too_keeps_the_data_path_unfolded() -> None:
    """A fed count is both a shape (Range's bound) and data (added to the result): only the
    shape computation folds, the data path still reads the input."""
    n = param("n", [], "i64")
    rng = op("Range", const(0), n, const(1), output_type="i64")
    y = op("Add", rng, n)
    model = Model([op("Result", y)], [n])
    exe = RefPlanned(model)
    np.testing.assert_array_equal(exe.infer([np.array(4)], None)[0], np.arange(4) + 4)
    plan = exe.plans.values()[0]
    assert any(t.type_name == "Parameter" for t in plan.get_ordered_ops())
    assert any(t.type_name == "Add" for t in plan.get_ordered_ops())


def test_the_plan_cache_is_bounded() -> None:
    x = param("x", [None])
    model = Model([op("Result", op("Relu", x))], [x])
    exe = RefPlanned(model)
    for n in range(1, 40):
        exe.infer([np.ones(n, np.float32)], None)
    assert len(exe.plans) == 16 and exe.plans.built == 39 and exe.plans.evicted == 23


def test_plan_cache_builds_once_and_plan_states_follow_rebuilt_plans() -> None:
    cache: PlanCache[object] = PlanCache(2)
    calls = []
    a = cache.get("a", lambda: calls.append("a") or object())
    assert cache.get("a", lambda: calls.append("again") or object()) is a and calls == ["a"]
    states: PlanStates[object, list[int]] = PlanStates(2)
    s1 = states.get("a", a, lambda p: [1])
    assert states.get("a", a, lambda p: [2]) is s1
    assert states.get("a", object(), lambda p: [3]) == [3]  # a rebuilt plan gets a new state


def _ssd_model() -> Model:
    """An SSD-style tail: TopK's K = min(300, number of scores over a threshold after NonZero)."""
    scores = param("scores", [None])
    nz = op("NonZero", op("Greater", scores, const(0.5, np.float32)), output_type="i64")
    count = op("Gather", op("ShapeOf", nz), const([1]), const(0))
    k = op("Minimum", count, const([300]))
    topk = op("TopK", scores, op("Squeeze", k, const([0])), axis=0, mode="max", sort="value",
              index_element_type="i64")
    return Model([op("Result", topk.output(0)), op("Result", topk.output(1)), op("Result", nz)], [scores])


@pytest.mark.parametrize("n", [1000, 200, 7])
def test_data_dependent_shapes_run_in_stages(n: int) -> None:
    model = _ssd_model()
    exe = RefPlanned(model)
    scores = np.random.default_rng(n).random(n).astype(np.float32)
    want = evaluate_model(model, [scores])
    got = exe.infer([scores], None)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    staged = exe.plans.values()[0]
    assert isinstance(staged, StagedExecutable) and staged.point.type_name == "NonZero"
    assert staged.middle is not None and staged.prefix is not None
    # every stage the device built is static, except the lone NonZero stage
    assert any(lone_data_dependent_node(m) is not None for m in exe.log)


def test_a_value_port_fed_by_data_is_planned_on_the_computed_value() -> None:
    """Reshape to a shape read out of a tensor: no plan can know it, so the Reshape starts the
    suffix, which plans per value of that (small) computed shape."""
    x = param("x", [6])
    s = param("s", [2, 2500], "f32")  # data: too large to be read as a value input
    target = op("Convert", op("ReduceMax", s, const([1]), keep_dims=False), destination_type="i64")
    model = Model([op("Result", op("Reshape", x, target, special_zero=False))], [x, s])
    assert value_inputs(model) == []
    exe = RefPlanned(model)
    data = np.arange(6, dtype=np.float32)
    big = np.zeros((2, 2500), np.float32)
    big[0, 7], big[1, 9] = 2.0, 3.0
    assert exe.infer([data, big], None)[0].shape == (2, 3)
    staged = exe.plans.values()[0]
    assert isinstance(staged, StagedExecutable) and staged.in_suffix and staged.point.type_name == "Reshape"
    suffix = staged.suffix
    assert isinstance(suffix, RefPlanned) and value_inputs(suffix.model) == [1]
    big[0, 7], big[1, 9] = 3.0, 2.0
    assert exe.infer([data, big], None)[0].shape == (3, 2)
    assert len(exe.plans) == 1 and len(suffix.plans) == 2  # one staging, a suffix plan per value


def test_a_value_port_fed_by_a_model_input_too_large_to_read_is_refused() -> None:
    """Nothing computes the value before the Reshape: staging would make the same model its own
    suffix without end. It says which node and input instead."""
    x = param("x", [6])
    s = param("s", [MAX_VALUE_INPUT_ELEMENTS + 1], "i64")
    model = Model([op("Result", op("Reshape", x, s, special_zero=False, name="r"))], [x, s])
    with pytest.raises(UnsupportedOpError, match=r"node 'r' \(Reshape\) reads input\(s\) \[1\].*\['s'\]"):
        RefPlanned(model)


def test_specialize_never_changes_the_model_and_split_point_of_static_model_is_none() -> None:
    model = _mask_model()
    before = [(n.name, str(n.output(0).partial_shape)) for n in model.get_ordered_ops()]
    m = specialize(model, [(1, 2, 8)])
    assert [(n.name, str(n.output(0).partial_shape)) for n in model.get_ordered_ops()] == before
    assert split_point(m) is None


def test_data_computed_from_value_inputs_alone_folds_into_the_plan() -> None:
    """A Range of fed bounds, and what only it feeds, are functions of the plan's key: they fold,
    so a device needs no kernel for them (the CPU has none for Range)."""
    n = param("n", [], "i64")
    y = op("Multiply", op("Range", const(0), n, const(1), output_type="i64"), const(2))
    model = Model([op("Result", y)], [n])
    exe = RefPlanned(model)
    for v in (3, 5):
        np.testing.assert_array_equal(exe.infer([np.array(v)], None)[0], np.arange(v) * 2)
    assert len(exe.plans) == 2
    for plan in exe.plans.values():
        assert {t.type_name for t in plan.get_ordered_ops()} <= {"Parameter", "Constant", "Result"}
