"""Shape operations (ShapeOf, Reshape, Squeeze, Unsqueeze, Broadcast, Tile, Range, Eye, NonZero,
Identity): shape/type inference on static, dynamic and unknown inputs, and the NumPy reference
checked against OpenVINO's CPU device."""

from __future__ import annotations

from typing import Any

import numpy as np
import opforge
import pytest
from opforge.element_type import Type
from opforge.errors import AttributeValidationError, KernelError, ShapeInferenceError
from opforge.graph import Model
from opforge.reference import evaluate_model, evaluate_node
from opforge.shape import PartialShape

from .oracle import assert_same, compare, const, evaluate_op, i64, openvino, openvino_ir_layers, param, shapes

RNG = np.random.default_rng(0)


DATA = RNG.standard_normal((2, 3, 4)).astype(np.float32)


# --- ShapeOf -----------------------------------------------------------------------------------
def test_shape_of_inference() -> None:
    assert shapes(opforge.op("ShapeOf", param("f32", [2, None, 4]))) == [PartialShape([3])]
    assert shapes(opforge.op("ShapeOf", param("f32", None))) == [PartialShape([None])]
    n = opforge.op("ShapeOf", param("f32", [2]), output_type="i32")
    assert n.output_specs[0].type is Type.i32
    with pytest.raises(AttributeValidationError, match="output_type must be i32 or i64"):
        opforge.op("ShapeOf", param("f32", [2]), output_type="f32")


@pytest.mark.openvino
@pytest.mark.parametrize("out", ["i64", "i32"])
def test_shape_of_matches_openvino(out: str) -> None:
    from openvino import opset3

    got = compare("ShapeOf", lambda x: opset3.shape_of(x, out), [DATA], output_type=out)
    assert got[0].dtype == Type.parse(out).np
    assert evaluate_op("ShapeOf", [np.array(1.0, np.float32)])[0].shape == (0,)


# --- Reshape -----------------------------------------------------------------------------------
def test_reshape_inference() -> None:
    x = param("f32", [2, None, 6])
    assert shapes(opforge.op("Reshape", x, const([0, -1]), special_zero=True)) == [PartialShape([2, None])]
    assert shapes(opforge.op("Reshape", param("f32", [2, 3, 4]), const([-1, 4]), special_zero=False)) == [
        PartialShape([6, 4])
    ]
    assert shapes(opforge.op("Reshape", param("f32", [None, 3]), const([-1, 6]), special_zero=False)) == [
        PartialShape([None, 6])
    ]
    # -1 next to a zero-size dimension resolves to 1 (OpenVINO's rule)
    assert shapes(opforge.op("Reshape", param("f32", [2, 0, 3]), const([0, -1]), special_zero=False)) == [
        PartialShape([0, 1])
    ]
    # unknown pattern values: rank from the pattern length, or dynamic rank
    assert shapes(opforge.op("Reshape", x, param("i64", [3]), special_zero=True)) == [PartialShape.dynamic(3)]
    assert shapes(opforge.op("Reshape", x, param("i32", [None]), special_zero=True)) == [
        PartialShape.dynamic()
    ]
    assert shapes(opforge.op("Reshape", param("f32", None), const([0, 5]), special_zero=True)) == [
        PartialShape([None, 5])
    ]


@pytest.mark.parametrize(
    ("shape", "pattern", "match"),
    [
        ([2, 3], [4, 2], "cannot reshape"),
        ([2, 3], [-1, -1], "more than one -1"),
        ([2, 3], [-2, 3], "invalid dimension -2"),
        ([2, 3], [0, 0, 0], "copies dimension 2"),
        ([2, 3], [4, -1], "not divisible"),
        ([2, 3], [0, -1], "another dimension is 0"),
    ],
)
def test_reshape_errors(shape: list[int], pattern: list[int], match: str) -> None:
    with pytest.raises(ShapeInferenceError, match=match):
        opforge.op("Reshape", param("f32", shape), const(pattern), special_zero=pattern == [0, 0, 0])


def test_reshape_checks_pattern_input() -> None:
    with pytest.raises(ShapeInferenceError, match=r"target shape .* expected an integer type"):
        opforge.op("Reshape", param("f32", [2, 3]), param("f32", [2]), special_zero=False)
    with pytest.raises(ShapeInferenceError, match="must have rank 1"):
        opforge.op("Reshape", param("f32", [2, 3]), const(6), special_zero=False)
    with pytest.raises(AttributeValidationError, match="special_zero"):
        opforge.op("Reshape", param("f32", [2, 3]), const([6]))


