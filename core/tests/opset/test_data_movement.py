"""Data-movement operations (Transpose, Concat, Split, VariadicSplit, Slice, StridedSlice, Pad,
ReverseSequence, Reverse, Roll): shape/type inference on static, dynamic and unknown inputs, and
the NumPy reference checked against OpenVINO's CPU device."""

from __future__ import annotations

from typing import Any

import numpy as np
import opforge
import pytest
from opforge.errors import AttributeValidationError, KernelError, ModelValidationError, ShapeInferenceError
from opforge.graph import Node
from opforge.shape import PartialShape

from .oracle import (
    assert_same,
    compare,
    const,
    evaluate_op,
    i64,
    openvino,
    openvino_reference,
    ov_compile,
    ov_core,
    param,
    shapes,
)

RNG = np.random.default_rng(0)


DATA = RNG.standard_normal((2, 3, 4)).astype(np.float32)
BIG = RNG.standard_normal((4, 5, 6)).astype(np.float32)


# --- Transpose -----------------------------------------------------------------------------------
def test_transpose_inference() -> None:
    x = param("f32", [2, None, 4])
    assert shapes(opforge.op("Transpose", x, const([2, 0, 1]))) == [PartialShape([4, 2, None])]
    assert shapes(opforge.op("Transpose", x, const([], np.int64))) == [PartialShape([4, None, 2])]
    assert shapes(opforge.op("Transpose", x, param("i32", [3]))) == [PartialShape.dynamic(3)]
    assert shapes(opforge.op("Transpose", param("f32", None), const([1, 0]))) == [PartialShape.dynamic(2)]
    assert shapes(opforge.op("Transpose", param("f32", None), param("i64", [None]))) == [
        PartialShape.dynamic()
    ]
    for order, match in (
        ([0, 0, 1], "not a permutation"),
        ([-1, 0, 1], "not a permutation"),
        ([0, 1], "has 2 values but the input .* has rank 3"),
    ):
        with pytest.raises(ShapeInferenceError, match=match):
            opforge.op("Transpose", x, const(order))
    with pytest.raises(ShapeInferenceError, match="must have rank 1"):
        opforge.op("Transpose", x, const([[0, 1, 2]]))
    with pytest.raises(ShapeInferenceError, match="input_order has 2 values"):
        opforge.op("Transpose", x, param("i64", [2]))


@pytest.mark.openvino
@pytest.mark.parametrize("order", [[2, 0, 1], [0, 1, 2], [], [1, 2, 0]])
def test_transpose_matches_openvino(order: list[int]) -> None:
    from openvino import opset1

    compare("Transpose", lambda d, o: opset1.transpose(d, o), [DATA, i64(*order)], consts=[1])
    if order:  # OpenVINO's CPU plugin fails on an empty order fed at run time
        compare("Transpose", lambda d, o: opset1.transpose(d, o), [DATA.astype(np.int32), i64(*order)])


# --- Concat --------------------------------------------------------------------------------------
def test_concat_inference() -> None:
    a, b = param("f32", [2, 3]), param("f32", [None, 5])
    assert shapes(opforge.op("Concat", a, b, axis=1)) == [PartialShape([2, 8])]
    assert shapes(opforge.op("Concat", a, b, param("f32", None), axis=-1)) == [PartialShape([2, None])]
    assert shapes(opforge.op("Concat", a, param("f32", [2, None]), axis=1)) == [PartialShape([2, None])]
    assert shapes(opforge.op("Concat", param("f32", None), param("f32", None), axis=0)) == [
        PartialShape.dynamic()
    ]
    assert shapes(opforge.op("Concat", a, axis=0)) == [PartialShape([2, 3])]
    with pytest.raises(ShapeInferenceError, match="differ outside the concatenation axis"):
        opforge.op("Concat", a, param("f32", [3, 3]), axis=1)
    with pytest.raises(ShapeInferenceError, match="different ranks"):
        opforge.op("Concat", a, param("f32", [3]), axis=0)
    with pytest.raises(ShapeInferenceError, match="element types differ"):
        opforge.op("Concat", a, param("i32", [2, 3]), axis=0)
    with pytest.raises(ShapeInferenceError, match="axis 2 is out of range"):
        opforge.op("Concat", a, a, axis=2)
    with pytest.raises(ShapeInferenceError, match="scalars"):
        opforge.op("Concat", param("f32", []), param("f32", []), axis=0)
    with pytest.raises(ModelValidationError, match="got 0 inputs"):
        opforge.op("Concat", axis=0)


