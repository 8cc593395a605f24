"""The kernels added for ONNX coverage (resampling, indexing, scatters, recurrent sequences,
Fourier transforms, data-dependent shapes...) and the small kernels added before them, each
against the NumPy reference over several shapes and attributes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from cpu_testing import check, rand, single
from opforge.reference import evaluate_model

F32 = np.float32
I64 = np.int64


# --- resampling --------------------------------------------------------------------------------
@pytest.mark.parametrize("mode,ctm,nearest", [
    ("nearest", "asymmetric", "floor"), ("nearest", "half_pixel", "round_prefer_floor"),
    ("nearest", "align_corners", "round_prefer_ceil"), ("linear", "half_pixel", "floor"),
    ("linear_onnx", "align_corners", "floor"), ("linear_onnx", "pytorch_half_pixel", "floor"),
    ("cubic", "half_pixel", "floor"), ("cubic", "asymmetric", "floor"),
])
@pytest.mark.parametrize("scales", [(2.0, 1.5), (0.5, 0.75)])
def test_interpolate_scales(core: Any, mode: str, ctm: str, nearest: str, scales: tuple[float, float]) -> None:
    x = rand((1, 2, 6, 8))
    model, feeds = single("Interpolate", [x, np.array(scales, F32), np.array([2, 3], I64)],
                          {1: np.array(scales, F32), 2: np.array([2, 3], I64)}, mode=mode,
                          shape_calculation_mode="scales", coordinate_transformation_mode=ctm, nearest_mode=nearest)
    check(core, model, feeds, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("antialias", [False, True])
def test_interpolate_sizes_pads(core: Any, antialias: bool) -> None:
    x = rand((2, 3, 7, 5))
    sizes = np.array([1, 3, 4, 9], I64)
    model, feeds = single("Interpolate", [x, sizes], {1: sizes}, mode="linear", shape_calculation_mode="sizes",
                          antialias=antialias, pads_begin=[0, 0, 1, 0], pads_end=[0, 0, 0, 2])
    check(core, model, feeds, rtol=1e-4, atol=1e-5)


def test_interpolate_int(core: Any) -> None:
    x = rand((1, 1, 4, 4), np.int32)
    sizes = np.array([7, 3], I64)
    model, feeds = single("Interpolate", [x, sizes, np.array([2, 3], I64)], {1: sizes, 2: np.array([2, 3], I64)},
                          mode="linear", shape_calculation_mode="sizes")
    check(core, model, feeds)


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample(core: Any, mode: str, padding: str, align: bool) -> None:
    x = rand((2, 3, 5, 6))
    grid = rand((2, 4, 7, 2), low=-1.3, high=1.3, seed=1)
    model, feeds = single("GridSample", [x, grid], mode=mode, padding_mode=padding, align_corners=align)
    check(core, model, feeds, rtol=1e-4, atol=1e-5)


# --- indexing ----------------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_elements(core: Any, axis: int) -> None:
    x = rand((3, 4, 5))
    shape = [3, 4, 5]
    shape[axis] = 2
    idx = np.random.default_rng(0).integers(-shape[axis], 3, size=shape).astype(I64)
    model, feeds = single("GatherElements", [x, idx], axis=axis)
    check(core, model, feeds)


@pytest.mark.parametrize("batch_dims,ishape,k", [(0, (2, 2), 2), (0, (3, 1), 1), (1, (3, 2, 1), 1), (0, (4, 3), 3)])
def test_gather_nd(core: Any, batch_dims: int, ishape: tuple[int, ...], k: int) -> None:
    x = rand((3, 4, 5), np.int32)
    dims = [3, 4, 5][batch_dims:batch_dims + k]
    rng = np.random.default_rng(1)
    idx = np.stack([rng.integers(0, d, size=ishape[:-1]) for d in dims], axis=-1).astype(np.int32)
    model, feeds = single("GatherND", [x, idx], batch_dims=batch_dims)
    check(core, model, feeds)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_scatter_update(core: Any, axis: int) -> None:
    x = rand((3, 4, 5))
    idx = np.array([[2, 0]], I64)
    ushape = [*[3, 4, 5][:axis], 1, 2, *[3, 4, 5][axis + 1:]]
    model, feeds = single("ScatterUpdate", [x, idx, rand(ushape, seed=2), np.array(axis)], {3: np.array(axis, I64)})
    check(core, model, feeds)


@pytest.mark.parametrize("reduction", ["none", "sum", "sub", "prod", "min", "max"])
@pytest.mark.parametrize("dtype", [F32, np.int32])
def test_scatter_nd_update(core: Any, reduction: str, dtype: Any) -> None:
    x = rand((4, 3, 2), dtype)
    idx = np.array([[1], [3], [1]], I64)
    model, feeds = single("ScatterNDUpdate", [x, idx, rand((3, 3, 2), dtype, seed=3)], version="opset15",
                          reduction=reduction)
    check(core, model, feeds)


def test_scatter_nd_update_4_elements(core: Any) -> None:
    x = rand((4, 5))
    idx = np.array([[0, 1], [3, 4], [-1, 0]], np.int32)
    model, feeds = single("ScatterNDUpdate", [x, idx, rand((3,), seed=4)], version="opset4")
    check(core, model, feeds)


@pytest.mark.parametrize("reduction,init", [("none", True), ("sum", True), ("prod", False), ("min", True),
                                            ("max", False), ("mean", True), ("mean", False)])
@pytest.mark.parametrize("dtype", [F32, I64])
def test_scatter_elements_update(core: Any, reduction: str, init: bool, dtype: Any) -> None:
    x = rand((3, 4), dtype)
    idx = np.array([[1, 0, 2, 2], [1, 1, 0, 2]], I64)
    model, feeds = single("ScatterElementsUpdate", [x, idx, rand((2, 4), dtype, seed=5), np.array(0)],
                          {3: np.array(0, I64)}, reduction=reduction, use_init_val=init)
    check(core, model, feeds)


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot(core: Any, axis: int) -> None:
    idx = np.array([[0, 2, 5], [1, -1, 3]], I64)
    model, feeds = single("OneHot", [idx, np.array(4, I64), np.array(3.0, F32), np.array(-1.0, F32)],
                          {1: np.array(4, I64), 2: np.array(3.0, F32), 3: np.array(-1.0, F32)}, axis=axis)
    check(core, model, feeds)


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis,dtype", [(0, F32), (1, np.int32), (-1, np.float64)])
def test_cum_sum(core: Any, exclusive: bool, reverse: bool, axis: int, dtype: Any) -> None:
    model, feeds = single("CumSum", [rand((3, 4, 5), dtype), np.array(axis, I64)], {1: np.array(axis, I64)},
                          exclusive=exclusive, reverse=reverse)
    check(core, model, feeds)


@pytest.mark.parametrize("axes,size", [([1], 3), ([1], 4), ([2, 3], 3)])
def test_lrn(core: Any, axes: list[int], size: int) -> None:
    model, feeds = single("LRN", [rand((2, 5, 4, 4)), np.array(axes, I64)], {1: np.array(axes, I64)},
                          alpha=1e-2, beta=0.75, bias=1.0, size=size)
    check(core, model, feeds, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("eq,shapes", [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("ii->i", [(4, 4)]),
    ("ij->ji", [(3, 4)]), ("ij->", [(3, 4)]), ("...ij,...jk", [(2, 3, 4), (4, 2)]), ("i,i", [(5,), (5,)]),
    ("bii->bi", [(2, 3, 3)]),
])
def test_einsum(core: Any, eq: str, shapes: list[tuple[int, ...]]) -> None:
    xs = [rand(s, seed=k) for k, s in enumerate(shapes)]
    model, feeds = single("Einsum", xs, equation=eq)
    check(core, model, feeds, rtol=1e-5, atol=1e-5)


# --- recurrent sequences -----------------------------------------------------------------------
def _seq_inputs(gates: int, states: int, direction: str, lengths: list[int]) -> list[np.ndarray]:
    nd = 2 if direction == "bidirectional" else 1
    b, t, i, h = len(lengths), 4, 3, 5
    xs = [rand((b, t, i), seed=1)]
    xs += [rand((b, nd, h), seed=2 + k, low=-1, high=1) for k in range(states)]
    xs += [np.array(lengths, np.int32)]
    xs += [rand((nd, gates * h, i), seed=5, low=-0.6, high=0.6), rand((nd, gates * h, h), seed=6, low=-0.6, high=0.6)]
    return xs


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("op", ["RNNSequence", "GRUSequence", "GRUSequence-lbr", "LSTMSequence"])
def test_sequences(core: Any, op: str, direction: str) -> None:
    name = op.split("-")[0]
    gates, states = {"RNNSequence": (1, 1), "GRUSequence": (3, 1), "LSTMSequence": (4, 2)}[name]
    lbr = op.endswith("lbr")
    xs = _seq_inputs(gates, states, direction, [4, 2, 0])
    nd = 2 if direction == "bidirectional" else 1
    xs.append(rand((nd, (gates + (1 if lbr else 0)) * 5), seed=7, low=-0.5, high=0.5))
    attrs: dict[str, Any] = {"hidden_size": 5, "direction": direction}
    if lbr:
        attrs["linear_before_reset"] = True
    if name == "RNNSequence":
        attrs["activations"] = ["tanh"]
    model, feeds = single(name, xs, clip=0.0 if name != "LSTMSequence" else 2.5, **attrs)
    check(core, model, feeds, rtol=1e-5, atol=1e-5)


# --- Fourier transforms ------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["DFT", "IDFT"])
@pytest.mark.parametrize("axes,sizes", [([1], None), ([0, 1], None), ([-1], [7]), ([1], [3])])
def test_dft(core: Any, op: str, axes: list[int], sizes: list[int] | None) -> None:
    x = rand((3, 5, 2))
    ins = [x, np.array(axes, I64)] + ([np.array(sizes, I64)] if sizes else [])
    consts = {1: np.array(axes, I64)} | ({2: np.array(sizes, I64)} if sizes else {})
    model, feeds = single(op, ins, consts)
    check(core, model, feeds, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("axes,sizes", [([1], None), ([0, 1], None), ([1], [6]), ([1], [3])])
def test_rdft_irdft(core: Any, axes: list[int], sizes: list[int] | None) -> None:
    extra = [np.array(sizes, I64)] if sizes else []
    consts = {1: np.array(axes, I64)} | ({2: np.array(sizes, I64)} if sizes else {})
    model, feeds = single("RDFT", [rand((4, 5)), np.array(axes, I64), *extra], consts)
    check(core, model, feeds, rtol=1e-4, atol=1e-5)
    model, feeds = single("IRDFT", [rand((4, 3, 2)), np.array(axes, I64), *extra], consts)
    check(core, model, feeds, rtol=1e-4, atol=1e-5)


# --- convolutions and pooling of regions -------------------------------------------------------
@pytest.mark.parametrize("case", [
    {"k": [2, 2], "out": [4, 5]}, {"k": [3, 2], "out": [6, 5], "strides": [2, 1]},
    {"k": [2, 2], "out": [5, 5], "dilations": [2, 1], "pads_begin": [1, 0], "pads_end": [1, 1]},
])
def test_col2im(core: Any, case: dict[str, Any]) -> None:
    k, out = case["k"], case["out"]
    st, dl = case.get("strides", [1, 1]), case.get("dilations", [1, 1])
    pb, pe = case.get("pads_begin", [0, 0]), case.get("pads_end", [0, 0])
    nb = [(out[i] + pb[i] + pe[i] - (dl[i] * (k[i] - 1) + 1)) // st[i] + 1 for i in range(2)]
    x = rand((2, 3 * k[0] * k[1], nb[0] * nb[1]))
    model, feeds = single("Col2Im", [x, np.array(out, I64), np.array(k, I64)],
                          {1: np.array(out, I64), 2: np.array(k, I64)}, strides=st, dilations=dl,
                          pads_begin=pb, pads_end=pe)
    check(core, model, feeds)


@pytest.mark.parametrize("mask", [False, True])
@pytest.mark.parametrize("pad", [False, True])
@pytest.mark.parametrize("groups", [(1, 1), (2, 2)])
def test_deformable_convolution(core: Any, mask: bool, pad: bool, groups: tuple[int, int]) -> None:
    g, dg = groups
    x = rand((1, 4, 5, 5))
    w = rand((4, 4 // g, 2, 2), seed=1)
    off = rand((1, 2 * dg * 4, 4, 4), seed=2, low=-1.5, high=1.5)
    ins = [x, off, w] + ([rand((1, dg * 4, 4, 4), seed=3, low=0, high=1)] if mask else [])
    model, feeds = single("DeformableConvolution", ins, strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0],
                          dilations=[1, 1], group=g, deformable_group=dg, bilinear_interpolation_pad=pad)
    check(core, model, feeds, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("aligned", ["asymmetric", "half_pixel", "half_pixel_for_nn"])
@pytest.mark.parametrize("ratio", [0, 2])
def test_roi_align(core: Any, mode: str, aligned: str, ratio: int) -> None:
    x = rand((2, 3, 8, 8))
    rois = np.array([[0, 0, 7, 7], [1.5, 2.0, 5.5, 4.0], [-1, -1, 3, 9]], F32)
    model, feeds = single("ROIAlign", [x, rois, np.array([0, 1, 1], np.int32)], pooled_h=2, pooled_w=3,
                          sampling_ratio=ratio, spatial_scale=1.0, mode=mode, aligned_mode=aligned)
    check(core, model, feeds, rtol=1e-4, atol=1e-5)


# --- data-dependent output shapes --------------------------------------------------------------
@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 2)])
@pytest.mark.parametrize("dtype", [F32, np.int32, np.bool_])
def test_non_zero(core: Any, shape: tuple[int, ...], dtype: Any) -> None:
    x = (rand(shape, F32) > 0.3).astype(dtype) * (rand(shape, F32, seed=1) * 3).astype(dtype)
    model, feeds = single("NonZero", [x.astype(dtype)], output_type="i64")
    check(core, model, feeds)


def test_non_zero_feeds_later_ops(core: Any) -> None:
    # NonZero in the middle of the model: the ops after it see its run-time shape.
    import opforge
    from cpu_testing import param

    p = param("x", [3, 4])
    nz = opforge.op("NonZero", opforge.op("Relu", p), output_type="i64")
    t = opforge.op("Transpose", nz, opforge.op("Constant", value=np.array([1, 0], I64)))
    cnt = opforge.op("ReduceSum", nz, opforge.op("Constant", value=np.array([0, 1], I64)), keep_dims=False)
    from opforge.graph import Model

    model = Model([t.output(0), cnt.output(0), p.output(0)], [p])
    for seed in (0, 1):
        check(core, model, [rand((3, 4), seed=seed)])


@pytest.mark.parametrize("sorted_", [True, False])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_unique(core: Any, sorted_: bool, axis: int | None) -> None:
    x = np.array([[2, 1, 2], [0, 1, 0], [2, 1, 2], [3, 3, 3]], np.int32)
    ins, consts = [x], {}
    if axis is not None:
        ins.append(np.array(axis, I64))
        consts = {1: np.array(axis, I64)}
    model, feeds = single("Unique", ins, consts, sorted=sorted_)
    check(core, model, feeds)


@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("sigma,sort_desc", [(0.0, True), (0.0, False), (0.5, True)])
def test_non_max_suppression(core: Any, center: bool, sigma: float, sort_desc: bool) -> None:
    rng = np.random.default_rng(0)
    boxes = rng.uniform(0, 10, (2, 6, 4)).astype(F32)
    scores = rng.uniform(0, 1, (2, 3, 6)).astype(F32)
    consts = {2: np.array(3, I64), 3: np.array(0.4, F32), 4: np.array(0.2, F32), 5: np.array(sigma, F32)}
    model, feeds = single("NonMaxSuppression", [boxes, scores, *consts.values()], consts,
                          box_encoding="center" if center else "corner", sort_result_descending=sort_desc)
    check(core, model, feeds)


# --- f16 / bf16 computed in f32 ----------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_low_precision_runs_in_f32(core: Any, dtype: str) -> None:
    import ml_dtypes
    import opforge
    from cpu_testing import param
    from opforge.graph import Model

    npt = np.float16 if dtype == "f16" else ml_dtypes.bfloat16
    a, b = param("a", [3, 4], dtype), param("b", [4, 5], dtype)
    y = opforge.op("Softmax", opforge.op("MatMul", a, b), axis=1)
    model = Model([y.output(0)], [a, b])
    check(core, model, [rand((3, 4)).astype(npt), rand((4, 5), seed=1).astype(npt)], rtol=1e-2, atol=1e-2)


# --- the small kernels of the previous round ---------------------------------------------------
@pytest.mark.parametrize("op", ["BitwiseAnd", "BitwiseOr", "BitwiseXor"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.uint64, np.bool_])
def test_bitwise_binary(core: Any, op: str, dtype: Any) -> None:
    model, feeds = single(op, [rand((3, 4), dtype), rand((4,), dtype, seed=1)])
    check(core, model, feeds)


@pytest.mark.parametrize("dtype", [np.int16, np.uint32, np.int64, np.bool_])
def test_bitwise_not(core: Any, dtype: Any) -> None:
    model, feeds = single("BitwiseNot", [rand((2, 5), dtype)])
    check(core, model, feeds)


@pytest.mark.parametrize("op", ["BitwiseLeftShift", "BitwiseRightShift"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.uint64])
def test_bitwise_shifts(core: Any, op: str, dtype: Any) -> None:
    shift = np.array([0, 1, 3, 5], dtype)
    model, feeds = single(op, [rand((3, 4), dtype, high=30), shift])
    check(core, model, feeds)


def test_logical_not(core: Any) -> None:
    model, feeds = single("LogicalNot", [rand((3, 7), np.bool_)])
    check(core, model, feeds)


def _specials(dtype: Any) -> np.ndarray:
    return np.array([0, 1.5, -2, np.inf, -np.inf, np.nan, 1e30, -0.0], dtype)


@pytest.mark.parametrize("dtype", [F32, np.float64])
@pytest.mark.parametrize("neg,pos", [(True, True), (True, False), (False, True)])
def test_is_inf(core: Any, dtype: Any, neg: bool, pos: bool) -> None:
    model, feeds = single("IsInf", [_specials(dtype)], detect_negative=neg, detect_positive=pos)
    check(core, model, feeds)


@pytest.mark.parametrize("op", ["IsNaN", "IsFinite"])
@pytest.mark.parametrize("dtype", [F32, np.float64])
def test_is_nan_finite(core: Any, op: str, dtype: Any) -> None:
    model, feeds = single(op, [_specials(dtype)])
    check(core, model, feeds)


@pytest.mark.parametrize("shape", [(5,), (2, 3, 4)])
def test_selu(core: Any, shape: tuple[int, ...]) -> None:
    model, feeds = single("Selu", [rand(shape), np.array([1.67], F32), np.array([1.05], F32)],
                          {1: np.array([1.67], F32), 2: np.array([1.05], F32)})
    check(core, model, feeds, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("slope_shape", [(1,), (3,), (3, 1, 1)])
def test_prelu(core: Any, slope_shape: tuple[int, ...]) -> None:
    x = rand((2, 3, 4, 4))
    model, feeds = single("PRelu", [x, rand(slope_shape, seed=1)])
    check(core, model, feeds)


@pytest.mark.parametrize("mode", ["max", "min"])
@pytest.mark.parametrize("sort", ["value", "index", "none"])
@pytest.mark.parametrize("axis,k", [(1, 3), (-1, 1), (0, 2)])
def test_top_k(core: Any, mode: str, sort: str, axis: int, k: int) -> None:
    x = rand((4, 6, 5), np.int32, low=-3, high=3)  # ties: the lowest index comes first
    model, feeds = single("TopK", [x, np.array(k, I64)], {1: np.array(k, I64)}, axis=axis, mode=mode, sort=sort,
                          index_element_type="i32")
    check(core, model, feeds)


# --- Swish, adaptive pooling, L2 normalisations --------------------------------------------------
@pytest.mark.parametrize("shape", [(7,), (2, 3, 4, 5)])
@pytest.mark.parametrize("beta,beta_const", [(None, True), (0.5, True), (2.0, True), (0.5, False), (1.5, False)])
def test_swish(core: Any, shape: tuple[int, ...], beta: float | None, beta_const: bool) -> None:
    x = rand(shape, low=-6, high=6)
    ins = [x] if beta is None else [x, np.array(beta, F32)]
    model, feeds = single("Swish", ins, {1: np.array(beta, F32)} if beta is not None and beta_const else {})
    check(core, model, feeds, rtol=1e-5, atol=1e-6)


_ADAPTIVE = [((2, 3, 10), [4]), ((2, 3, 9), [9]), ((1, 2, 7, 9), [3, 4]), ((2, 3, 8, 8), [1, 1]),
             ((1, 2, 5, 6), [7, 8]), ((1, 2, 5, 6, 7), [2, 3, 4]), ((1, 1, 4, 4, 4), [1, 1, 1])]


@pytest.mark.parametrize("shape,out", _ADAPTIVE)
def test_adaptive_avg_pool(core: Any, shape: tuple[int, ...], out: list[int]) -> None:
    size = np.array(out, I64)
    model, feeds = single("AdaptiveAvgPool", [rand(shape), size], {1: size})
    check(core, model, feeds, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape,out", _ADAPTIVE)
@pytest.mark.parametrize("index_type", ["i32", "i64"])
def test_adaptive_max_pool(core: Any, shape: tuple[int, ...], out: list[int], index_type: str) -> None:
    size = np.array(out, np.int32)
    model, feeds = single("AdaptiveMaxPool", [rand(shape), size], {1: size}, index_element_type=index_type)
    check(core, model, feeds)


def test_adaptive_max_pool_ties(core: Any) -> None:
    x = rand((2, 2, 6, 6), np.int32, low=-1, high=1)  # many ties: the first in row-major order wins
    size = np.array([4, 3], I64)
    model, feeds = single("AdaptiveMaxPool", [x, size], {1: size})
    check(core, model, feeds)


@pytest.mark.parametrize("op", ["AdaptiveAvgPool", "AdaptiveMaxPool"])
def test_adaptive_pool_fed_output_shape(core: Any, op: str) -> None:
    x = rand((1, 2, 9, 7))
    model, _ = single(op, [x, np.array([3, 2], I64)])
    compiled = core.compile_model(model, "CPU")
    for out in ([3, 2], [4, 5], [1, 1]):
        feeds = [x, np.array(out, I64)]
        got = compiled(feeds).to_tuple()
        want = evaluate_model(model, feeds)
        assert got[0].shape == (1, 2, *out)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape,axes", [((2, 3, 4, 5), [1]), ((2, 3, 4, 5), [2, 3]), ((2, 3, 4, 5), [-1]),
                                        ((2, 3, 4, 5), [0, 2]), ((2, 3, 4, 5), [1, 3]), ((2, 3, 4, 5), []),
                                        ((6,), [0]), ((3, 1, 4), [0, 1, 2])])
@pytest.mark.parametrize("eps,mode", [(1e-6, "add"), (1e-6, "max"), (10.0, "max"), (0.5, "add")])
def test_normalize_l2(core: Any, shape: tuple[int, ...], axes: list[int], eps: float, mode: str) -> None:
    x = rand(shape)
    if not axes:
        x.reshape(-1)[::3] = 0
    ax = np.array(axes, I64)
    model, feeds = single("NormalizeL2", [x, ax], {1: ax}, eps=eps, eps_mode=mode)
    check(core, model, feeds, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(3, 5), (2, 4, 6), (2, 3, 4, 5)])
@pytest.mark.parametrize("bias", [1e-6, 1.0])
def test_grn(core: Any, shape: tuple[int, ...], bias: float) -> None:
    model, feeds = single("GRN", [rand(shape)], bias=bias)
    check(core, model, feeds, rtol=1e-5, atol=1e-6)


def test_new_ops_are_supported(core: Any) -> None:
    x = rand((1, 2, 6, 6))
    for op, ins, consts, attrs in [
        ("Swish", [x], {}, {}),
        ("AdaptiveAvgPool", [x, np.array([2, 2], I64)], {1: np.array([2, 2], I64)}, {}),
        ("AdaptiveMaxPool", [x, np.array([2, 2], I64)], {1: np.array([2, 2], I64)}, {}),
        ("NormalizeL2", [x, np.array([1], I64)], {1: np.array([1], I64)}, {"eps": 1e-6, "eps_mode": "add"}),
        ("GRN", [x], {}, {"bias": 1.0}),
    ]:
        model, _ = single(op, ins, consts, **attrs)
        assert "node" in core.query_model(model, "CPU"), op