@pytest.mark.openvino
@pytest.mark.parametrize(
    ("pattern", "special_zero"),
    [
        ([4, -1], False),
        ([0, -1, 2], True),
        ([0, 0, 4], True),
        ([24], False),
        ([-1], True),
        ([3, 1, 8], False),
    ],
)
def test_reshape_matches_openvino(pattern: list[int], special_zero: bool) -> None:
    from openvino import opset1

    compare(
        "Reshape",
        lambda x, p: opset1.reshape(x, p, special_zero),
        [DATA, i64(*pattern)],
        consts=[1],
        special_zero=special_zero,
    )
    # a pattern fed at run time gives the same result
    out = evaluate_op("Reshape", [DATA, i64(*pattern)], special_zero=special_zero)
    assert (
        out[0].shape
        == openvino(lambda x, p: opset1.reshape(x, p, special_zero), [DATA, i64(*pattern)], consts=[1])[
            0
        ].shape
    )


def test_reshape_runtime_error_names_node() -> None:
    with pytest.raises(KernelError, match=r"Reshape.*cannot reshape"):
        evaluate_op("Reshape", [DATA, i64(5, 5)], special_zero=False)


# --- Squeeze / Unsqueeze -----------------------------------------------------------------------
def test_squeeze_inference() -> None:
    x = param("f32", [1, 2, 1, None])
    assert shapes(opforge.op("Squeeze", x, const([0]))) == [PartialShape([2, 1, None])]
    assert shapes(opforge.op("Squeeze", x, const([-1]))) == [
        PartialShape([1, 2, 1])
    ]  # dynamic dim taken as 1
    assert shapes(opforge.op("Squeeze", x, const([1]))) == [PartialShape([1, 2, 1, None])]  # not 1: kept
    assert shapes(opforge.op("Squeeze", x, const(2))) == [PartialShape([1, 2, None])]
    assert shapes(opforge.op("Squeeze", param("f32", [1, 2, 1]))) == [PartialShape([2])]
    assert shapes(opforge.op("Squeeze", param("f32", [1, 2, 1]), const([], np.int64))) == [PartialShape([2])]
    assert shapes(opforge.op("Squeeze", x)) == [PartialShape.dynamic()]  # is the ? a 1?
    assert shapes(opforge.op("Squeeze", x, param("i64", [1]))) == [PartialShape.dynamic()]
    assert shapes(opforge.op("Squeeze", param("f32", [2, 3]), param("i64", [1]))) == [PartialShape([2, 3])]
    assert shapes(opforge.op("Squeeze", param("f32", None), const([0]))) == [PartialShape.dynamic()]
    with pytest.raises(ShapeInferenceError, match="axes 3 is out of range for rank 3"):
        opforge.op("Squeeze", param("f32", [1, 2, 1]), const([3]))
    with pytest.raises(ShapeInferenceError, match="rank 0 or 1"):
        opforge.op("Squeeze", param("f32", [1, 2, 1]), const([[0]]))


def test_unsqueeze_inference() -> None:
    x = param("f32", [2, None])
    assert shapes(opforge.op("Unsqueeze", x, const([0, -1]))) == [PartialShape([1, 2, None, 1])]
    assert shapes(opforge.op("Unsqueeze", x, const(1))) == [PartialShape([2, 1, None])]
    assert shapes(opforge.op("Unsqueeze", x, const([0, 0]))) == [PartialShape([1, 2, None])]
    assert shapes(opforge.op("Unsqueeze", x, param("i64", [2]))) == [PartialShape.dynamic()]
    assert shapes(opforge.op("Unsqueeze", param("f32", None), const([0]))) == [PartialShape.dynamic()]
    with pytest.raises(ShapeInferenceError, match="axes 3 is out of range"):
        opforge.op("Unsqueeze", x, const([3]))
    with pytest.raises(ShapeInferenceError, match="must not be empty"):
        opforge.op("Unsqueeze", x, const([], np.int64))
    with pytest.raises(ShapeInferenceError, match="expected an integer type"):
        opforge.op("Unsqueeze", x, const([0.0], np.float32))


