"""Indexing operations (Gather, GatherElements, GatherND, ScatterNDUpdate, ScatterElementsUpdate,
ScatterUpdate, OneHot, Unique): shape/type inference on static, dynamic and unknown inputs, the
NumPy reference checked against OpenVINO's CPU device, and clear errors for out-of-range indices."""

from __future__ import annotations

from typing import Any

import numpy as np
import opforge
import pytest
from opforge.element_type import Type
from opforge.errors import AttributeValidationError, KernelError, ShapeInferenceError
from opforge.shape import PartialShape

from .oracle import compare, const, evaluate_op, i64, param, shapes

RNG = np.random.default_rng(0)


DATA = RNG.standard_normal((3, 4, 5)).astype(np.float32)


# --- Gather --------------------------------------------------------------------------------------
def test_gather_inference() -> None:
    x = param("f32", [2, None, 5])
    assert shapes(opforge.op("Gather", x, param("i32", [7]), const(1))) == [PartialShape([2, 7, 5])]
    assert shapes(opforge.op("Gather", x, param("i64", [3, 2]), const(-1))) == [PartialShape([2, None, 3, 2])]
    assert shapes(opforge.op("Gather", x, const(1), const(0))) == [PartialShape([None, 5])]
    assert shapes(opforge.op("Gather", x, param("i64", [None, 6]), const(2), batch_dims=1)) == [
        PartialShape([2, None, 6])
    ]
    assert shapes(opforge.op("Gather", x, param("i64", [2, 6]), const([1]), batch_dims=-1)) == [
        PartialShape([2, 6, 5])
    ]
    assert shapes(opforge.op("Gather", x, param("i64", [2, 6]), param("i64", []), batch_dims=1)) == [
        PartialShape([2, None, None])
    ]
    assert shapes(opforge.op("Gather", param("f32", None), param("i64", [2]), const(0))) == [
        PartialShape.dynamic()
    ]
    cases = [
        ([2, 6], 1, 1, "batch dimension 0 of data .* differ", [3, 6]),
        ([2, 6], 0, 1, r"batch_dims \(1\) must not be greater than axis \(0\)", None),
        ([2, 6], 3, 0, "axis 3 is out of range for rank 3", None),
        ([2, 6], 2, 3, "batch_dims 3 is out of range for indices of rank 2", None),
    ]
    for ishape, axis, bd, match, override in cases:
        with pytest.raises(ShapeInferenceError, match=match):
            opforge.op(
                "Gather",
                param("f32", [2, 4, 5]),
                param("i64", override or ishape),
                const(axis),
                batch_dims=bd,
            )
    with pytest.raises(ShapeInferenceError, match=r"indices .* expected an integer type"):
        opforge.op("Gather", x, param("f32", [2]), const(0))
    with pytest.raises(ShapeInferenceError, match="scalar or hold one element"):
        opforge.op("Gather", x, param("i64", [2]), const([0, 1]))


@pytest.mark.openvino
@pytest.mark.parametrize(
    ("ishape", "axis", "bd"),
    [((2, 3), 1, 0), ((), 0, 0), ((3, 6), 2, 1), ((3, 4, 2), 2, 2), ((3, 2), -1, -1), ((3, 4, 2), -1, -2)],
)
def test_gather_matches_openvino(ishape: tuple[int, ...], axis: int, bd: int) -> None:
    from openvino import opset8

    dim = DATA.shape[axis]
    idx = RNG.integers(-dim, dim, ishape).astype(np.int32)
    build = lambda d, i, a: opset8.gather(d, i, a, bd)  # noqa: E731
    compare("Gather", build, [DATA, idx, i64(axis).reshape(())], consts=[2], batch_dims=bd)
    compare(
        "Gather",
        build,
        [DATA.astype(np.int32), idx.astype(np.int64), i64(axis).reshape(())],
        consts=[1, 2],
        batch_dims=bd,
    )


def test_gather_out_of_range_index_raises() -> None:
    with pytest.raises(
        KernelError, match=r"Gather index \(axis 1\) 4 at position \(1,\) is out of range .* -4\.\.3"
    ):
        evaluate_op("Gather", [DATA, i64(0, 4), i64(1).reshape(())])
    with pytest.raises(KernelError, match=r"Gather index .* -5 .* is out of range"):
        evaluate_op("Gather", [DATA, i64(-5), i64(1).reshape(())])


