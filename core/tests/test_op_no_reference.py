"""An op without a NumPy reference says so with :class:`NoReferenceError`, not a shape error."""

from __future__ import annotations

import numpy as np
import pytest
from opforge.element_type import Type
from opforge.errors import NoReferenceError, ShapeInferenceError, UnsupportedOpError
from opforge.graph import Model, Node
from opforge.op import InferContext, Op, TensorSpec
from opforge.opset.parameter import Parameter
from opforge.opset.result import Result
from opforge.reference import evaluate_model


class NoRef(Op):
    type_name = "NoRef"
    version = "test_no_ref"

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        return [TensorSpec(ctx.input_type(0), ctx.input_shape(0))]


def test_default_evaluate_raises_no_reference_error() -> None:
    with pytest.raises(NoReferenceError, match=r"NoRef-test_no_ref has no reference implementation") as info:
        NoRef.evaluate(NoRef.Attrs(), [np.zeros(2, np.float32)])
    assert isinstance(info.value, UnsupportedOpError)
    assert isinstance(info.value, NotImplementedError)
    assert not isinstance(info.value, ShapeInferenceError)


def test_reference_evaluator_passes_the_error_through() -> None:
    p = Node.create(Parameter, [], {"element_type": Type.f32, "shape": [2]}, "x")
    n = Node.create(NoRef, [p], {}, "n")
    model = Model([Node.create(Result, [n])], [p])
    with pytest.raises(NoReferenceError, match="NoRef"):
        evaluate_model(model, [np.zeros(2, np.float32)])
