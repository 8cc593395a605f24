"""TopK-11, Interpolate-11, DepthToSpace-1, SpaceToDepth-1 and Einsum-7: shape inference,
errors, and the NumPy reference against OpenVINO (its CPU plugin and, where the plugin departs
from the specification, its core reference through constant folding)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from opforge.element_type import Type
from opforge.errors import AttributeValidationError, ShapeInferenceError
from opforge.opset import ops_in_module
from opforge.opset.depth_to_space import DepthToSpace
from opforge.opset.einsum import Einsum
from opforge.opset.interpolate import Interpolate
from opforge.opset.space_to_depth import SpaceToDepth
from opforge.opset.top_k import TopK
from opforge.shape import PartialShape

from .oracle import assert_close, check_ir_in_openvino, const, evaluate, make, ov_fold, ov_run, param, rng


@pytest.mark.parametrize(
    ("module", "type_name", "version"),
    [
        ("top_k", "TopK", "opset11"),
        ("interpolate", "Interpolate", "opset11"),
        ("depth_to_space", "DepthToSpace", "opset1"),
        ("space_to_depth", "SpaceToDepth", "opset1"),
        ("einsum", "Einsum", "opset7"),
    ],
)
def test_module_defines_one_op(module: str, type_name: str, version: str) -> None:
    assert [(o.type_name, o.version) for o in ops_in_module(module)] == [(type_name, version)]


def i64(values: Any) -> Any:
    return const(np.array(values, dtype=np.int64))


# --- TopK --------------------------------------------------------------------------------
def topk(data: Any, k: Any, **attrs: Any) -> Any:
    attrs.setdefault("axis", 1)
    attrs.setdefault("mode", "max")
    attrs.setdefault("sort", "value")
    return make(TopK, param("f32", data), k if not isinstance(k, int) else i64(k), **attrs)


def test_topk_shapes() -> None:
    n = topk([3, 6, 5], 2)
    assert [s.shape for s in n.output_specs] == [PartialShape([3, 2, 5])] * 2
    assert [s.type for s in n.output_specs] == [Type.f32, Type.i32]  # i32 is OpenVINO's default
    assert topk([3, None, 5], 4, axis=-2).output_specs[0].shape == PartialShape([3, 4, 5])
    assert topk([3, 6, 5], param("i64", [])).output_specs[0].shape == PartialShape([3, None, 5])
    n = topk(PartialShape.dynamic(), 2, index_element_type="i64")
    assert n.output_specs[0].shape.rank is None and n.output_specs[1].type is Type.i64


@pytest.mark.parametrize(
    ("data", "k", "attrs", "match"),
    [
        ([3, 6], 7, {}, r"input 1 \(k\) is 7, larger than dimension 1 of the data \[3,6\]"),
        ([3, 6], -1, {}, r"input 1 \(k\) is -1, expected a non-negative value"),
        ([3, 6], 2, {"axis": 2}, r"axis 2 is out of range \[-2, 1\] for rank 2"),
        ([3, 6], 2, {"sort": "none", "stable": True}, "stable=true needs sort='value' or sort='index'"),
        ([3, 6], 2, {"index_element_type": "i8"}, "index_element_type is i8, expected i32 or i64"),
        ([], 1, {"axis": 0}, r"input 0 \(data\) is a scalar"),
    ],
)
def test_topk_errors(data: list[int], k: int, attrs: dict[str, Any], match: str) -> None:
    with pytest.raises(ShapeInferenceError, match=match):
        topk(data, k, **attrs)


def test_topk_k_must_be_an_integer_scalar() -> None:
    with pytest.raises(ShapeInferenceError, match=r"input 1 \(k\) has shape \[1\], expected a scalar"):
        topk([3, 6], i64([2]))
    with pytest.raises(ShapeInferenceError, match=r"input 1 \(k\) has element type float32"):
        topk([3, 6], const(np.float32(2)))
    with pytest.raises(AttributeValidationError, match="mode"):
        topk([3, 6], 2, mode="largest")


@pytest.mark.openvino
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("mode", ["max", "min"])
@pytest.mark.parametrize("sort", ["value", "index", "none"])
def test_topk_matches_openvino(axis: int, mode: str, sort: str) -> None:
    import openvino.opset11 as ov11

    # Few distinct values, so ties are everywhere: stable order must match exactly.
    x = rng().integers(0, 5, (3, 6, 5)).astype(np.float32)
    p = ov11.parameter([3, 6, 5], np.float32)
    stable = sort != "none"
    want = ov_run(ov11.topk(p, ov11.constant(np.int64(3)), axis, mode, sort, "i32", stable), [p], [x])
    got = evaluate(make(TopK, param("f32", [3, 6, 5]), i64(3), axis=axis, mode=mode, sort=sort, stable=stable), [x])
    assert_close(got, want)


@pytest.mark.parametrize(
    ("t", "values"),
    [
        ("u8", [0, 255, 7, 255, 1]),
        ("i64", [-(2**62), 2**62, 0, 5, 2**62]),
        ("f16", [0.5, -1.0, 2.0, 2.0, -3.0]),
    ],
)
def test_topk_integer_and_half_types(t: str, values: list[Any]) -> None:
    n = make(TopK, param(t, [5]), i64(3), axis=0, mode="max", sort="value", index_element_type="i64")
    x = np.array(values, dtype=n.output_specs[0].type.np)
    got_values, got_indices = evaluate(n, [x])
    order = sorted(range(5), key=lambda i: (-float(values[i]), i))[:3]
    np.testing.assert_array_equal(got_indices, order)
    np.testing.assert_array_equal(got_values, x[order])


@pytest.mark.openvino
def test_topk_ir_loads_in_openvino() -> None:
    x = rng().standard_normal((3, 6, 5)).astype(np.float32)
    n = make(
        TopK,
        param("f32", [3, 6, 5]),
        i64(2),
        axis=2,
        mode="min",
        sort="index",
        index_element_type="i32",
        stable=True,
    )
    check_ir_in_openvino(n, [x])


# --- Interpolate -------------------------------------------------------------------------
def interp(data: Any, values: Any, ax: Any = None, **attrs: Any) -> Any:
    attrs.setdefault("mode", "linear_onnx")
    mode = attrs.setdefault("shape_calculation_mode", "sizes")
    if isinstance(values, list):
        values = const(np.array(values, dtype=np.int64 if mode == "sizes" else np.float32))
    ins = [param("f32", data), values] + ([] if ax is None else [ax if not isinstance(ax, list) else i64(ax)])
    return make(Interpolate, *ins, **attrs)


@pytest.mark.parametrize(
    ("data", "values", "ax", "attrs", "out"),
    [
        ([1, 3, 10, 20], [5, 40], [2, 3], {}, [1, 3, 5, 40]),
        ([1, 3, 10, 20], [1, 3, 5, 40], None, {}, [1, 3, 5, 40]),
        ([1, 3, 10, 20], [0.5, 2.0], [2, 3], {"shape_calculation_mode": "scales"}, [1, 3, 5, 40]),
        ([1, 3, 10, 20], [0.333, 1.0], [2, 3], {"shape_calculation_mode": "scales"}, [1, 3, 3, 20]),
        ([1, 3, 3, 20], [1.0 / 3.0], [2], {"shape_calculation_mode": "scales"}, [1, 3, 1, 20]),
        ([1, 3, 10, 20], [5, 40], [2, 3], {"pads_begin": [0, 1, 2], "pads_end": [0, 0, 0, 3]}, [1, 4, 5, 40]),
        (
            [1, 3, 10, 20],
            [2.0],
            [2],
            {"shape_calculation_mode": "scales", "pads_begin": [0, 0, 1, 1]},
            [1, 3, 22, 21],
        ),
        ([None, 3, None, 20], [5, 40], [2, 3], {}, [None, 3, 5, 40]),
        ([None, 3, None, 20], [2.0, 2.0], [2, 3], {"shape_calculation_mode": "scales"}, [None, 3, None, 40]),
        ([1, 3, 10, 20], [7], [0], {}, [7, 3, 10, 20]),
    ],
)
def test_interpolate_shapes(
    data: list[Any], values: list[Any], ax: list[int] | None, attrs: dict[str, Any], out: list[Any]
) -> None:
    assert interp(data, values, ax, **attrs).output_specs[0].shape == PartialShape(out)


def test_interpolate_unknown_inputs() -> None:
    # Sizes unknown: the resized axes are unknown; axes unknown: any axis may be resized.
    assert interp([1, 3, 10, 20], param("i64", [2]), [2, 3]).output_specs[0].shape == PartialShape(
        [1, 3, None, None]
    )
    assert interp([1, 3, 10, 20], [5, 6], param("i64", [2])).output_specs[0].shape == PartialShape.dynamic(4)
    assert interp(PartialShape.dynamic(), [5, 6], [2, 3]).output_specs[0].shape.rank is None


@pytest.mark.parametrize(
    ("values", "ax", "attrs", "match"),
    [
        ([5, 6, 7], [2, 3], {}, r"input 1 \(scales_or_sizes\) has 3 elements, expected 2 to match axes"),
        ([5, 6], None, {}, r"has 2 elements, expected 4 to match the data rank \(no axes input\)"),
        ([5, 6], [2, 4], {}, r"input 2 \(axes\) is \[2, 4\], expected distinct values in \[0, 3\]"),
        ([5, 6], [-1, 2], {}, r"input 2 \(axes\) is \[-1, 2\]"),
        ([5, 6], [2, 2], {}, "expected distinct values"),
        (
            [5, 6],
            [2, 3],
            {"pads_begin": [0, 0, 0, 0, 1]},
            "attribute 'pads_begin' has 5 values, more than the data rank",
        ),
        ([5, 6], [2, 3], {"pads_end": [0, -1]}, "must not be negative"),
    ],
)
def test_interpolate_errors(
    values: list[int], ax: list[int] | None, attrs: dict[str, Any], match: str
) -> None:
    with pytest.raises(ShapeInferenceError, match=match):
        interp([1, 3, 10, 20], values, ax, **attrs)


def test_interpolate_type_errors() -> None:
    with pytest.raises(ShapeInferenceError, match=r"input 1 \(sizes\) has element type float32"):
        interp([1, 3, 10, 20], const(np.array([5.0, 6.0], np.float32)), [2, 3])
    with pytest.raises(
        ShapeInferenceError, match=r"input 1 \(scales\) has element type int64, expected a float"
    ):
        interp([1, 3, 10, 20], i64([5, 6]), [2, 3], shape_calculation_mode="scales")
    with pytest.raises(AttributeValidationError, match="mode"):
        interp([1, 3, 10, 20], [5, 6], [2, 3], mode="area")


def test_interpolate_default_attributes() -> None:
    a = interp([1, 3, 10, 20], [5, 6], [2, 3]).attrs
    assert (
        a.coordinate_transformation_mode,
        a.nearest_mode,
        a.antialias,
        a.pads_begin,
        a.pads_end,
        a.cube_coeff,
    ) == ("half_pixel", "round_prefer_floor", False, [0], [0], -0.75)


TRANSFORMS = ["half_pixel", "pytorch_half_pixel", "asymmetric", "tf_half_pixel_for_nn", "align_corners"]
NEAREST = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple"]
InterpCase = tuple[tuple[int, ...], str, str, list[Any], list[int] | None, dict[str, Any]]


def _interp_geometries(mode: str) -> list[InterpCase]:
    return [
        ((1, 2, 5, 6), mode, "sizes", [1, 2, 8, 4], None, {}),
        ((1, 2, 5, 6), mode, "sizes", [8, 4], [2, 3], {"pads_begin": [0, 0, 1, 2], "pads_end": [0, 0, 2, 0]}),
        (
            (1, 2, 5, 6),
            mode,
            "scales",
            [1.0, 1.0, 1.5, 0.7],
            None,
            {"pads_begin": [0, 0, 1], "pads_end": [0, 0, 0, 1]},
        ),
        ((2, 3, 4, 5, 6), mode, "sizes", [3, 7, 4], [2, 3, 4], {}),
        ((1, 2, 5, 6), mode, "sizes", [8, 4], [2, 3], {"cube_coeff": -0.5}),
        ((1, 2, 5, 6), mode, "sizes", [7], [3], {}),
        ((1, 2, 9, 10), mode, "scales", [0.5, 2.0], [2, 3], {"antialias": mode != "linear"}),
    ]


INTERP_CASES: list[InterpCase] = [
    *[
        (
            (1, 2, 5, 6),
            "nearest",
            scm,
            vals,
            [2, 3],
            {"coordinate_transformation_mode": c, "nearest_mode": nm},
        )
        for c in TRANSFORMS
        for nm in NEAREST
        for scm, vals in (("sizes", [8, 4]), ("scales", [0.5, 1.5]))
    ],
    *[
        ((1, 2, 5, 6), mode, scm, vals, [2, 3], {"coordinate_transformation_mode": c})
        for mode in ("linear_onnx", "cubic", "linear")
        for c in TRANSFORMS
        for scm, vals in (("sizes", [8, 4]), ("scales", [0.5, 1.5]), ("scales", [2.0, 3.0]))
    ],
    *[case for mode in ("nearest", "linear", "linear_onnx", "cubic") for case in _interp_geometries(mode)],
    *[
        ((1, 2, 5, 6), mode, "sizes", vals, [2, 3], {"cube_coeff": -0.5})
        for mode in ("bilinear_pillow", "bicubic_pillow")
        for vals in ([3, 4], [8, 9], [2, 12], [5, 6])
    ],
    ((1, 5, 6, 2), "bicubic_pillow", "sizes", [3, 9], [1, 2], {"cube_coeff": -0.5}),
    ((1, 2, 5, 6), "bilinear_pillow", "scales", [0.5, 1.5], [2, 3], {}),
]


def _ov_interpolate(
    src: Any, mode: str, scm: str, values: list[Any], ax: list[int] | None, attrs: dict[str, Any]
) -> Any:
    import openvino.opset11 as ov11

    v = np.array(values, dtype=np.int64 if scm == "sizes" else np.float32)
    axes_node = None if ax is None else ov11.constant(np.array(ax, np.int64))
    return ov11.interpolate(src, ov11.constant(v), mode, scm, axes=axes_node, **attrs)


@pytest.mark.openvino
@pytest.mark.parametrize(("shape", "mode", "scm", "values", "ax", "attrs"), INTERP_CASES)
def test_interpolate_matches_openvino(
    shape: tuple[int, ...],
    mode: str,
    scm: str,
    values: list[Any],
    ax: list[int] | None,
    attrs: dict[str, Any],
) -> None:
    import openvino.opset11 as ov11

    x = (rng().standard_normal(shape) * 10).astype(np.float32)
    p = ov11.parameter(list(shape), np.float32)
    want = ov_run(_ov_interpolate(p, mode, scm, values, ax, attrs), [p], [x])
    n = interp(list(shape), values, ax, mode=mode, shape_calculation_mode=scm, **attrs)
    assert n.output_specs[0].shape == PartialShape(want[0].shape)
    assert_close(evaluate(n, [x]), want, rtol=1e-4, atol=1e-4)


@pytest.mark.openvino
@pytest.mark.parametrize(
    ("shape", "mode", "scm", "values", "ax", "attrs"),
    [
        # The CPU plugin ignores antialias in "linear" mode and always uses a=-0.5 for bicubic_pillow;
        # OpenVINO's reference (and the specification) do neither.
        ((1, 2, 9, 10), "linear", "scales", [0.5, 0.4], [2, 3], {"antialias": True}),
        ((1, 2, 9, 10), "linear", "scales", [0.5, 2.0], [2, 3], {"antialias": True}),
        (
            (1, 2, 9, 10),
            "linear",
            "sizes",
            [4, 3],
            [2, 3],
            {"antialias": True, "coordinate_transformation_mode": "align_corners"},
        ),
        ((1, 2, 5, 6), "bicubic_pillow", "sizes", [3, 9], [2, 3], {}),
        ((1, 2, 5, 6), "cubic", "sizes", [3, 9], [2, 3], {"cube_coeff": -0.6}),
    ],
)
def test_interpolate_matches_openvino_reference(
    shape: tuple[int, ...],
    mode: str,
    scm: str,
    values: list[Any],
    ax: list[int] | None,
    attrs: dict[str, Any],
) -> None:
    import openvino.opset11 as ov11

    x = (rng().standard_normal(shape) * 10).astype(np.float32)
    want = ov_fold(_ov_interpolate(ov11.constant(x), mode, scm, values, ax, attrs))
    got = evaluate(interp(list(shape), values, ax, mode=mode, shape_calculation_mode=scm, **attrs), [x])
    assert_close(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.openvino
@pytest.mark.parametrize(
    "mode", ["nearest", "linear", "linear_onnx", "cubic", "bilinear_pillow", "bicubic_pillow"]
)
def test_interpolate_integer_rounding_matches_openvino_reference(mode: str) -> None:
    import openvino.opset11 as ov11

    x = rng().integers(0, 256, (1, 2, 5, 6)).astype(np.uint8)
    attrs = {"cube_coeff": -0.5}
    want = ov_fold(_ov_interpolate(ov11.constant(x), mode, "sizes", [8, 4], [2, 3], attrs))
    n = make(
        Interpolate,
        param("u8", [1, 2, 5, 6]),
        i64([8, 4]),
        i64([2, 3]),
        mode=mode,
        shape_calculation_mode="sizes",
        **attrs,
    )
    assert_close(evaluate(n, [x]), want)


@pytest.mark.openvino
@pytest.mark.parametrize("case", [INTERP_CASES[0], INTERP_CASES[60], INTERP_CASES[-1], INTERP_CASES[-12]])
def test_interpolate_ir_loads_in_openvino(case: tuple[Any, ...]) -> None:
    shape, mode, scm, values, ax, attrs = case
    x = rng().standard_normal(shape).astype(np.float32)
    check_ir_in_openvino(interp(list(shape), values, ax, mode=mode, shape_calculation_mode=scm, **attrs), [x])


@pytest.mark.parametrize("t", ["f16", "bf16", "i32", "u8"])
@pytest.mark.parametrize("mode", ["nearest", "linear", "linear_onnx", "cubic", "bilinear_pillow"])
def test_interpolate_keeps_element_type(t: str, mode: str) -> None:
    n = make(
        Interpolate,
        param(t, [1, 1, 4, 4]),
        i64([6, 3]),
        i64([2, 3]),
        mode=mode,
        shape_calculation_mode="sizes",
    )
    x = rng().integers(0, 100, (1, 1, 4, 4)).astype(n.output_specs[0].type.np)
    (y,) = evaluate(n, [x])
    assert y.shape == (1, 1, 6, 3)


# --- DepthToSpace / SpaceToDepth -------------------------------------------------------
def test_depth_space_shapes() -> None:
    d2s = make(DepthToSpace, param("f32", [2, 8, 3, 4]), mode="blocks_first", block_size=2)
    assert d2s.output_specs[0].shape == PartialShape([2, 2, 6, 8])
    d2s = make(DepthToSpace, param("f32", [None, None, 3, None, 5]), mode="depth_first", block_size=3)
    assert d2s.output_specs[0].shape == PartialShape([None, None, 9, None, 15])
    d2s = make(DepthToSpace, param("f32", PartialShape.dynamic()), mode="depth_first")
    assert d2s.output_specs[0].shape.rank is None
    s2d = make(SpaceToDepth, param("f32", [2, 2, 6, 4]), mode="blocks_first", block_size=2)
    assert s2d.output_specs[0].shape == PartialShape([2, 8, 3, 2])
    s2d = make(SpaceToDepth, param("f32", [2, None, None, 9]), mode="depth_first", block_size=3)
    assert s2d.output_specs[0].shape == PartialShape([2, None, None, 3])
    s2d = make(SpaceToDepth, param("f32", PartialShape.dynamic()), mode="blocks_first")
    assert s2d.output_specs[0].shape.rank is None
    d2s = make(DepthToSpace, param("boolean", [2, 4, 3]), mode="depth_first")  # any element type
    assert d2s.output_specs[0].type is Type.boolean


def test_depth_space_errors() -> None:
    with pytest.raises(
        ShapeInferenceError,
        match=r"input 0 \(data\) has 6 channels, not divisible by block_size\^2 "
        r"= 4",
    ):
        make(DepthToSpace, param("f32", [1, 6, 3, 3]), mode="blocks_first", block_size=2)
    with pytest.raises(
        ShapeInferenceError, match=r"input 0 \(data\) dimension 3 is 5, not divisible by block_size 2"
    ):
        make(SpaceToDepth, param("f32", [1, 6, 4, 5]), mode="blocks_first", block_size=2)
    with pytest.raises(ShapeInferenceError, match=r"input 0 \(data\) has rank 2, expected 3 or more"):
        make(SpaceToDepth, param("f32", [1, 6]), mode="blocks_first")
    with pytest.raises(ShapeInferenceError, match="block_size is 0"):
        make(DepthToSpace, param("f32", [1, 6, 3]), mode="blocks_first", block_size=0)
    with pytest.raises(AttributeValidationError, match="mode"):
        make(DepthToSpace, param("f32", [1, 6, 3]), block_size=2)


@pytest.mark.openvino
@pytest.mark.parametrize("mode", ["blocks_first", "depth_first"])
@pytest.mark.parametrize(
    ("shape", "bs"), [((2, 8, 3, 4), 2), ((1, 27, 2, 2, 2), 3), ((2, 12, 5), 2), ((2, 4, 3, 4), 1)]
)
def test_depth_to_space_matches_openvino(mode: str, shape: tuple[int, ...], bs: int) -> None:
    import openvino.opset1 as ov1

    x = rng().standard_normal(shape).astype(np.float32)
    p = ov1.parameter(list(shape), np.float32)
    want = ov_run(ov1.depth_to_space(p, mode, bs), [p], [x])
    n = make(DepthToSpace, param("f32", shape), mode=mode, block_size=bs)
    assert_close(evaluate(n, [x]), want)
    # SpaceToDepth in the same mode undoes it.
    back = make(SpaceToDepth, param("f32", want[0].shape), mode=mode, block_size=bs)
    np.testing.assert_array_equal(evaluate(back, [want[0]])[0], x)


@pytest.mark.openvino
@pytest.mark.parametrize("mode", ["blocks_first", "depth_first"])
@pytest.mark.parametrize(("shape", "bs"), [((2, 2, 6, 4), 2), ((1, 1, 3, 6, 3), 3), ((2, 3, 10), 2)])
def test_space_to_depth_matches_openvino(mode: str, shape: tuple[int, ...], bs: int) -> None:
    import openvino.opset1 as ov1

    x = rng().standard_normal(shape).astype(np.float32)
    p = ov1.parameter(list(shape), np.float32)
    want = ov_run(ov1.space_to_depth(p, mode, bs), [p], [x])
    assert_close(evaluate(make(SpaceToDepth, param("f32", shape), mode=mode, block_size=bs), [x]), want)


@pytest.mark.openvino
def test_depth_space_ir_loads_in_openvino() -> None:
    x = rng().standard_normal((2, 8, 3, 4)).astype(np.float32)
    check_ir_in_openvino(make(DepthToSpace, param("f32", [2, 8, 3, 4]), mode="depth_first", block_size=2), [x])
    check_ir_in_openvino(
        make(SpaceToDepth, param("f32", [2, 8, 4, 4]), mode="blocks_first", block_size=2),
        [rng().standard_normal((2, 8, 4, 4)).astype(np.float32)],
    )


# --- Einsum ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("equation", "shapes", "out"),
    [
        ("ij,jk->ik", [[3, 4], [4, 5]], [3, 5]),
        ("i,i->", [[3], [3]], []),
        ("kii->ki", [[2, 3, 3]], [2, 3]),
        ("AbC", [[1, 2, 3]], [1, 3, 2]),
        ("dbbc,ca", [[2, 3, 3, 4], [4, 5]], [5, 2]),
        ("ab...,ac...,ade->...bc", [[2, 3, 4], [2, 7, 1], [2, 4, 7]], [4, 3, 7]),
        ("a...b,b...->a...", [[9, 1, 4, 3], [3, 11, 7, 1]], [9, 11, 7, 4]),
        ("ij, jk -> ki", [[None, 4], [None, 5]], [5, None]),
        ("...ij,...jk", [[None, 3, 4], [4, 5]], [None, 3, 5]),
        ("bij,bjk->bik", [[None, 3, None], [2, None, 5]], [2, 3, 5]),
    ],
)
def test_einsum_shapes(equation: str, shapes: list[list[Any]], out: list[Any]) -> None:
    n = make(Einsum, *(param("f32", s) for s in shapes), equation=equation)
    assert n.output_specs[0].shape == PartialShape(out)


def test_einsum_dynamic_rank() -> None:
    n = make(Einsum, param("f32", PartialShape.dynamic()), param("f32", [4, 5]), equation="ij,jk->ik")
    assert n.output_specs[0].shape == PartialShape([None, 5])
    n = make(Einsum, param("f32", PartialShape.dynamic()), param("f32", [4, 5]), equation="...j,jk->...k")
    assert n.output_specs[0].shape.rank is None


@pytest.mark.parametrize(
    ("equation", "shapes", "match"),
    [
        ("ij,jk->ik", [[3, 4], [5, 6]], "label 'j' has different sizes: 4 vs 5"),
        ("ij,jk->ik", [[3, 4]], "equation 'ij,jk->ik' has 2 input subscripts, but the node has 1 inputs"),
        ("ij->iz", [[3, 4]], "output label 'z' is in no input subscript"),
        ("ij->ii", [[3, 4]], "the output subscript repeats a label"),
        ("i...j->ij", [[3, 4, 5]], "inputs use '...', so the output subscript must too"),
        ("ij1->i", [[3, 4, 5]], "subscript 'ij1' has '1'"),
        ("......", [[3]], "has more than one ellipsis"),
        ("ijk->i", [[3, 4]], r"input 0 has rank 2, but its subscript 'ijk' has 3 labels"),
        ("...i,...i->...", [[2, 3], [4, 3]], "cannot be broadcast"),
    ],
)
def test_einsum_errors(equation: str, shapes: list[list[int]], match: str) -> None:
    with pytest.raises(ShapeInferenceError, match=match):
        make(Einsum, *(param("f32", s) for s in shapes), equation=equation)


@pytest.mark.openvino
@pytest.mark.parametrize(
    ("equation", "shapes"),
    [
        ("ij,jk->ik", [(3, 4), (4, 5)]),
        ("i,i->", [(3,), (3,)]),
        ("kii->k", [(2, 3, 3)]),
        ("kii->ki", [(2, 3, 3)]),
        ("ijk->kij", [(1, 3, 3)]),
        ("a...->...", [(3, 3)]),
        ("a...,...->a...", [(3, 3), (1,)]),
        ("AbC", [(1, 2, 3)]),
        ("ab...,ac...,ade->...bc", [(2, 3, 4), (2, 7, 1), (2, 4, 7)]),
        ("a...b,b...->a...", [(9, 1, 4, 3), (3, 11, 7, 1)]),
        ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
        ("ab,bc,cd->ad", [(2, 3), (3, 4), (4, 5)]),
        ("...ij,...jk", [(2, 3, 4), (4, 5)]),
    ],
)
def test_einsum_matches_openvino(equation: str, shapes: list[tuple[int, ...]]) -> None:
    import openvino.opset7 as ov7

    g = rng()
    xs = [g.standard_normal(s).astype(np.float32) for s in shapes]
    ps = [ov7.parameter(list(s), np.float32) for s in shapes]
    want = ov_run(ov7.einsum(ps, equation), ps, xs)
    n = make(Einsum, *(param("f32", s) for s in shapes), equation=equation)
    assert n.output_specs[0].shape == PartialShape(want[0].shape)
    assert_close(evaluate(n, xs), want)


@pytest.mark.openvino
def test_einsum_ir_loads_in_openvino() -> None:
    g = rng()
    xs = [g.standard_normal((2, 3, 4)).astype(np.float32), g.standard_normal((2, 4, 5)).astype(np.float32)]
    check_ir_in_openvino(make(Einsum, param("f32", [2, 3, 4]), param("f32", [2, 4, 5]), equation="bij,bjk->bik"), xs)


@pytest.mark.parametrize("t", ["f16", "i32", "bf16"])
def test_einsum_keeps_element_type(t: str) -> None:
    n = make(Einsum, param(t, [2, 3]), param(t, [3, 4]), equation="ij,jk->ik")
    dt = n.output_specs[0].type.np
    g = rng()
    a, b = g.integers(-3, 4, (2, 3)).astype(dt), g.integers(-3, 4, (3, 4)).astype(dt)
    (y,) = evaluate(n, [a, b])
    np.testing.assert_array_equal(y.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64))


@pytest.mark.parametrize("mode", ["linear_onnx", "linear", "cubic"])
def test_interpolate_keeps_a_nan_inside_the_outputs_that_read_it(mode: str) -> None:
    """Each output sums only its own taps: a NaN pixel makes NaN of the outputs whose taps include
    it, not of its whole row (a dense weight product gave 0 * NaN for every other output)."""
    x = np.arange(64, dtype=np.float32).reshape(1, 1, 8, 8)
    x[0, 0, 1, 1] = np.nan
    got = evaluate(interp([1, 1, 8, 8], [16, 16], [2, 3], mode=mode), [x])[0]
    clean = evaluate(interp([1, 1, 8, 8], [16, 16], [2, 3], mode=mode), [np.nan_to_num(x)])[0]
    nan = np.isnan(got)
    assert nan.any() and not nan[0, 0, 12:, :].any() and not nan[0, 0, :, 12:].any()
    np.testing.assert_allclose(got[~nan], clean[~nan], rtol=1e-6, atol=1e-5)