# --- GatherElements ------------------------------------------------------------------------------
def test_gather_elements_inference() -> None:
    x = param("f32", [4, None])
    assert shapes(opforge.op("GatherElements", x, param("i64", [7, 3]), axis=0)) == [PartialShape([7, 3])]
    assert shapes(opforge.op("GatherElements", x, param("i32", [None, None]), axis=0)) == [
        PartialShape([None, None])
    ]
    assert shapes(opforge.op("GatherElements", param("f32", [4, 3]), param("i32", [None, None]), axis=0)) == [
        PartialShape([None, 3])
    ]
    assert shapes(opforge.op("GatherElements", param("f32", None), param("i32", [2, 2]), axis=-1)) == [
        PartialShape([2, 2])
    ]
    assert shapes(opforge.op("GatherElements", param("f32", [4, 3]), param("i32", None), axis=1)) == [
        PartialShape([4, None])
    ]
    with pytest.raises(ShapeInferenceError, match="differ in dimension 1"):
        opforge.op("GatherElements", param("f32", [4, 3]), param("i64", [5, 2]), axis=0)
    with pytest.raises(ShapeInferenceError, match="same rank"):
        opforge.op("GatherElements", param("f32", [4, 3]), param("i64", [5]), axis=0)
    with pytest.raises(ShapeInferenceError, match="axis 2 is out of range"):
        opforge.op("GatherElements", param("f32", [4, 3]), param("i64", [5, 3]), axis=2)
    with pytest.raises(ShapeInferenceError, match="expected int32 or int64"):
        opforge.op("GatherElements", param("f32", [4, 3]), param("u8", [5, 3]), axis=0)


@pytest.mark.openvino
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_elements_matches_openvino(axis: int) -> None:
    from openvino import opset6

    shape = list(DATA.shape)
    dim = shape[axis]
    shape[axis] = 7
    idx = RNG.integers(-dim, dim, shape).astype(np.int64)
    compare("GatherElements", lambda d, i: opset6.gather_elements(d, i, axis), [DATA, idx], axis=axis)
    with pytest.raises(KernelError, match=f"GatherElements index .* {dim} at position"):
        evaluate_op("GatherElements", [DATA, np.full(shape, dim, np.int64)], axis=axis)


# --- GatherND ------------------------------------------------------------------------------------
def test_gather_nd_inference() -> None:
    x = param("f32", [2, None, 5])
    assert shapes(opforge.op("GatherND", x, param("i64", [6, 2]))) == [PartialShape([6, 5])]
    assert shapes(opforge.op("GatherND", x, param("i64", [2, 6, 1]), batch_dims=1)) == [
        PartialShape([2, 6, 5])
    ]
    assert shapes(opforge.op("GatherND", x, param("i64", [None, 6, 2]), batch_dims=1)) == [
        PartialShape([2, 6])
    ]
    assert shapes(opforge.op("GatherND", x, param("i64", [6, None]))) == [PartialShape.dynamic()]
    assert shapes(opforge.op("GatherND", param("f32", None), param("i64", [6, 1]))) == [
        PartialShape.dynamic()
    ]
    with pytest.raises(
        ShapeInferenceError, match=r"index tuples have 3 values but data .* has only 2 dimensions"
    ):
        opforge.op("GatherND", x, param("i64", [2, 6, 3]), batch_dims=1)
    with pytest.raises(ShapeInferenceError, match=r"batch dimension 0 .* differ"):
        opforge.op("GatherND", x, param("i64", [3, 2]), batch_dims=1)
    with pytest.raises(ShapeInferenceError, match="must be less than the indices rank"):
        opforge.op("GatherND", x, param("i64", [2]), batch_dims=1)
    with pytest.raises(ShapeInferenceError, match="scalar"):
        opforge.op("GatherND", x, param("i64", []))
    with pytest.raises(AttributeValidationError, match="batch_dims"):
        opforge.op("GatherND", x, param("i64", [2, 1]), batch_dims=-1)


@pytest.mark.openvino
@pytest.mark.parametrize(
    ("ishape", "bd"), [((6, 2), 0), ((2, 2, 3), 0), ((3, 6, 1), 1), ((3, 4, 2, 1), 2), ((3, 2), 1)]
)
def test_gather_nd_matches_openvino(ishape: tuple[int, ...], bd: int) -> None:
    from openvino import opset8

    k = ishape[-1]
    dims = DATA.shape[bd : bd + k]
    idx = np.zeros(ishape, np.int32)
    for j, d in enumerate(dims):
        idx[..., j] = RNG.integers(-d, d, ishape[:-1])
    compare("GatherND", lambda d, i: opset8.gather_nd(d, i, bd), [DATA, idx], batch_dims=bd)