@pytest.mark.openvino
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat_matches_openvino(axis: int) -> None:
    from openvino import opset1

    shapes_ = [list(DATA.shape) for _ in range(3)]
    for i, s in enumerate(shapes_):
        s[axis] = i + 1
    arrays = [RNG.standard_normal(s).astype(np.float32) for s in shapes_]
    compare("Concat", lambda *xs: opset1.concat(list(xs), axis), arrays, consts=[2], axis=axis)


# --- Split / VariadicSplit -----------------------------------------------------------------------
def test_split_inference() -> None:
    x = param("f32", [2, 6, None])
    assert shapes(opforge.op("Split", x, const(1), num_splits=3)) == [PartialShape([2, 2, None])] * 3
    assert shapes(opforge.op("Split", x, const(-1), num_splits=2)) == [PartialShape([2, 6, None])] * 2
    assert shapes(opforge.op("Split", x, param("i64", []), num_splits=2)) == [PartialShape.dynamic(3)] * 2
    assert (
        shapes(opforge.op("Split", param("f32", None), const(0), num_splits=2))
        == [PartialShape.dynamic()] * 2
    )
    with pytest.raises(ShapeInferenceError, match="not divisible by num_splits 4"):
        opforge.op("Split", x, const(1), num_splits=4)
    with pytest.raises(ShapeInferenceError, match="must have rank 0"):
        opforge.op("Split", x, const([1]), num_splits=2)
    with pytest.raises(AttributeValidationError, match="num_splits"):
        opforge.op("Split", x, const(1), num_splits=0)


def test_variadic_split_inference() -> None:
    x = param("f32", [2, 6, None])
    assert shapes(opforge.op("VariadicSplit", x, const(1), const([1, -1, 2]))) == [
        PartialShape([2, 1, None]),
        PartialShape([2, 3, None]),
        PartialShape([2, 2, None]),
    ]
    assert shapes(opforge.op("VariadicSplit", x, const(-1), const([1, -1]))) == [
        PartialShape([2, 6, 1]),
        PartialShape([2, 6, None]),
    ]
    assert (
        shapes(opforge.op("VariadicSplit", x, const([1]), param("i64", [2])))
        == [PartialShape([2, None, None])] * 2
    )
    assert (
        shapes(opforge.op("VariadicSplit", x, param("i32", []), const([1, 5])))
        == [PartialShape.dynamic(3)] * 2
    )
    assert (
        shapes(opforge.op("VariadicSplit", param("f32", None), const(0), const([1, 5])))
        == [PartialShape.dynamic()] * 2
    )
    for lengths, match in (
        ([1, 2, 2], "add up to 5, not the dimension 6"),
        ([1, -1, -1], "more than one -1"),
        ([8, -1], "more than the dimension"),
        ([-2, 8], "invalid length -2"),
    ):
        with pytest.raises(ShapeInferenceError, match=match):
            opforge.op("VariadicSplit", x, const(1), const(lengths))
    with pytest.raises(ShapeInferenceError, match="static shape"):
        opforge.op("VariadicSplit", x, const(1), param("i64", [None]))


@pytest.mark.openvino
def test_splits_match_openvino() -> None:
    from openvino import opset1

    for axis, n in ((1, 3), (-1, 2), (0, 1)):
        got = compare(
            "Split",
            lambda d, a, n=n: opset1.split(d, a, n),
            [DATA, i64(axis).reshape(())],
            consts=[1],
            num_splits=n,
        )
        assert len(got) == n
    for axis, lengths in ((2, [1, -1, 2]), (1, [0, 3]), (-3, [-1])):
        compare(
            "VariadicSplit",
            lambda d, a, ls: opset1.variadic_split(d, a, ls),
            [DATA, i64(axis).reshape(()), i64(*lengths)],
            consts=[1, 2],
        )