@pytest.mark.openvino
def test_squeeze_unsqueeze_match_openvino() -> None:
    from openvino import opset1, opset15

    x = RNG.standard_normal((1, 3, 1, 2)).astype(np.float32)
    for axes in ([0], [-2], [0, 2], [0, 0], [1]):
        compare("Squeeze", lambda d, a: opset1.squeeze(d, a), [x, i64(*axes)], consts=[1])
    # no axes: every dimension of size 1
    assert_same(evaluate_op("Squeeze", [x]), openvino(lambda d: opset15.squeeze(d), [x]))
    for axes in ([0], [-1], [1, 3], [0, 0]):
        compare("Unsqueeze", lambda d, a: opset1.unsqueeze(d, a), [DATA, i64(*axes)], consts=[1])


# --- Broadcast ---------------------------------------------------------------------------------
def test_broadcast_inference() -> None:
    x = param("f32", [3, 1])
    assert shapes(opforge.op("Broadcast", x, const([2, 3, 4]))) == [PartialShape([2, 3, 4])]
    assert shapes(opforge.op("Broadcast", x, const([2, 1, 4]), mode="bidirectional")) == [
        PartialShape([2, 3, 4])
    ]
    assert shapes(opforge.op("Broadcast", param("f32", [3]), const([3, 2]), const([0]), mode="explicit")) == [
        PartialShape([3, 2])
    ]
    assert shapes(opforge.op("Broadcast", param("f32", [None, 1]), const([5, 2]))) == [PartialShape([5, 2])]
    assert shapes(opforge.op("Broadcast", x, param("i64", [4]))) == [PartialShape.dynamic(4)]
    assert shapes(
        opforge.op("Broadcast", param("f32", [2, None, 1]), param("i64", [4]), mode="bidirectional")
    ) == [PartialShape([None, 2, None, None])]
    assert shapes(opforge.op("Broadcast", x, param("i64", [None]))) == [PartialShape.dynamic()]
    assert shapes(opforge.op("Broadcast", param("f32", None), const([2, 2]))) == [PartialShape([2, 2])]


@pytest.mark.parametrize(
    ("shape", "target", "mode", "axes", "match"),
    [
        ([2, 3], [3], "numpy", None, "lower rank"),
        ([2, 3], [4, 1, 3], "numpy", None, "cannot be broadcast"),
        ([2, 3], [4, 3], "bidirectional", None, "cannot be broadcast"),
        ([2, 3], [2, 3, 3], "explicit", [1, 0], "strictly increasing"),
        ([2], [2, 3], "explicit", [1], "cannot be broadcast to target dimension 1"),
        ([2], [2, 3], "explicit", [0, 1], "one value per data dimension"),
        ([2], [2, 3], "explicit", None, "needs the axes_mapping"),
        ([2], [2, -3], "numpy", None, "negative"),
    ],
)
def test_broadcast_errors(
    shape: list[int], target: list[int], mode: str, axes: list[int] | None, match: str
) -> None:
    inputs = [param("f32", shape), const(target)] + ([const(axes)] if axes is not None else [])
    with pytest.raises(ShapeInferenceError, match=match):
        opforge.op("Broadcast", *inputs, mode=mode)


@pytest.mark.openvino
def test_broadcast_matches_openvino() -> None:
    from openvino import opset3

    x = RNG.standard_normal((3, 1)).astype(np.float32)
    compare("Broadcast", lambda d, t: opset3.broadcast(d, t), [x, i64(2, 3, 4)], consts=[1])
    compare(
        "Broadcast",
        lambda d, t: opset3.broadcast(d, t, None, "bidirectional"),
        [x, i64(2, 1, 5)],
        consts=[1],
        mode="bidirectional",
    )
    y = RNG.integers(-5, 5, (3,)).astype(np.int32)
    compare(
        "Broadcast",
        lambda d, t, a: opset3.broadcast(d, t, a, "explicit"),
        [y, i64(2, 3, 2), i64(1)],
        consts=[1, 2],
        mode="explicit",
    )
    out = evaluate_op("Broadcast", [x, i64(2, 3, 4)])[0]
    assert out.flags.writeable


# --- Tile ----------------------------------------------------------------------------------------
def test_tile_inference() -> None:
    assert shapes(opforge.op("Tile", param("f32", [2, None]), const([3, 2]))) == [PartialShape([6, None])]
    assert shapes(opforge.op("Tile", param("f32", [2, 3]), const([2, 1, 1]))) == [PartialShape([2, 2, 3])]
    assert shapes(opforge.op("Tile", param("f32", [2, 3, 4]), const([2]))) == [PartialShape([2, 3, 8])]
    assert shapes(opforge.op("Tile", param("f32", [None, 3]), const([0, 1]))) == [PartialShape([0, 3])]
    assert shapes(opforge.op("Tile", param("f32", [2, 3]), param("i64", [3]))) == [PartialShape.dynamic(3)]
    assert shapes(opforge.op("Tile", param("f32", None), const([2]))) == [PartialShape.dynamic()]
    with pytest.raises(ShapeInferenceError, match="must not be negative"):
        opforge.op("Tile", param("f32", [2, 3]), const([1, -1]))
    with pytest.raises(ShapeInferenceError, match=r"repeats .* expected an integer type"):
        opforge.op("Tile", param("f32", [2, 3]), const([1.0], np.float32))