def test_gather_nd_empty_index_tuples_take_the_whole_data() -> None:
    # OpenVINO's CPU plugin returns uninitialised memory here: check against NumPy
    (out,) = evaluate_op("GatherND", [DATA, np.zeros((2, 0), np.int64)])
    np.testing.assert_array_equal(out, np.stack([DATA, DATA]))


def test_gather_nd_out_of_range_index_raises() -> None:
    with pytest.raises(KernelError, match=r"GatherND index \(data dimension 1\) 4 at position \(1,\)"):
        evaluate_op("GatherND", [DATA, i64([0, 1], [1, 4])])


# --- ScatterNDUpdate -----------------------------------------------------------------------------
def test_scatter_nd_update_inference() -> None:
    x = param("f32", [4, None, 3])
    # opset4 explicitly: without a version the newest (ScatterNDUpdate-15, with reduction) is used
    n = opforge.op("ScatterNDUpdate", x, param("i64", [2, 1]), param("f32", [2, 5, 3]), version="opset4")
    assert (n.output_specs[0].type, shapes(n)) == (Type.f32, [PartialShape([4, None, 3])])
    assert shapes(opforge.op("ScatterNDUpdate", x, param("i32", [None]), param("f32", None))) == [
        PartialShape([4, None, 3])
    ]
    assert shapes(
        opforge.op("ScatterNDUpdate", param("f32", None), param("i32", [2, 3]), param("f32", [2]))
    ) == [PartialShape.dynamic()]
    assert n.op.version == "opset4"  # the opset OpenVINO's IR files name for this op
    with pytest.raises(ShapeInferenceError, match=r"updates .* must have shape"):
        opforge.op("ScatterNDUpdate", x, param("i64", [2, 2]), param("f32", [2, 4]))
    with pytest.raises(ShapeInferenceError, match="index tuples have 4 values"):
        opforge.op("ScatterNDUpdate", x, param("i64", [2, 4]), param("f32", [2]))
    with pytest.raises(ShapeInferenceError, match="element types differ"):
        opforge.op("ScatterNDUpdate", x, param("i64", [2, 3]), param("f16", [2]))
    with pytest.raises(ShapeInferenceError, match="expected int32 or int64"):
        opforge.op("ScatterNDUpdate", x, param("f32", [2, 3]), param("f32", [2]))


@pytest.mark.openvino
@pytest.mark.parametrize("ishape", [(2, 1), (3, 2), (2, 2, 3), (5, 3), (0, 1)])
def test_scatter_nd_update_matches_openvino(ishape: tuple[int, ...]) -> None:
    from openvino import opset4

    # Distinct positions (each written once, as a negative index or not), then one deliberate
    # repeat, where the last update wins. Random draws could repeat a position by chance (i and
    # i - d alias), and which of two updates OpenVINO keeps there is its own: the test then
    # failed or passed with the shared RNG's state, i.e. with the tests xdist ran before it.
    rng = np.random.default_rng(len(ishape) * 100 + sum(ishape))
    k = ishape[-1]
    dims = DATA.shape[:k]
    n = int(np.prod(ishape[:-1]))
    pos = np.stack(np.unravel_index(rng.choice(int(np.prod(dims)), size=n, replace=False), dims), axis=-1)
    negative = rng.integers(0, 2, pos.shape).astype(bool)
    idx = np.where(negative, pos - np.asarray(dims), pos).astype(np.int64).reshape(ishape)
    if idx.size:
        idx.reshape(-1, k)[-1] = idx.reshape(-1, k)[0]  # a repeated index: the last update wins
    updates = rng.standard_normal(ishape[:-1] + DATA.shape[k:]).astype(np.float32)
    compare(
        "ScatterNDUpdate", lambda d, i, u: opset4.scatter_nd_update(d, i, u), [DATA, idx, updates], consts=[1]
    )


def test_scatter_nd_update_out_of_range_index_raises() -> None:
    with pytest.raises(
        KernelError, match=r"ScatterNDUpdate index \(data dimension 0\) -4 at position \(1,\)"
    ):
        evaluate_op("ScatterNDUpdate", [DATA, i64([0], [-4]), np.zeros((2, 4, 5), np.float32)])