# --- Slice ---------------------------------------------------------------------------------------
def test_slice_inference() -> None:
    x = param("f32", [10, None, 6])
    assert shapes(opforge.op("Slice", x, const([1]), const([8]), const([2]))) == [PartialShape([4, None, 6])]
    assert shapes(
        opforge.op("Slice", x, const([-1, 0]), const([-100, 2**62]), const([-3, 1]), const([2, 1]))
    ) == [PartialShape([10, None, 2])]
    assert shapes(opforge.op("Slice", x, param("i64", [1]), const([8]), const([1]))) == [
        PartialShape([None, None, 6])
    ]
    assert shapes(opforge.op("Slice", x, param("i64", [2]), const([8, 1]), const([1, 1]), const([2, 0]))) == [
        PartialShape([None, None, None])
    ]
    assert shapes(opforge.op("Slice", x, const([1]), const([8]), const([1]), param("i64", [1]))) == [
        PartialShape.dynamic(3)
    ]
    assert shapes(opforge.op("Slice", param("f32", None), const([1]), const([8]), const([1]))) == [
        PartialShape.dynamic()
    ]
    with pytest.raises(ShapeInferenceError, match="step must not contain 0"):
        opforge.op("Slice", x, const([1]), const([8]), const([0]))
    with pytest.raises(ShapeInferenceError, match="same length"):
        opforge.op("Slice", x, const([1, 2]), const([8]), const([1]))
    with pytest.raises(ShapeInferenceError, match="axes values must be unique"):
        opforge.op("Slice", x, const([1, 2]), const([8, 3]), const([1, 1]), const([0, -3]))
    with pytest.raises(ShapeInferenceError, match="axes 3 is out of range"):
        opforge.op("Slice", x, const([1]), const([8]), const([1]), const([3]))
    with pytest.raises(ShapeInferenceError, match=r"stop .* expected an integer type"):
        opforge.op("Slice", x, const([1]), const([8.0], np.float32), const([1]))


@pytest.mark.openvino
@pytest.mark.parametrize(
    ("start", "stop", "step", "axes"),
    [
        ([1], [3], [1], None),
        ([-1, 0], [-100, 6], [-2, 2], [0, 2]),
        ([0, 10], [2**62, -10], [1, -1], [2, 1]),
        ([3], [1], [1], [1]),
        ([-2], [-(2**62)], [-1], [-1]),
        ([0, 0, 0], [4, 5, 6], [3, 2, 5], None),
    ],
)
def test_slice_matches_openvino(
    start: list[int], stop: list[int], step: list[int], axes: list[int] | None
) -> None:
    from openvino import opset8

    arrays = [BIG, i64(*start), i64(*stop), i64(*step)] + ([i64(*axes)] if axes is not None else [])
    build = lambda *a: opset8.slice(*a)  # noqa: E731
    compare("Slice", build, arrays, consts=range(1, len(arrays)))
    assert_same(evaluate_op("Slice", arrays), openvino(build, arrays, consts=range(1, len(arrays))))


# --- StridedSlice --------------------------------------------------------------------------------
def ss(x: Node, begin: list[int], end: list[int], stride: list[int] | None, **masks: list[int]) -> Node:
    ins = [x, const(begin), const(end)] + ([const(stride)] if stride is not None else [])
    attrs: dict[str, Any] = {"begin_mask": [], "end_mask": [], **masks}
    return opforge.op("StridedSlice", *ins, **attrs)