@pytest.mark.openvino
@pytest.mark.parametrize("repeats", [[2, 1, 3], [2], [1, 2, 1, 2], [0, 1, 1]])
def test_tile_matches_openvino(repeats: list[int]) -> None:
    from openvino import opset1

    compare("Tile", lambda d, r: opset1.tile(d, r), [DATA, i64(*repeats)], consts=[1])


# --- Range ---------------------------------------------------------------------------------------
def test_range_inference() -> None:
    def rng(start: Any, stop: Any, step: Any, out: str, dt: Any = np.float32) -> PartialShape:
        return (
            opforge.op("Range", const(start, dt), const(stop, dt), const(step, dt), output_type=out)
            .output_specs[0]
            .shape
        )

    assert rng(0.5, 5, 1.5, "f32") == PartialShape([3])
    assert rng(0.5, 5, 1.5, "i64") == PartialShape([5])  # truncated to 0, 5, 1
    assert rng(0, 3, 0.5, "i32") == PartialShape([0])  # the step truncates to 0
    assert rng(5, 0, -2, "i32", np.int64) == PartialShape([3])
    assert rng(0, 5, -1, "i64", np.int64) == PartialShape([0])
    dyn = opforge.op("Range", param("i64", []), const(5), const(1), output_type="i64")
    assert dyn.output_specs[0].shape == PartialShape([None])
    assert dyn.output_specs[0].type is Type.i64
    with pytest.raises(ShapeInferenceError, match="step must not be 0"):
        rng(0, 5, 0, "f32")
    with pytest.raises(ShapeInferenceError, match=r"start .* must have rank 0"):
        opforge.op("Range", const([0]), const(5), const(1), output_type="i64")
    with pytest.raises(AttributeValidationError, match="numeric"):
        opforge.op("Range", const(0), const(5), const(1), output_type="boolean")


@pytest.mark.openvino
@pytest.mark.parametrize(
    ("start", "stop", "step", "out", "at_run_time"),
    [
        (0.5, 5, 1.5, "f32", True),
        (0.5, 5, 1.5, "i64", False),
        (5, 0, -2, "i32", True),
        (0, 0.5, 0.2, "f32", True),
        (2.7, 9.9, 2.2, "i32", False),
        (1, 10, 3, "u8", True),
        (-2.5, 3, 1.1, "i32", False),
        (0.1, 1.0, 0.1, "f32", True),
        (0, 3, 0.5, "i32", False),
        (0, 5, -1, "f32", False),
    ],
)
def test_range_matches_openvino(start: float, stop: float, step: float, out: str, at_run_time: bool) -> None:
    """Constant inputs go through OpenVINO's shape inference and reference, which follow the
    specification (values truncated toward zero for an integer output_type). The CPU plugin's
    run-time kernel departs from it for float inputs with an integer output and for empty
    ranges, so only the other cases are also compared with inputs fed at run time."""
    from openvino import opset12

    dt = np.float32 if any(isinstance(v, float) for v in (start, stop, step)) else np.int64
    arrays = [np.array(v, dt) for v in (start, stop, step)]
    build = lambda a, b, c: opset12.range(a, b, c, out)  # noqa: E731
    got = compare("Range", build, arrays, consts=[0, 1, 2], output_type=out)
    assert got[0].dtype == Type.parse(out).np
    if at_run_time:
        assert_same(evaluate_op("Range", arrays, output_type=out), openvino(build, arrays))


# --- Eye -----------------------------------------------------------------------------------------
def test_eye_inference() -> None:
    e = opforge.op("Eye", const(2), const(3), const(0), output_type="f32")
    assert (e.output_specs[0].type, shapes(e)) == (Type.f32, [PartialShape([2, 3])])
    assert shapes(opforge.op("Eye", const(2), const(3), const(0), const([4, 5]), output_type="i32")) == [
        PartialShape([4, 5, 2, 3])
    ]
    assert shapes(
        opforge.op("Eye", param("i64", []), const([3]), const(0), param("i32", [2]), output_type="f32")
    ) == [PartialShape([None, None, None, 3])]
    assert shapes(
        opforge.op("Eye", const(2), const(3), const(0), param("i32", [None]), output_type="f32")
    ) == [PartialShape.dynamic()]
    with pytest.raises(ShapeInferenceError, match="num_rows must not be negative"):
        opforge.op("Eye", const(-2), const(3), const(0), output_type="f32")
    with pytest.raises(ShapeInferenceError, match=r"num_rows .* expected int32 or int64"):
        opforge.op("Eye", const(2.0, np.float32), const(3), const(0), output_type="f32")