# --- ScatterElementsUpdate -----------------------------------------------------------------------
def test_scatter_elements_update_inference() -> None:
    x = param("i32", [4, None])
    n = opforge.op(
        "ScatterElementsUpdate", x, param("i64", [2, 2]), param("i32", [2, 2]), const(0), reduction="mean"
    )
    assert (n.output_specs[0].type, shapes(n)) == (Type.i32, [PartialShape([4, None])])
    assert shapes(
        opforge.op(
            "ScatterElementsUpdate",
            param("f32", None),
            param("i64", None),
            param("f32", [2]),
            param("i64", []),
        )
    ) == [PartialShape.dynamic()]
    with pytest.raises(ShapeInferenceError, match="must have the same shape"):
        opforge.op("ScatterElementsUpdate", x, param("i64", [2, 2]), param("i32", [2, 3]), const(0))
    with pytest.raises(ShapeInferenceError, match="same rank"):
        opforge.op("ScatterElementsUpdate", x, param("i64", [2]), param("i32", [2]), const(0))
    with pytest.raises(ShapeInferenceError, match="axis 2 is out of range"):
        opforge.op("ScatterElementsUpdate", x, param("i64", [2, 2]), param("i32", [2, 2]), const(2))
    with pytest.raises(ShapeInferenceError, match="'mean' is not defined for boolean"):
        opforge.op(
            "ScatterElementsUpdate",
            param("boolean", [2]),
            param("i64", [2]),
            param("boolean", [2]),
            const(0),
            reduction="mean",
        )
    with pytest.raises(AttributeValidationError, match="reduction"):
        opforge.op(
            "ScatterElementsUpdate", x, param("i64", [2, 2]), param("i32", [2, 2]), const(0), reduction="avg"
        )


@pytest.mark.openvino
@pytest.mark.parametrize("reduction", ["none", "sum", "prod", "min", "max", "mean"])
@pytest.mark.parametrize("use_init_val", [True, False])
def test_scatter_elements_update_matches_openvino(reduction: str, use_init_val: bool) -> None:
    from openvino import opset12

    def build(d: Any, i: Any, u: Any, a: Any) -> Any:
        return opset12.scatter_elements_update(d, i, u, a, reduction, use_init_val)

    attrs = {"reduction": reduction, "use_init_val": use_init_val}
    # few distinct targets along the axis, so most of them are hit several times
    for data, axis in ((RNG.integers(-20, 20, (4, 5)).astype(np.int32), 1), (DATA[:, :2, :], -3)):
        shape = list(data.shape)
        shape[axis] = 6
        idx = RNG.integers(-data.shape[axis], data.shape[axis], shape).astype(np.int64)
        upd = (RNG.integers(-5, 6, shape) if data.dtype == np.int32 else RNG.uniform(0.5, 2, shape)).astype(
            data.dtype
        )
        compare("ScatterElementsUpdate", build, [data, idx, upd, i64(axis).reshape(())], consts=[3], **attrs)
    # indices smaller than the data outside the axis
    data = RNG.standard_normal((4, 5)).astype(np.float32)
    idx = RNG.integers(0, 4, (3, 2)).astype(np.int32)
    upd = RNG.standard_normal((3, 2)).astype(np.float32)
    compare("ScatterElementsUpdate", build, [data, idx, upd, i64(0).reshape(())], consts=[3], **attrs)


def test_scatter_elements_update_mean_truncates_integers() -> None:
    data = np.array([[-7, 5, 3]], np.int32)
    (out,) = evaluate_op(
        "ScatterElementsUpdate", [data, i64([0, 0, 0]), np.zeros((1, 3), np.int32), i64(1)], reduction="mean"
    )
    np.testing.assert_array_equal(out, [[-1, 5, 3]])  # -7 / 4 truncated toward zero


def test_scatter_elements_update_errors_at_run_time() -> None:
    with pytest.raises(KernelError, match=r"ScatterElementsUpdate index \(axis 0\) 3 at position \(0, 1\)"):
        evaluate_op(
            "ScatterElementsUpdate",
            [np.zeros((3, 2), np.float32), i64([0, 3]), np.ones((1, 2), np.float32), i64(0)],
        )
    with pytest.raises(KernelError, match="larger than data"):
        evaluate_op(
            "ScatterElementsUpdate",
            [np.zeros((3, 2), np.float32), np.zeros((1, 3), np.int64), np.ones((1, 3), np.float32), i64(0)],
        )