def test_strided_slice_inference() -> None:
    x = param("f32", [4, 5, 6])
    assert shapes(ss(x, [1, 0], [3, 0], [1, 1], end_mask=[0, 1])) == [PartialShape([2, 5, 6])]
    assert shapes(ss(x, [1, 0], [3, 0], None, end_mask=[0, 1])) == [PartialShape([2, 5, 6])]
    # ellipsis wins over new_axis, new_axis over shrink_axis
    assert shapes(ss(x, [1, 0], [3, 0], [1, 1], new_axis_mask=[1, 1], shrink_axis_mask=[1, 1])) == [
        PartialShape([1, 1, 4, 5, 6])
    ]
    assert shapes(ss(x, [1, 0], [3, 0], [1, 1], new_axis_mask=[0, 1], ellipsis_mask=[0, 1])) == [
        PartialShape([2, 5, 6])
    ]
    assert shapes(ss(x, [0, 2], [0, 3], [1, 1], ellipsis_mask=[1], shrink_axis_mask=[0, 1])) == [
        PartialShape([4, 5])
    ]
    assert shapes(ss(x, [-1], [0], [-1])) == [PartialShape([3, 5, 6])]
    # unknown begin/end: sliced dimensions become dynamic, new/removed axes still known
    y = opforge.op(
        "StridedSlice",
        x,
        param("i64", [2]),
        param("i64", [2]),
        param("i64", [2]),
        begin_mask=[0, 0],
        end_mask=[0, 0],
        new_axis_mask=[1, 0],
        shrink_axis_mask=[0, 1],
    )
    assert shapes(y) == [PartialShape([1, 5, 6])]
    y = opforge.op(
        "StridedSlice",
        param("f32", [4, None, 6]),
        param("i64", [2]),
        const([1, 2]),
        begin_mask=[0, 1],
        end_mask=[0, 0],
    )
    assert shapes(y) == [PartialShape([None, None, 6])]
    y = opforge.op("StridedSlice", x, param("i64", [None]), param("i64", [None]), begin_mask=[], end_mask=[])
    assert shapes(y) == [PartialShape.dynamic(3)]
    y = opforge.op(
        "StridedSlice",
        x,
        param("i64", [None]),
        param("i64", [None]),
        begin_mask=[],
        end_mask=[],
        new_axis_mask=[1],
    )
    assert shapes(y) == [PartialShape.dynamic()]
    assert shapes(ss(param("f32", None), [0], [1], [1])) == [PartialShape.dynamic()]


@pytest.mark.parametrize(
    ("begin", "end", "stride", "masks", "match"),
    [
        ([5], [6], [1], {"shrink_axis_mask": [1]}, "shrink_axis index 5 is out of range"),
        ([0, 0, 0, 0], [1, 1, 1, 1], [1, 1, 1, 1], {}, "index 4 dimensions but the data has rank 3"),
        ([0], [1], [0], {}, "stride must not be 0"),
        ([0, 0], [1, 1], [1, 1], {"ellipsis_mask": [1, 1]}, "more than one ellipsis"),
        ([0, 0], [1], [1, 1], {}, "same length"),
    ],
)
def test_strided_slice_errors(
    begin: list[int], end: list[int], stride: list[int], masks: dict[str, list[int]], match: str
) -> None:
    with pytest.raises(ShapeInferenceError, match=match):
        ss(param("f32", [4, 5, 6]), begin, end, stride, **masks)


def test_strided_slice_runtime_shrink_error() -> None:
    with pytest.raises(KernelError, match="shrink_axis index -5 is out of range"):
        evaluate_op(
            "StridedSlice", [BIG, i64(-5), i64(0), i64(1)], begin_mask=[0], end_mask=[0], shrink_axis_mask=[1]
        )


STRIDED_CASES: list[tuple[list[int], list[int], list[int], dict[str, list[int]]]] = [
    ([1, 0], [3, 0], [1, 1], {"begin_mask": [0, 1], "end_mask": [0, 1]}),
    ([3, 0], [0, 2], [-1, 2], {"begin_mask": [0, 1], "end_mask": [1, 0]}),
    (
        [1, 0, 2],
        [0, 0, 5],
        [1, 1, 2],
        {"begin_mask": [0, 0, 0], "end_mask": [1, 1, 0], "new_axis_mask": [0, 1, 0]},
    ),
    ([0, 2], [0, 3], [1, 1], {"begin_mask": [0, 0], "end_mask": [0, 0], "ellipsis_mask": [1, 0]}),
    ([-1, 1], [0, 4], [1, -1], {"begin_mask": [0, 1], "end_mask": [0, 1], "shrink_axis_mask": [1, 0]}),
    (
        [0, 1, 0],
        [0, 2, 0],
        [1, 1, 1],
        {
            "begin_mask": [1, 0, 1],
            "end_mask": [1, 0, 1],
            "new_axis_mask": [1, 0, 0],
            "shrink_axis_mask": [0, 1, 0],
        },
    ),
    (
        [1, 0, 0, -2],
        [3, 0, 0, -1],
        [1, 1, 1, 1],
        {
            "begin_mask": [0, 0, 0, 0],
            "end_mask": [0, 0, 0, 0],
            "new_axis_mask": [0, 1, 0, 0],
            "ellipsis_mask": [0, 0, 1, 0],
        },
    ),
    ([-100, 100], [100, -100], [3, -2], {"begin_mask": [0, 0], "end_mask": [0, 0]}),
]