@pytest.mark.openvino
@pytest.mark.parametrize(
    ("rows", "cols", "diag", "batch", "out"),
    [(3, 4, 0, None, "f32"), (3, 4, -1, [2], "i32"), (3, 4, 5, None, "f32"), (4, 2, 1, [2, 1], "i64")],
)
def test_eye_matches_openvino(rows: int, cols: int, diag: int, batch: list[int] | None, out: str) -> None:
    from openvino import opset9

    arrays = [i64(rows), i64(cols), i64(diag)] + ([i64(*batch)] if batch else [])
    compare(
        "Eye", lambda *a: opset9.eye(*a[:3], out, *a[3:]), arrays, consts=range(len(arrays)), output_type=out
    )


# --- NonZero / Identity --------------------------------------------------------------------------
def test_non_zero_and_identity_inference() -> None:
    assert shapes(opforge.op("NonZero", param("f32", [2, None]))) == [PartialShape([2, None])]
    assert shapes(opforge.op("NonZero", param("f32", None))) == [PartialShape([None, None])]
    assert opforge.op("NonZero", param("f32", [2]), output_type="i32").output_specs[0].type is Type.i32
    with pytest.raises(AttributeValidationError, match="output_type must be i32 or i64"):
        opforge.op("NonZero", param("f32", [2]), output_type="u8")
    n = opforge.op("Identity", param("u8", [None, 3]))
    assert (n.output_specs[0].type, shapes(n)) == (Type.u8, [PartialShape([None, 3])])


@pytest.mark.openvino
def test_non_zero_and_identity_match_openvino() -> None:
    from openvino import opset3, opset16

    x = (RNG.integers(0, 3, (3, 4)) * RNG.standard_normal((3, 4))).astype(np.float32)
    compare("NonZero", lambda d: opset3.non_zero(d, "i32"), [x], output_type="i32")
    compare("NonZero", lambda d: opset3.non_zero(d), [np.zeros((2, 2), np.int32)])
    compare("NonZero", lambda d: opset3.non_zero(d), [np.array(3.0, np.float32)])
    compare("Identity", lambda d: opset16.identity(d), [DATA])
    out = evaluate_op("Identity", [DATA])[0]
    assert not np.shares_memory(out, DATA)