# --- ScatterUpdate -------------------------------------------------------------------------------
def test_scatter_update_inference() -> None:
    x = param("f32", [4, None, 3])
    n = opforge.op("ScatterUpdate", x, param("i64", [2]), param("f32", [4, 2, 3]), const(1))
    assert shapes(n) == [PartialShape([4, None, 3])]
    assert shapes(
        opforge.op("ScatterUpdate", x, param("i32", [2, 2]), param("f32", [4, 2, 2, 3]), param("i64", []))
    ) == [PartialShape([4, None, 3])]
    assert shapes(
        opforge.op("ScatterUpdate", param("f32", None), param("i64", [2]), param("f32", [4, 2, 3]), const(1))
    ) == [PartialShape.dynamic()]
    with pytest.raises(ShapeInferenceError, match=r"updates \[4,3,3\] must have shape .* = \[4,2,3\]"):
        opforge.op("ScatterUpdate", x, param("i64", [2]), param("f32", [4, 3, 3]), const(1))
    with pytest.raises(ShapeInferenceError, match=r"must have rank data rank \+ indices rank - 1"):
        opforge.op("ScatterUpdate", x, param("i64", [2]), param("f32", [4, 3]), param("i64", []))
    with pytest.raises(ShapeInferenceError, match="axis -4 is out of range"):
        opforge.op("ScatterUpdate", x, param("i64", [2]), param("f32", [4, 2, 3]), const(-4))


@pytest.mark.openvino
@pytest.mark.parametrize(("ishape", "axis"), [((2,), 0), ((2, 3), 1), ((1,), 2), ((4,), -1)])
def test_scatter_update_matches_openvino(ishape: tuple[int, ...], axis: int) -> None:
    from openvino import opset3

    dim = DATA.shape[axis]
    idx = RNG.integers(0, dim, ishape).astype(np.int64)
    ax = axis % DATA.ndim
    updates = RNG.standard_normal(DATA.shape[:ax] + ishape + DATA.shape[ax + 1 :]).astype(np.float32)
    compare(
        "ScatterUpdate",
        lambda d, i, u, a: opset3.scatter_update(d, i, u, a),
        [DATA, idx, updates, i64(axis).reshape(())],
        consts=[3],
    )


def test_scatter_update_scalar_index() -> None:
    # OpenVINO's CPU plugin does not take scalar indices: check against NumPy
    updates = RNG.standard_normal((3, 4)).astype(np.float32)
    (out,) = evaluate_op("ScatterUpdate", [DATA, i64(2).reshape(()), updates, i64(2).reshape(())])
    expected = DATA.copy()
    expected[:, :, 2] = updates
    np.testing.assert_array_equal(out, expected)


def test_scatter_update_rejects_negative_indices() -> None:
    """OpenVINO's reference and CPU plugin both reject negative ScatterUpdate indices."""
    with pytest.raises(KernelError, match=r"ScatterUpdate index \(axis 0\) -1 at position \(0,\) .* 0\.\.2"):
        evaluate_op("ScatterUpdate", [DATA, i64(-1), np.zeros((1, 4, 5), np.float32), i64(0)])


# --- OneHot --------------------------------------------------------------------------------------
def test_one_hot_inference() -> None:
    idx = param("i64", [2, None])
    on, off = const(1.0, np.float32), const(0.0, np.float32)
    n = opforge.op("OneHot", idx, const(5), on, off, axis=-1)
    assert (n.output_specs[0].type, shapes(n)) == (Type.f32, [PartialShape([2, None, 5])])
    assert shapes(opforge.op("OneHot", idx, const(5), on, off, axis=0)) == [PartialShape([5, 2, None])]
    assert shapes(opforge.op("OneHot", idx, param("i32", []), on, off, axis=1)) == [
        PartialShape([2, None, None])
    ]
    assert shapes(opforge.op("OneHot", param("i32", None), const(5), on, off, axis=1)) == [
        PartialShape.dynamic()
    ]
    with pytest.raises(ShapeInferenceError, match="depth must not be negative"):
        opforge.op("OneHot", idx, const(-1), on, off, axis=1)
    with pytest.raises(ShapeInferenceError, match="axis 3 is out of range for rank 3"):
        opforge.op("OneHot", idx, const(5), on, off, axis=3)
    with pytest.raises(ShapeInferenceError, match=r"depth .* must have rank 0"):
        opforge.op("OneHot", idx, const([5]), on, off, axis=1)
    with pytest.raises(ShapeInferenceError, match="on_value and off_value: element types differ"):
        opforge.op("OneHot", idx, const(5), on, const(0, np.int32), axis=1)
    with pytest.raises(ShapeInferenceError, match=r"indices .* expected an integer type"):
        opforge.op("OneHot", param("f32", [2]), const(5), on, off, axis=1)