@pytest.mark.openvino
@pytest.mark.parametrize(("begin", "end", "stride", "masks"), STRIDED_CASES)
def test_strided_slice_matches_openvino(
    begin: list[int], end: list[int], stride: list[int], masks: dict[str, list[int]]
) -> None:
    from openvino import opset1

    def build(d: Any, b: Any, e: Any, s: Any) -> Any:
        return opset1.strided_slice(
            d,
            b,
            e,
            s,
            masks["begin_mask"],
            masks["end_mask"],
            masks.get("new_axis_mask"),
            masks.get("shrink_axis_mask"),
            masks.get("ellipsis_mask"),
        )

    arrays = [BIG, i64(*begin), i64(*end), i64(*stride)]
    ours = evaluate_op("StridedSlice", arrays, consts=[1, 2, 3], **masks)
    assert_same(ours, openvino_reference(build, arrays))
    assert_same(evaluate_op("StridedSlice", arrays, **masks), ours)
    # OpenVINO's CPU plugin returns uninitialised memory when a new axis precedes a shrunk one
    if not (any(masks.get("new_axis_mask", [])) and any(masks.get("shrink_axis_mask", []))):
        assert_same(ours, openvino(build, arrays, consts=[1, 2, 3]))


# --- Pad -----------------------------------------------------------------------------------------
def test_pad_inference() -> None:
    x = param("f32", [4, None])
    assert shapes(opforge.op("Pad", x, const([1, 2]), const([-2, 0]))) == [PartialShape([3, None])]
    assert shapes(opforge.op("Pad", x, const([1, 2]), param("i64", [2]), const(0.0, np.float32))) == [
        PartialShape([None, None])
    ]
    assert shapes(opforge.op("Pad", param("f32", None), const([1]), const([1]))) == [PartialShape.dynamic()]
    assert shapes(opforge.op("Pad", x, const([3, 1]), const([3, 1]), pad_mode="reflect")) == [
        PartialShape([10, None])
    ]
    cases = [
        ([4, 2], [1], [1], "constant", "pads_begin has 1 values"),
        ([4], [4], [0], "reflect", "less than the dimension"),
        ([4], [0], [5], "symmetric", "at most the dimension"),
        ([4], [0], [-5], "constant", "crop more than dimension 0"),
        ([0], [1], [0], "edge", "cannot pad the empty dimension"),
    ]
    for shape, b, e, mode, match in cases:
        with pytest.raises(ShapeInferenceError, match=match):
            opforge.op("Pad", param("f32", shape), const(b), const(e), pad_mode=mode)
    with pytest.raises(ShapeInferenceError, match="pad_value has element type int32"):
        opforge.op("Pad", x, const([1, 1]), const([1, 1]), const(0, np.int32))
    with pytest.raises(ShapeInferenceError, match=r"pad_value .* must have rank 0"):
        opforge.op("Pad", x, const([1, 1]), const([1, 1]), const([0.0], np.float32))
    with pytest.raises(AttributeValidationError, match="pad_mode"):
        opforge.op("Pad", x, const([1, 1]), const([1, 1]), pad_mode="wrap")


@pytest.mark.openvino
@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric"])
def test_pad_matches_openvino(mode: str) -> None:
    from openvino import opset12

    x = RNG.standard_normal((4, 5)).astype(np.float32)
    for b, e in (
        ([-2, 1], [3, 0]),
        ([2, 0], [-1, 2]),
        ([-3, 3], [3, -3]),
        ([3, 4], [3, 4]),
        ([-1, -1], [-1, 0]),
        ([-4, 0], [0, 0]),
    ):
        if mode == "reflect" and max(b + e) >= 4:
            continue
        value = np.array(9.5, np.float32)
        compare(
            "Pad",
            lambda d, pb, pe, v: opset12.pad(d, pb, pe, mode, v),
            [x, i64(*b), i64(*e), value],
            consts=[1, 2, 3],
            pad_mode=mode,
        )
    ints = RNG.integers(-9, 9, (3, 4)).astype(np.int32)
    compare(
        "Pad",
        lambda d, pb, pe: opset12.pad(d, pb, pe, mode),
        [ints, i64(1, 2), i64(2, -1)],
        consts=[1, 2],
        pad_mode=mode,
    )


