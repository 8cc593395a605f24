"""ONNX RMSNormalization (opset 23) converted to opforge's RMSNormalization, compared with ONNX
Runtime on the reference and on the CPU and GPU devices installed here (seeded inputs)."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import opforge
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from opforge.errors import ConversionError
from opforge.frontend.convert import convert_model
from opforge.reference import evaluate_model
from opforge_onnx.testing.helpers import make_model, run_ort

RNG = np.random.default_rng(0)
NP = {T.FLOAT: np.float32, T.FLOAT16: np.float16, T.DOUBLE: np.float64}


def rms_model(x_shape: list[int], s_shape: list[int], xt: int = T.FLOAT, st: int = T.FLOAT,
              **attrs: Any) -> onnx.ModelProto:
    return make_model([h.make_node("RMSNormalization", ["x", "s"], ["y"], **attrs)],
                      [h.make_tensor_value_info("x", xt, x_shape), h.make_tensor_value_info("s", st, s_shape)],
                      [h.make_tensor_value_info("y", st, x_shape)], opset=23)


def _devices() -> list[str]:
    return [d for d in opforge.Core().available_devices if d == "CPU" or d.startswith("GPU")]


def outputs(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """y by the reference and by each CPU/GPU device; the graph must hold the op itself."""
    m = convert_model(model.SerializeToString(), framework="onnx")
    assert [n.type_name for n in m.get_ordered_ops()].count("RMSNormalization") == 1
    got = {"reference": evaluate_model(m, dict(feeds))[0]}
    core = opforge.Core()
    for device in _devices():
        got[device] = np.asarray(core.compile_model(m, device)(dict(feeds))[0])
    return got


CASES = {
    "last_axis": ([2, 3, 4, 5], [5], T.FLOAT, {}),
    "axis1": ([2, 3, 4, 5], [3, 4, 5], T.FLOAT, {"axis": 1}),
    "axis0_epsilon": ([2, 3, 5], [2, 3, 5], T.FLOAT, {"axis": 0, "epsilon": 0.1}),
    "negative_axis": ([2, 3, 4, 5], [4, 5], T.FLOAT, {"axis": -2}),
    "scale_broadcast_inside": ([2, 3, 4, 5], [4, 1], T.FLOAT, {"axis": 2}),
    "scale_leading_ones": ([2, 3, 6], [1, 1, 6], T.FLOAT, {}),
    "scale_over_leading_dims": ([2, 3, 4, 5], [3, 4, 5], T.FLOAT, {"axis": 2}),
    "long_rows": ([4, 2048], [2048], T.FLOAT, {"epsilon": 1e-6}),
    "f16": ([3, 40], [40], T.FLOAT16, {}),
    "f64": ([2, 3, 7], [7], T.DOUBLE, {}),
    "stash_double": ([2, 3, 7], [7], T.FLOAT, {"stash_type": 11}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_onnxruntime(name: str) -> None:
    x_shape, s_shape, t, attrs = CASES[name]
    model = rms_model(x_shape, s_shape, t, t, **attrs)
    feeds = {"x": RNG.standard_normal(x_shape).astype(NP[t]), "s": RNG.standard_normal(s_shape).astype(NP[t])}
    (want,) = run_ort(model, feeds)
    tol = 2e-3 if t == T.FLOAT16 else 1e-5
    for where, got in outputs(model, feeds).items():
        assert got.dtype == want.dtype and got.shape == want.shape, where
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol, err_msg=where)


def test_scale_of_another_type() -> None:
    """Y has the scale's type (the schema's V); ONNX Runtime rejects this model (its function
    body multiplies T by V), so the expectation is the formula in f32."""
    model = rms_model([2, 8], [8], T.FLOAT16, T.FLOAT)
    x = RNG.standard_normal((2, 8)).astype(np.float16)
    s = RNG.standard_normal(8).astype(np.float32)
    xf = x.astype(np.float32)
    want = xf / np.sqrt(np.mean(xf * xf, axis=-1, keepdims=True) + 1e-5) * s
    for where, got in outputs(model, {"x": x, "s": s}).items():
        assert got.dtype == np.float32, where
        np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3, err_msg=where)


def test_unsupported_stash_type_is_a_conversion_error() -> None:
    model = rms_model([2, 8], [8], stash_type=10)
    with pytest.raises(ConversionError, match=r"RMSNormalization.*stash_type 10 is not supported; expected 1 "
                                              r"\(float\) or 11 \(double\)"):
        convert_model(model.SerializeToString(), framework="onnx")


def test_axis_out_of_range_is_a_conversion_error() -> None:
    model = rms_model([2, 8], [8], axis=2)
    with pytest.raises(ConversionError, match=r"axis 2 is out of range for rank 2"):
        convert_model(model.SerializeToString(), framework="onnx")
