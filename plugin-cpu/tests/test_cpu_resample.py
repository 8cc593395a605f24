"""Interpolate over the last two axes (the NCHW resize of every CNN) runs the separable plane
resampler (core/resample.cpp): weights computed once at compile time, a vectorised pass per
output row, threads over planes or, with fewer planes than threads, over blocks of rows. It must
agree with the reference for every mode, coordinate_transformation_mode, nearest_mode, scales and
sizes; what it does not cover (pads, other axes, integers) keeps the general kernel."""

from __future__ import annotations

from typing import Any

import numpy as np
import opforge
import pytest
from opforge.graph import Model
from opforge.reference import evaluate_model
from opforge.testing.cases import op_class
from opforge.testing.models import Input, build, const, tensor

CTMS = ["half_pixel", "pytorch_half_pixel", "asymmetric", "tf_half_pixel_for_nn", "align_corners"]
NEAREST = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple"]


def interpolate(data: Input, target: list[float] | list[int], axes: list[int], sizes: bool,
                **attrs: Any) -> tuple[Model, list[np.ndarray]]:
    second = const(target, "i64") if sizes else const(target, "f32")
    attrs = {"shape_calculation_mode": "sizes" if sizes else "scales", **attrs}
    return build(op_class("Interpolate", "opset11"), [data, second, const(axes)], attrs, seed=5)


def run(core: opforge.Core, model: Model, feeds: list[np.ndarray], threads: int = 2,
        rtol: float = 1e-5, atol: float = 1e-5) -> str:
    """Checks the CPU against the reference; returns the implementation that ran Interpolate."""
    (want,) = evaluate_model(model, feeds)
    compiled = core.compile_model(model, "CPU", {"ENABLE_PROFILING": True, "INFERENCE_NUM_THREADS": threads})
    req = compiled.create_infer_request()
    got = np.asarray(req.infer({i: f for i, f in enumerate(feeds)})[0])
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    (row,) = [r for r in req.get_profiling_info() if r.node_type == "Interpolate" and r.status == "EXECUTED"]
    return row.exec_type


@pytest.mark.parametrize("ctm", CTMS)
@pytest.mark.parametrize("mode", ["linear_onnx", "linear", "cubic"])
@pytest.mark.parametrize(("sizes", "target"), [(False, [2.0, 1.5]), (True, [17, 12]), (False, [0.5, 0.75])])
def test_every_interpolating_mode_and_coordinate_mode(core: opforge.Core, ctm: str, mode: str, sizes: bool,
                                                      target: list[float]) -> None:
    model, feeds = interpolate(tensor(2, 3, 9, 7), target, [2, 3], sizes, mode=mode,
                               coordinate_transformation_mode=ctm)
    assert run(core, model, feeds) == "interpolate_planes"


@pytest.mark.parametrize("ctm", ["half_pixel", "asymmetric", "align_corners", "tf_half_pixel_for_nn"])
@pytest.mark.parametrize("nearest_mode", NEAREST)
@pytest.mark.parametrize("target", [[2.0, 3.0], [0.6, 0.5]])
def test_every_nearest_mode(core: opforge.Core, ctm: str, nearest_mode: str, target: list[float]) -> None:
    model, feeds = interpolate(tensor(1, 4, 6, 8), target, [2, 3], False, mode="nearest",
                               coordinate_transformation_mode=ctm, nearest_mode=nearest_mode)
    assert run(core, model, feeds, rtol=0, atol=0) == "interpolate_planes"  # a copy: exact


def test_linear_antialias_downscale(core: opforge.Core) -> None:
    model, feeds = interpolate(tensor(2, 2, 20, 17), [6, 5], [2, 3], True, mode="linear", antialias=True)
    assert run(core, model, feeds) == "interpolate_planes"


@pytest.mark.parametrize("threads", [1, 2])
def test_one_plane_is_split_into_row_blocks(core: opforge.Core, threads: int) -> None:
    # fewer planes than threads: blocks of output rows, each recomputing its edge source rows
    model, feeds = interpolate(tensor(1, 1, 41, 33), [2.0, 2.0], [2, 3], False, mode="linear_onnx",
                               coordinate_transformation_mode="half_pixel")
    assert run(core, model, feeds, threads=threads) == "interpolate_planes"


@pytest.mark.parametrize(("axes", "target"), [([3], [2.5]), ([2], [1.75]), ([0, 1, 2, 3], [1.0, 1.0, 2.0, 0.5])])
def test_one_of_the_two_axes_or_all_axes_with_unit_scales(core: opforge.Core, axes: list[int],
                                                          target: list[float]) -> None:
    model, feeds = interpolate(tensor(2, 3, 8, 6), target, axes, False, mode="linear_onnx")
    assert run(core, model, feeds) == "interpolate_planes"


def test_f64_and_rank_3(core: opforge.Core) -> None:
    model, feeds = interpolate(tensor(2, 3, 8, 6, dtype="f64"), [2.0, 2.0], [2, 3], False, mode="cubic")
    assert run(core, model, feeds, rtol=1e-12, atol=1e-12) == "interpolate_planes"
    model, feeds = interpolate(tensor(3, 5, 7), [11, 4], [1, 2], True, mode="linear_onnx")
    assert run(core, model, feeds) == "interpolate_planes"


def test_large_upsample_matches(core: opforge.Core) -> None:
    model, feeds = interpolate(tensor(1, 8, 64, 64), [2.0, 2.0], [2, 3], False, mode="linear_onnx",
                               coordinate_transformation_mode="align_corners")
    assert run(core, model, feeds) == "interpolate_planes"


@pytest.mark.parametrize(("data", "target", "axes", "attrs"), [
    (tensor(2, 3, 7, 5), [2, 3, 4, 9], [0, 1, 2, 3], {"pads_begin": [0, 0, 1, 0], "pads_end": [0, 0, 0, 2]}),
    (tensor(2, 3, 7, 5), [5], [1], {}),                                   # a channel axis resized
    (tensor(1, 2, 4, 4, dtype="i32", low=-50, high=50), [7, 3], [2, 3], {}),  # integers round
])
def test_what_the_resampler_does_not_cover_keeps_the_general_kernel(core: opforge.Core, data: Input,
                                                                    target: list[int], axes: list[int],
                                                                    attrs: dict[str, Any]) -> None:
    model, feeds = interpolate(data, target, axes, True, mode="linear", **attrs)
    assert run(core, model, feeds) == "interpolate"