@pytest.mark.openvino
@pytest.mark.parametrize(("axis", "vdtype"), [(-1, np.float32), (0, np.int32), (1, np.float32)])
def test_one_hot_matches_openvino(axis: int, vdtype: Any) -> None:
    from openvino import opset1

    idx = RNG.integers(-2, 6, (3, 4)).astype(np.int32)  # negative and too large: all off
    on, off = np.array(3, vdtype), np.array(-1, vdtype)
    compare(
        "OneHot",
        lambda i, d, a, b: opset1.one_hot(i, d, a, b, axis),
        [idx, i64(5).reshape(()), on, off],
        consts=[1, 2, 3],
        axis=axis,
    )


# --- Unique --------------------------------------------------------------------------------------
def test_unique_inference() -> None:
    x = param("f32", [4, None])
    n = opforge.op("Unique", x)
    assert shapes(n) == [PartialShape([None])] * 2 + [PartialShape([None]), PartialShape([None])]
    assert [s.type for s in n.output_specs] == [Type.f32, Type.i64, Type.i64, Type.i64]
    n = opforge.op(
        "Unique", param("f32", [4, 3]), const(0), index_element_type="i32", count_element_type="i32"
    )
    assert shapes(n) == [
        PartialShape([None, 3]),
        PartialShape([None]),
        PartialShape([4]),
        PartialShape([None]),
    ]
    assert [s.type for s in n.output_specs] == [Type.f32, Type.i32, Type.i32, Type.i32]
    assert shapes(opforge.op("Unique", param("f32", [4, 3])))[2] == PartialShape([12])
    assert shapes(opforge.op("Unique", param("f32", [])))[0] == PartialShape([1])
    assert shapes(opforge.op("Unique", param("f32", None), const(1)))[0] == PartialShape.dynamic()
    with pytest.raises(ShapeInferenceError, match="must be a constant"):
        opforge.op("Unique", x, param("i64", []))
    with pytest.raises(ShapeInferenceError, match="axis 2 is out of range"):
        opforge.op("Unique", x, const(2))
    with pytest.raises(AttributeValidationError, match="must be i32 or i64"):
        opforge.op("Unique", x, index_element_type="f32")


@pytest.mark.openvino
@pytest.mark.parametrize("is_sorted", [True, False])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_unique_matches_openvino(is_sorted: bool, axis: int | None) -> None:
    from openvino import opset10

    # Fixed data: OpenVINO's CPU kernel fails to merge equal slices for some inputs (see below).
    data = np.random.default_rng(0).integers(0, 3, (6, 4)).astype(np.float32)
    data[3] = data[0]
    data[:, 2] = data[:, 1]
    arrays = [data] + ([i64(axis).reshape(())] if axis is not None else [])

    def build(d: Any, *a: Any) -> Any:
        return opset10.unique(d, a[0] if a else None, is_sorted, "i32", "i64")

    compare("Unique", build, arrays, consts=[1], sorted=is_sorted, index_element_type="i32")


@pytest.mark.openvino
def test_unique_along_axis_merges_equal_slices() -> None:
    """For this input OpenVINO's CPU kernel returns all 4 columns although two are equal; its
    shape inference on the constant (and NumPy) find 3."""
    from openvino import opset10

    data = np.array(
        [[2, 2, 2, 2], [1, 1, 1, 0], [2, 0, 0, 1], [2, 2, 2, 2], [0, 0, 0, 2], [0, 1, 1, 0]], np.float32
    )
    for is_sorted in (True, False):
        values, first, inverse, counts = evaluate_op(
            "Unique", [data, i64(1).reshape(())], consts=[1], sorted=is_sorted
        )
        ov_node = opset10.unique(opset10.constant(data), opset10.constant(np.int64(1)), is_sorted)
        assert values.shape == tuple(ov_node.get_output_shape(0)) == (6, 3)
        np.testing.assert_array_equal(values[:, inverse], data)
        np.testing.assert_array_equal(counts, np.bincount(inverse))
        np.testing.assert_array_equal(values, data[:, first])
    np.testing.assert_array_equal(values, data[:, [0, 1, 3]])  # unsorted: order of first occurrence
