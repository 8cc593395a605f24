"""RMSNormalization (opforge's own op, listed under opset16): shape inference, errors, the NumPy
reference against ONNX's reference implementation, and an IR round trip."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import opforge
import pytest
from opforge.errors import AttributeValidationError, ShapeInferenceError
from opforge.opset import ops_in_module
from opforge.opset.rms_normalization import RMSNormalization
from opforge.shape import PartialShape

from .oracle import assert_matches, make, model_of, param, rng, run


def test_module_defines_one_op() -> None:
    assert [(o.type_name, o.version, o.is_standard) for o in ops_in_module("rms_normalization")] == [
        ("RMSNormalization", "opset16", True)]


def test_shapes() -> None:
    n = make(RMSNormalization, param("f32", [None, 5, 8]), param("f32", [8]), axis=-1, epsilon=1e-6)
    assert n.output_specs[0].shape == PartialShape([None, 5, 8])
    n = make(RMSNormalization, param("f16", None), param("f16", [3]), axis=2)
    assert n.output_specs[0].shape.rank is None
    # a scale broadcasting inside the normalised dims, and a dynamic normalised dim
    n = make(RMSNormalization, param("f64", [2, 3, None]), param("f64", [3, 1]), axis=1)
    assert n.output_specs[0].type.np == np.float64


@pytest.mark.parametrize(("data", "scale", "attrs", "match"), [
    ([2, 3, 4], [3, 4], {"axis": 2}, r"input 1 \(scale\) has shape \[3,4\], expected one that broadcasts to the "
                                     r"normalised dims \[4\] \(rank 1 or less\)"),
    ([2, 3, 4], [5], {"axis": 1}, r"input 1 \(scale\) has shape \[5\], which does not broadcast to the "
                                  r"normalised dims \[3, 4\] of data \[2,3,4\]"),
    ([2, 3, 4], [4], {"axis": 3}, r"axis 3 is out of range \[-3, 2\] for rank 3"),
    ([], [1], {}, r"input 0 \(data\) is a scalar, expected rank 1 or more"),
])
def test_shape_errors(data: list[int], scale: list[int], attrs: dict[str, int], match: str) -> None:
    with pytest.raises(ShapeInferenceError, match=r"node '.*' \(RMSNormalization\): " + match):
        make(RMSNormalization, param("f32", data), param("f32", scale), **attrs)


def test_type_and_attribute_errors() -> None:
    with pytest.raises(ShapeInferenceError, match=r"input 1 \(scale\) has element type float16, expected float32 \(the type of input 0 \(data\)\)"):
        make(RMSNormalization, param("f32", [2, 4]), param("f16", [4]))
    with pytest.raises(ShapeInferenceError, match=r"input 0 \(data\) has element type int32, expected a float type"):
        make(RMSNormalization, param("i32", [2, 4]), param("i32", [4]))
    for eps in (-1.0, float("nan"), float("inf")):
        with pytest.raises(AttributeValidationError, match=r"attribute 'epsilon': .*finite non-negative"):
            make(RMSNormalization, param("f32", [2, 4]), param("f32", [4]), epsilon=eps)


@pytest.mark.parametrize(("shape", "scale_shape", "axis", "eps"), [
    ((2, 3, 4, 5), (5,), -1, 1e-5), ((2, 3, 4, 5), (3, 4, 5), 1, 1e-5), ((2, 3, 5), (2, 3, 5), 0, 0.1),
    ((2, 3, 4, 5), (4, 1), 2, 1e-3),
])
def test_reference_matches_onnx_reference(shape: tuple[int, ...], scale_shape: tuple[int, ...], axis: int,
                                          eps: float) -> None:
    from onnx.reference.ops.op_rms_normalization import _rms_normalization

    x = rng().standard_normal(shape).astype(np.float32)
    s = rng().standard_normal(scale_shape).astype(np.float32)
    got = run("RMSNormalization", [x, s], axis=axis, epsilon=eps)
    assert_matches(got, _rms_normalization(x, s, axis=axis, epsilon=eps), rtol=1e-6, atol=1e-6)


def test_f16_is_computed_in_f32() -> None:
    # values whose squares overflow f16 (65504): a half-precision sum would be inf and y zero
    x = np.array([[300.0, -400.0, 500.0]], np.float16)
    y = run("RMSNormalization", [x, np.ones(3, np.float16)], epsilon=0.0)
    want = x.astype(np.float32) / np.sqrt(np.mean(x.astype(np.float32) ** 2))
    assert y.dtype == np.float16
    np.testing.assert_allclose(y.astype(np.float32), want, rtol=1e-3)


def test_ir_round_trip(tmp_path: Path) -> None:
    node = make(RMSNormalization, param("f32", [2, 6]), param("f32", [6]), axis=1, epsilon=1e-4)
    opforge.save_model(model_of(node), tmp_path / "m.xml")
    back = opforge.Core().read_model(tmp_path / "m.xml")
    (rms,) = [n for n in back.get_ordered_ops() if n.type_name == "RMSNormalization"]
    assert rms.version == "opset16" and rms.attrs == node.attrs