# --- shape sub-graphs fold to static shapes ----------------------------------------------------
def test_pytorch_style_shape_chain_folds_to_static_reshape() -> None:
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as PyTorch exports ``x.view(x.size(0), -1)``.

    Once ShapeOf of a static shape is folded to a constant, every op of the chain folds and the
    Reshape gets a static output shape."""
    x = param("f32", [2, 3, 4])
    shape = opforge.op("ShapeOf", x)
    batch = opforge.op("Gather", shape, const(0), const(0))
    assert shapes(batch) == [PartialShape([])]
    target = opforge.op("Concat", opforge.op("Unsqueeze", batch, const(0)), const([-1]), axis=0)
    assert shapes(target) == [PartialShape([2])]
    y = opforge.op("Reshape", x, target, special_zero=False)
    assert shapes(y) == [PartialShape([None, None])]  # the target's values are not known yet

    # ShapeOf of a static shape becomes a constant; then fold the chain node by node.
    model = Model([y], [x])
    model.replace_output(shape.output(0), const(evaluate_model(Model([shape], [x]), [DATA])[0]).output(0))
    for node in model.get_ordered_ops():
        if node.type_name not in ("Parameter", "Constant", "Result") and all(
            i.node.type_name == "Constant" for i in node.inputs
        ):
            node.validate_and_infer()
            values = [i.node.constant_value() for i in node.inputs]
            (value,) = evaluate_node(node, values)  # type: ignore[arg-type]
            model.replace_output(node.output(0), opforge.op("Constant", value=value).output(0))
    model.validate()
    assert model.outputs[0].partial_shape == PartialShape([2, 12])
    np.testing.assert_array_equal(evaluate_model(model, [DATA])[0], DATA.reshape(2, 12))


# --- IR type names, versions and attributes ------------------------------------------------------
def _openvino_nodes() -> list[Any]:
    """One OpenVINO node of each operation of these tests, with non-default attributes where
    the API allows (the shape, data-movement and indexing test files share this check)."""
    from openvino import opset1, opset3, opset4, opset6, opset7, opset8, opset9, opset10, opset12, opset16

    x = opset1.parameter([2, 3], np.float32)
    c = lambda v, dt=np.int64: opset1.constant(np.array(v, dt))  # noqa: E731
    f = lambda v: c(v, np.float32)  # noqa: E731
    i = c([0, 1])
    return [
        opset3.shape_of(x, "i32"),
        opset1.reshape(x, c([3, 2]), True),
        opset1.transpose(x, c([1, 0])),
        opset1.squeeze(opset1.parameter([1, 3], np.float32), c([0])),
        opset1.unsqueeze(x, c([0])),
        opset1.concat([x, x], -1),
        opset1.split(x, c(0), 2),
        opset1.variadic_split(x, c(0), c([1, 1])),
        opset8.slice(x, c([0]), c([1]), c([1]), c([1])),
        opset1.strided_slice(x, c([0, 1]), c([1, 2]), c([1, 1]), [1, 0], [0, 1], [0, 1], [1, 0], [0, 0]),
        opset8.gather(x, opset1.constant(np.zeros((2, 2), np.int64)), c(1), 1),
        opset6.gather_elements(x, c([[0, 1], [2, 0]]), 1),
        opset8.gather_nd(x, c([[0], [1]]), 1),
        opset4.scatter_nd_update(x, c([[0]]), f([[1, 1, 1]])),
        opset12.scatter_elements_update(x, c([[0, 1, 0]]), f([[1, 1, 1]]), c(0), "mean", False),
        opset3.scatter_update(x, c([0]), f([[1, 1, 1]]), c(0)),
        opset3.broadcast(x, c([2, 2, 3]), None, "bidirectional"),
        opset1.tile(x, c([2, 1])),
        opset12.pad(x, c([0, 1]), c([0, 1]), "symmetric"),
        opset12.range(c(0), c(5), c(1), "i32"),
        opset1.one_hot(i, c(3), f(1), f(0), 0),
        opset3.non_zero(x, "i32"),
        opset1.reverse_sequence(x, c([1, 2, 2]), 1, 0),
        opset7.roll(x, c(1), c(0)),
        opset16.identity(x),
        opset9.eye(c(2), c(2), c(0), "f16"),
        opset10.unique(x, None, False, "i32", "i64"),
    ]


@pytest.mark.openvino
def test_ir_type_names_versions_and_attributes_match_openvino(tmp_path: Any) -> None:
    from opforge.opset import all_ops

    pytest.importorskip("openvino")
    ours = {op.type_name: op for op in all_ops()}
    seen = set()
    for ir_type, ir_version, ir_attrs in openvino_ir_layers(_openvino_nodes(), tmp_path / "ops.xml"):
        if ir_type == "Convert":
            continue
        op = ours[ir_type]
        seen.add(ir_type)
        assert op.version == ir_version, ir_type
        assert set(op.Attrs.model_fields) == set(ir_attrs), ir_type
        # OpenVINO writes lists as "1, 0" and reads "1,0" (what opforge writes) alike.
        written = {k: v.replace(", ", ",") for k, v in ir_attrs.items()}
        assert op.attrs_to_ir(op.attrs_from_ir(ir_type, ir_attrs)) == written, ir_type
    assert len(seen) == 27  # every op here but Reverse, which the Python API lacks (see test_data_movement)


def test_ir_attribute_defaults() -> None:
    from opforge.opset import all_ops

    ours = {op.type_name: op for op in all_ops()}
    defaults = {
        "ShapeOf": {"output_type": "i64"},
        "NonZero": {"output_type": "i64"},
        "Gather": {"batch_dims": "0"},
        "GatherND": {"batch_dims": "0"},
        "Broadcast": {"mode": "numpy"},
        "Pad": {"pad_mode": "constant"},
        "ScatterElementsUpdate": {"reduction": "none", "use_init_val": "true"},
        "ReverseSequence": {"batch_axis": "0", "seq_axis": "1"},
        "Unique": {"sorted": "true", "index_element_type": "i64", "count_element_type": "i64"},
    }
    for name, want in defaults.items():
        assert ours[name].attrs_to_ir(ours[name].make_attrs(name, {})) == want, name
