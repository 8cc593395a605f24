"""GridSample-9, ROIAlign-9, NonMaxSuppression-9 and Col2Im-15: the NumPy references checked
against OpenVINO's CPU device, and shape inference."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import opforge
import pytest
from opforge.element_type import Type
from opforge.errors import ShapeInferenceError
from opforge.graph import Model, Node
from opforge.reference import evaluate_model
from opforge.shape import PartialShape

RNG = np.random.default_rng(1)


def param(a: np.ndarray) -> Node:
    return opforge.op("Parameter", element_type=Type.from_numpy(a.dtype), shape=PartialShape(a.shape))


def ours(type_name: str, arrays: list[np.ndarray], consts: tuple[int, ...] = (), **attrs: Any) -> list[np.ndarray]:
    nodes = [opforge.op("Constant", value=a) if i in consts else param(a) for i, a in enumerate(arrays)]
    node = opforge.op(type_name, *nodes, **attrs)
    params = [n for n in nodes if n.type_name == "Parameter"]
    outs = evaluate_model(Model(node.outputs(), params), [a for i, a in enumerate(arrays) if i not in consts])
    for o, spec in zip(outs, node.output_specs):
        assert o.dtype == spec.type.np and spec.shape.compatible(o.shape)
    return outs


def openvino(build: Callable[..., Any], arrays: list[np.ndarray], consts: tuple[int, ...] = ()) -> list[np.ndarray]:
    ov = pytest.importorskip("openvino")
    o15 = pytest.importorskip("openvino.opset15")
    arrays = [np.array(a) for a in arrays]
    nodes = [o15.constant(a) if i in consts else o15.parameter(list(a.shape), a.dtype) for i, a in enumerate(arrays)]
    node = build(*nodes)
    params = [n for i, n in enumerate(nodes) if i not in consts]
    compiled = ov.Core().compile_model(ov.Model(node.outputs(), params), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    res = compiled([a for i, a in enumerate(arrays) if i not in consts])
    return [np.asarray(res[compiled.output(i)]) for i in range(len(compiled.outputs))]


def close(a: list[np.ndarray], b: list[np.ndarray], atol: float = 1e-5) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.shape == y.shape, (x.shape, y.shape)
        np.testing.assert_allclose(x, y, rtol=1e-4, atol=atol)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_matches_openvino(mode: str, padding_mode: str, align_corners: bool) -> None:
    o9 = pytest.importorskip("openvino.opset9")
    data = RNG.standard_normal((2, 3, 5, 4)).astype(np.float32)
    # nearest: keep clear of .5 ties, where rounding conventions may differ
    grid = (RNG.uniform(-1.6, 1.6, (2, 6, 7, 2)) if mode != "nearest"
            else (np.round(RNG.uniform(-1.6, 1.6, (2, 6, 7, 2)) * 8) / 8 + 0.013)).astype(np.float32)
    attrs: dict[str, Any] = {"mode": mode, "padding_mode": padding_mode, "align_corners": align_corners}
    close(ours("GridSample", [data, grid], **attrs),
          openvino(lambda d, g: o9.grid_sample(d, g, attrs), [data, grid]), atol=1e-4)


def test_grid_sample_shapes() -> None:
    d = opforge.op("Parameter", element_type=Type.f32, shape=PartialShape([None, 3, None, None]))
    g = opforge.op("Parameter", element_type=Type.f32, shape=PartialShape([2, 5, 6, 2]))
    assert opforge.op("GridSample", d, g).output_specs[0].shape == PartialShape([2, 3, 5, 6])
    bad = opforge.op("Parameter", element_type=Type.f32, shape=PartialShape([2, 5, 6, 3]))
    with pytest.raises(ShapeInferenceError, match="last dimension must be 2"):
        opforge.op("GridSample", d, bad)


@pytest.mark.parametrize("aligned_mode", ["asymmetric", "half_pixel_for_nn", "half_pixel"])
@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("sampling_ratio", [0, 2])
def test_roi_align_matches_openvino(aligned_mode: str, mode: str, sampling_ratio: int) -> None:
    o9 = pytest.importorskip("openvino.opset9")
    data = RNG.standard_normal((2, 3, 10, 9)).astype(np.float32)
    rois = np.array([[0.5, 1.2, 6.3, 7.7], [2.0, 2.0, 2.4, 2.2], [-2.0, -1.5, 11.0, 12.0], [1, 1, 8, 3]],
                    np.float32)
    idx = np.array([0, 1, 1, 0], np.int32)
    attrs: dict[str, Any] = {"pooled_h": 3, "pooled_w": 4, "sampling_ratio": sampling_ratio, "spatial_scale": 0.9,
             "mode": mode, "aligned_mode": aligned_mode}
    close(ours("ROIAlign", [data, rois, idx], **attrs),
          openvino(lambda d, r, i: o9.roi_align(d, r, i, 3, 4, sampling_ratio, 0.9, mode, aligned_mode),
                   [data, rois, idx]), atol=1e-4)


@pytest.mark.parametrize("pad", [False, True])
@pytest.mark.parametrize("with_mask", [False, True])
@pytest.mark.parametrize("groups", [(1, 1), (2, 2), (1, 2)])
def test_deformable_convolution_matches_openvino(pad: bool, with_mask: bool, groups: tuple[int, int]) -> None:
    o8 = pytest.importorskip("openvino.opset8")
    group, dg = groups
    data = RNG.standard_normal((2, 4, 7, 6)).astype(np.float32)
    filters = RNG.standard_normal((6, 4 // group, 3, 2)).astype(np.float32)
    # output: (7 + 1 + 0 - 5) // 1 + 1 = 4, (6 + 1 + 1 - 2) // 2 + 1 = 4
    offsets = (RNG.standard_normal((2, 2 * dg * 3 * 2, 4, 4)) * 1.5).astype(np.float32)
    mask = RNG.uniform(0, 1, (2, dg * 3 * 2, 4, 4)).astype(np.float32)
    attrs: dict[str, Any] = {"strides": [1, 2], "pads_begin": [1, 1], "pads_end": [0, 1], "dilations": [2, 1], "group": group,
             "deformable_group": dg, "bilinear_interpolation_pad": pad}
    arrays = [data, offsets, filters] + ([mask] if with_mask else [])

    def build(*n: Any) -> Any:
        return o8.deformable_convolution(n[0], n[1], n[2], [1, 2], [1, 1], [0, 1], [2, 1],
                                         mask=n[3] if with_mask else None, group=group, deformable_group=dg,
                                         bilinear_interpolation_pad=pad)

    close(ours("DeformableConvolution", arrays, **attrs), openvino(build, arrays), atol=1e-4)