# --- ReverseSequence -----------------------------------------------------------------------------
def test_reverse_sequence_inference() -> None:
    x = param("f32", [None, 5, 2])
    assert shapes(opforge.op("ReverseSequence", x, param("i32", [3]))) == [PartialShape([3, 5, 2])]
    assert shapes(opforge.op("ReverseSequence", x, param("f32", [None]), batch_axis=2, seq_axis=-2)) == [
        PartialShape([None, 5, 2])
    ]
    assert shapes(opforge.op("ReverseSequence", param("f32", None), param("i32", [3]))) == [
        PartialShape.dynamic()
    ]
    with pytest.raises(ShapeInferenceError, match="must have one value per batch element"):
        opforge.op("ReverseSequence", param("f32", [3, 5]), param("i32", [4]))
    with pytest.raises(ShapeInferenceError, match="seq_axis 2 is out of range"):
        opforge.op("ReverseSequence", param("f32", [3, 5]), param("i32", [3]), seq_axis=2)
    with pytest.raises(ShapeInferenceError, match="name the same dimension"):
        opforge.op("ReverseSequence", param("f32", [3, 5]), param("i32", [3]), seq_axis=-2)
    with pytest.raises(ShapeInferenceError, match="rank 2 or more"):
        opforge.op("ReverseSequence", param("f32", [3]), param("i32", [3]))
    with pytest.raises(KernelError, match=r"seq_lengths\[0\] = 6 is out of range"):
        evaluate_op("ReverseSequence", [DATA, np.array([6, 1], np.int32)], seq_axis=2)


@pytest.mark.openvino
@pytest.mark.parametrize(
    ("batch_axis", "seq_axis", "lengths"),
    [(0, 1, [0, 3]), (0, 2, [4, 2]), (2, 1, [1, 2, 3, 0]), (-1, 0, [2, 1, 2, 1])],
)
def test_reverse_sequence_matches_openvino(batch_axis: int, seq_axis: int, lengths: list[int]) -> None:
    from openvino import opset1

    compare(
        "ReverseSequence",
        lambda d, s: opset1.reverse_sequence(d, s, batch_axis, seq_axis),
        [DATA, np.array(lengths, np.int32)],
        batch_axis=batch_axis,
        seq_axis=seq_axis,
    )


# --- Reverse -------------------------------------------------------------------------------------
def test_reverse_inference() -> None:
    x = param("f32", [2, None, 4])
    assert shapes(opforge.op("Reverse", x, const([0, -1]), mode="index")) == [PartialShape([2, None, 4])]
    assert shapes(opforge.op("Reverse", x, const([True, False, True], np.bool_), mode="mask")) == [
        PartialShape([2, None, 4])
    ]
    assert shapes(opforge.op("Reverse", param("f32", None), param("i64", [1]), mode="index")) == [
        PartialShape.dynamic()
    ]
    with pytest.raises(ShapeInferenceError, match="axes 3 is out of range"):
        opforge.op("Reverse", x, const([3]), mode="index")
    with pytest.raises(ShapeInferenceError, match="mask has 2 values"):
        opforge.op("Reverse", x, const([True, False], np.bool_), mode="mask")
    with pytest.raises(ShapeInferenceError, match="must be boolean in mode 'mask'"):
        opforge.op("Reverse", x, const([1, 0, 1]), mode="mask")
    with pytest.raises(AttributeValidationError, match="mode"):
        opforge.op("Reverse", x, const([0]))


