"""MergeTransposes: two Transposes in a row become one (the identity: none), same values by the
reference; a first Transpose someone else reads, or a run-time order, stays."""

from __future__ import annotations

from typing import Any

import numpy as np
import opforge
import pytest
from graph_building import param, types_of
from opforge import Model, Node
from opforge.graph import Value
from opforge.reference import evaluate_model
from opforge.transformations.merge_transposes import MergeTransposes


def transpose(x: Value, order: list[int]) -> Node:
    return opforge.op("Transpose", x, opforge.op("Constant", value=np.array(order, np.int64)))


def sample(shape: tuple[int, ...]) -> np.ndarray:
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)


@pytest.mark.parametrize(("p1", "p2", "want"), [
    ([0, 2, 1, 3], [0, 1, 3, 2], [0, 2, 3, 1]),  # attention's K: head split, then K^T
    ([2, 0, 3, 1], [1, 3, 0, 2], None),  # inverse permutations: no Transpose at all
    ([], [0, 2, 1, 3], [3, 1, 2, 0]),  # an empty order reverses
])
def test_two_transposes_become_one(p1: list[int], p2: list[int], want: list[int] | None) -> None:
    x = param([2, 3, 4, 5])
    model = Model([opforge.op("Relu", transpose(transpose(x, p1), p2))], [x])
    feed = [sample((2, 3, 4, 5))]
    (before,) = evaluate_model(model, feed)
    assert MergeTransposes().run(model) == 1
    (after,) = evaluate_model(model, feed)
    np.testing.assert_array_equal(after, before)
    if want is None:
        assert types_of(model) == ["Relu"]
    else:
        assert types_of(model) == ["Transpose", "Relu"]
        t = model.results[0].inputs[0].node.inputs[0].node
        assert t.inputs[0].node.name == "x" and t.inputs[1].node.constant_value().tolist() == want


def test_three_in_a_row_merge_to_one_over_two_runs() -> None:
    x = param([2, 3, 4], et="i32")
    model = Model([transpose(transpose(transpose(x, [1, 0, 2]), [0, 2, 1]), [2, 1, 0])], [x])
    feed = [np.arange(24, dtype=np.int32).reshape(2, 3, 4)]
    (before,) = evaluate_model(model, feed)
    while MergeTransposes().run(model):
        pass
    assert types_of(model) == ["Transpose"]
    np.testing.assert_array_equal(evaluate_model(model, feed)[0], before)


def test_a_first_transpose_with_another_reader_or_a_fed_order_stays() -> None:
    x = param([2, 3, 4])
    first = transpose(x, [1, 0, 2])
    shared = Model([opforge.op("Result", transpose(first, [0, 2, 1])), opforge.op("Result", first)], [x])
    assert MergeTransposes().run(shared) == 0
    order = param([3], "order", "i64")
    fed: Any = opforge.op("Transpose", transpose(x, [1, 0, 2]), order)
    assert MergeTransposes().run(Model([fed], [x, order])) == 0