def _openvino_reverse(x: np.ndarray, axes: np.ndarray, mode: str) -> np.ndarray:
    """Reverse is absent from OpenVINO's Python opsets: load it from a hand-written IR."""
    ov = pytest.importorskip("openvino")
    et, prec = ("boolean", "BOOL") if mode == "mask" else ("i64", "I64")
    dims = "".join(f"<dim>{d}</dim>" for d in x.shape)
    xml = f"""<?xml version="1.0"?>
<net name="reverse" version="11"><layers>
<layer id="0" name="x" type="Parameter" version="opset1">
<data shape="{",".join(map(str, x.shape))}" element_type="f32"/>
<output><port id="0" precision="FP32">{dims}</port></output></layer>
<layer id="1" name="axes" type="Const" version="opset1">
<data element_type="{et}" shape="{axes.size}" offset="0" size="{axes.nbytes}"/>
<output><port id="0" precision="{prec}"><dim>{axes.size}</dim></port></output></layer>
<layer id="2" name="reverse" type="Reverse" version="opset1"><data mode="{mode}"/>
<input><port id="0">{dims}</port><port id="1"><dim>{axes.size}</dim></port></input>
<output><port id="2" precision="FP32">{dims}</port></output></layer>
<layer id="3" name="out" type="Result" version="opset1"><input><port id="0">{dims}</port></input></layer>
</layers><edges>
<edge from-layer="0" from-port="0" to-layer="2" to-port="0"/>
<edge from-layer="1" from-port="0" to-layer="2" to-port="1"/>
<edge from-layer="2" from-port="2" to-layer="3" to-port="0"/></edges></net>"""
    model = ov_core().read_model(xml.encode(), ov.Tensor(np.frombuffer(axes.tobytes(), np.uint8).copy()))
    return np.asarray(ov_compile(model)([x])[0])


@pytest.mark.openvino
@pytest.mark.parametrize(
    ("axes", "mode"),
    [
        ([0, 2], "index"),
        ([-1], "index"),
        ([], "index"),
        ([True, False, True], "mask"),
        ([False, True, False], "mask"),
    ],
)
def test_reverse_matches_openvino(axes: list[Any], mode: str) -> None:
    a = np.array(axes, np.bool_ if mode == "mask" else np.int64)
    (ours,) = evaluate_op("Reverse", [DATA, a], consts=[1], mode=mode)
    assert_same([ours], [_openvino_reverse(DATA, a, mode)])


# --- Roll ----------------------------------------------------------------------------------------
def test_roll_inference() -> None:
    x = param("f32", [2, None, 4])
    assert shapes(opforge.op("Roll", x, const([1, -2]), const([0, 2]))) == [PartialShape([2, None, 4])]
    assert shapes(opforge.op("Roll", x, param("i32", []), param("i64", [None]))) == [
        PartialShape([2, None, 4])
    ]
    assert shapes(opforge.op("Roll", param("f32", None), const(1), const([5]))) == [PartialShape.dynamic()]
    with pytest.raises(ShapeInferenceError, match="axes 3 is out of range"):
        opforge.op("Roll", x, const(1), const([3]))
    with pytest.raises(ShapeInferenceError, match="same length"):
        opforge.op("Roll", x, const([1, 2]), const([0]))
    with pytest.raises(ShapeInferenceError, match=r"shift .* expected an integer type"):
        opforge.op("Roll", x, const(1.0, np.float32), const([0]))


@pytest.mark.openvino
@pytest.mark.parametrize(
    ("shift", "axes"), [([5, -1], [1, 2]), ([2, 3], [1, 1]), (-7, -1), ([3], [0]), (4, [2])]
)
def test_roll_matches_openvino(shift: Any, axes: Any) -> None:
    from openvino import opset7

    compare(
        "Roll",
        lambda d, s, a: opset7.roll(d, s, a),
        [DATA, i64(shift).reshape(np.shape(shift)), i64(axes).reshape(np.shape(axes))],
        consts=[1, 2],
    )


@pytest.mark.openvino
def test_roll_scalar_shift_applies_to_every_axis() -> None:
    """The specification rolls every listed axis by a scalar shift; OpenVINO's CPU plugin rejects
    that form, so compare with the equivalent one-shift-per-axis model."""
    from openvino import opset7

    (ours,) = evaluate_op("Roll", [DATA, i64(1).reshape(()), i64(0, 2)], consts=[1, 2])
    assert_same(
        [ours], openvino(lambda d, s, a: opset7.roll(d, s, a), [DATA, i64(1, 1), i64(0, 2)], consts=[1, 2])
    )
