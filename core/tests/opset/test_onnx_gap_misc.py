"""NonMaxSuppression-9, Col2Im-15, DFT/IDFT-7, RDFT/IRDFT-9, BitwiseLeftShift/RightShift-15 and
ScatterNDUpdate-15: the NumPy references checked against OpenVINO's CPU device, and shape
inference."""

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

RNG = np.random.default_rng(2)


def param(a: np.ndarray) -> Node:
    return opforge.op("Parameter", element_type=Type.from_numpy(a.dtype), shape=PartialShape(a.shape))


def ours(type_name: str, arrays: list[np.ndarray], consts: tuple[int, ...] = (), **attrs: Any) -> list[np.ndarray]:
    nodes = [opforge.op("Constant", value=a) if i in consts else param(a) for i, a in enumerate(arrays)]
    node = opforge.op(type_name, *nodes, **attrs)
    params = [n for n in nodes if n.type_name == "Parameter"]
    outs = evaluate_model(Model(node.outputs(), params), [a for i, a in enumerate(arrays) if i not in consts])
    for o, spec in zip(outs, node.output_specs):
        assert o.dtype == spec.type.np and spec.shape.compatible(o.shape), (o.dtype, o.shape, spec)
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
        if x.dtype.kind == "f":
            np.testing.assert_allclose(x, y, rtol=1e-4, atol=atol)
        else:
            np.testing.assert_array_equal(x, y)


# --- NonMaxSuppression ---------------------------------------------------------------------------
@pytest.mark.parametrize("encoding", ["corner", "center"])
@pytest.mark.parametrize("sort", [False, True])
@pytest.mark.parametrize("sigma", [0.0, 0.5])
def test_nms_matches_openvino(encoding: str, sort: bool, sigma: float) -> None:
    o9 = pytest.importorskip("openvino.opset9")
    centers = RNG.uniform(0, 10, (2, 12, 2))
    sizes = RNG.uniform(1, 4, (2, 12, 2))
    if encoding == "corner":
        boxes = np.concatenate([centers - sizes / 2, centers + sizes / 2], axis=-1)
        boxes[:, ::3] = boxes[:, ::3][..., [2, 3, 0, 1]]  # flipped corners are allowed
    else:
        boxes = np.concatenate([centers, sizes], axis=-1)
    boxes = boxes.astype(np.float32)
    scores = RNG.permutation(np.linspace(0.05, 0.95, 2 * 3 * 12)).reshape(2, 3, 12).astype(np.float32)
    extra: list[np.ndarray] = [np.array(5, np.int64), np.array(0.3, np.float32), np.array(0.2, np.float32), np.array(sigma, np.float32)]
    arrays: list[np.ndarray] = [boxes, scores, *extra]
    got = ours("NonMaxSuppression", arrays, consts=(2, 3, 4, 5), box_encoding=encoding, sort_result_descending=sort)
    want = openvino(lambda b, s, m, i, t, g: o9.non_max_suppression(b, s, m, i, t, g, encoding, sort, "i64"),
                    arrays, consts=(2, 3, 4, 5))
    n = int(want[2][0])
    close(got, [want[0][:n], want[1][:n], want[2]])


def test_nms_shapes() -> None:
    b = opforge.op("Parameter", element_type=Type.f32, shape=PartialShape([1, 6, 4]))
    s = opforge.op("Parameter", element_type=Type.f32, shape=PartialShape([1, 2, 6]))
    node = opforge.op("NonMaxSuppression", b, s, output_type="i32")
    assert [sp.shape for sp in node.output_specs] == [PartialShape([None, 3])] * 2 + [PartialShape([1])]
    assert node.output_specs[0].type is Type.i32
    bad = opforge.op("Parameter", element_type=Type.f32, shape=PartialShape([1, 7, 4]))
    with pytest.raises(ShapeInferenceError, match="num_boxes"):
        opforge.op("NonMaxSuppression", bad, s)


# --- Col2Im --------------------------------------------------------------------------------------
@pytest.mark.parametrize("batched", [False, True])
def test_col2im_matches_openvino(batched: bool) -> None:
    o15 = pytest.importorskip("openvino.opset15")
    attrs = {"strides": [2, 1], "dilations": [1, 2], "pads_begin": [1, 0], "pads_end": [0, 2]}
    out, kernel = np.array([7, 6], np.int64), np.array([2, 3], np.int64)
    # blocks: (7 + 1 - 2) // 2 + 1 = 4, (6 + 2 - 5) // 1 + 1 = 4
    data = RNG.standard_normal(((2,) if batched else ()) + (3 * 6, 16)).astype(np.float32)
    close(ours("Col2Im", [data, out, kernel], consts=(1, 2), **attrs),
          openvino(lambda d, o, k: o15.col2im(d, o, k, **attrs), [data, out, kernel], consts=(1, 2)))


def test_col2im_bad_block_count() -> None:
    d = opforge.op("Parameter", element_type=Type.f32, shape=PartialShape([1, 12, 10]))
    with pytest.raises(ShapeInferenceError, match="blocks"):
        opforge.op("Col2Im", d, opforge.op("Constant", value=np.array([4, 4])), opforge.op("Constant", value=np.array([2, 2])))


# --- DFT family ----------------------------------------------------------------------------------
@pytest.mark.parametrize("axes,sizes", [([1], None), ([-1, 0], None), ([1, 2], [5, -1]), ([2], [7]), ([0, 2], [3, 4])])
@pytest.mark.parametrize("kind", ["dft", "idft", "rdft", "irdft"])
def test_fft_matches_openvino(kind: str, axes: list[int], sizes: list[int] | None) -> None:
    o9 = pytest.importorskip("openvino.opset9")
    shape = (3, 6, 4) + ((2,) if kind in ("dft", "idft", "irdft") else ())
    data = RNG.standard_normal(shape).astype(np.float32)
    arrays: list[np.ndarray] = [data, np.array(axes, np.int64)]
    if sizes is not None:
        arrays.append(np.array(sizes, np.int64))
    consts = tuple(range(1, len(arrays)))
    got = ours(kind.upper(), arrays, consts=consts)
    if kind in ("rdft", "irdft") and sizes is not None:
        # OpenVINO's CPU device refuses these (signal_size -1 or larger than the input): NumPy's
        # transforms, whose ``s=`` crops and pads the same way, are the oracle instead.
        c = data[..., 0] + 1j * data[..., 1] if kind == "irdft" else data.astype(np.float64)
        s = [d if v == -1 else v for d, v in zip([c.shape[a] for a in axes], sizes)]
        if kind == "irdft" and sizes[-1] == -1:
            s[-1] = 2 * (c.shape[axes[-1]] - 1)
        if kind == "rdft":
            y = np.fft.rfftn(c, s=s, axes=axes)
            want = [np.stack([y.real, y.imag], -1).astype(np.float32)]
        else:
            want = [np.fft.irfftn(c, s=s, axes=axes).astype(np.float32)]
    else:
        want = openvino(lambda *n: getattr(o9, kind)(*n), arrays, consts=consts)
    close(got, want, atol=1e-4)


# --- bitwise shifts ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.uint16, np.int64])
@pytest.mark.parametrize("left", [False, True])
def test_shift_matches_openvino_in_range(dtype: Any, left: bool) -> None:
    o15 = pytest.importorskip("openvino.opset15")
    info = np.iinfo(dtype)
    a = RNG.integers(info.min, info.max, (4, 5), endpoint=True).astype(dtype)
    b = RNG.integers(0, info.bits, (5,)).astype(dtype)
    name = "BitwiseLeftShift" if left else "BitwiseRightShift"
    fn = o15.bitwise_left_shift if left else o15.bitwise_right_shift
    if dtype == np.int64:
        # OpenVINO's CPU device computes i64 shifts in 32 bits: NumPy is the oracle here.
        close(ours(name, [a, b]), [np.left_shift(a, b) if left else np.right_shift(a, b)])
    else:
        close(ours(name, [a, b]), openvino(fn, [a, b]))


def test_shift_saturates_out_of_range() -> None:
    a = np.array([-8, 4, -1, 5], np.int32)
    b = np.array([32, 33, -1, 100], np.int32)
    assert ours("BitwiseRightShift", [a, b])[0].tolist() == [-1, 0, -1, 0]
    assert ours("BitwiseLeftShift", [a, b])[0].tolist() == [0, 0, 0, 0]
    with pytest.raises(ShapeInferenceError, match="integral"):
        opforge.op("BitwiseLeftShift", param(np.zeros(2, np.float32)), param(np.zeros(2, np.float32)))


# --- ScatterNDUpdate-15 --------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", ["none", "sum", "sub", "prod", "min", "max"])
def test_scatter_nd_reduction_matches_openvino(reduction: str) -> None:
    o15 = pytest.importorskip("openvino.opset15")
    data = RNG.standard_normal((4, 3, 2)).astype(np.float32)
    idx = np.array([[1], [3], [1], [-1]], np.int64)
    upd = RNG.standard_normal((4, 3, 2)).astype(np.float32)
    params = [param(a) for a in (data, idx, upd)]
    node = opforge.op("ScatterNDUpdate", *params, version="opset15", reduction=reduction)
    assert node.version == "opset15"
    got = evaluate_model(Model(node.outputs(), params), [data, idx, upd])
    want = openvino(lambda d, i, u: o15.scatter_nd_update(d, i, u, reduction), [data, idx, upd])
    close(got, want)


def test_scatter_nd_newest_version_is_15_and_replaces_by_default() -> None:
    data, idx, upd = np.zeros(4, np.float32), np.array([[1], [1]], np.int64), np.array([2, 3], np.float32)
    params = [param(a) for a in (data, idx, upd)]
    node = opforge.op("ScatterNDUpdate", *params)
    assert node.version == "opset15"
    assert evaluate_model(Model(node.outputs(), params), [data, idx, upd])[0].tolist() == [0, 3, 0, 0]


# --- names, versions and IR attributes, as OpenVINO writes them ----------------------------------
def _ov_nodes() -> list[Any]:
    ov = pytest.importorskip("openvino")
    import openvino.opset5 as o5
    import openvino.opset7 as o7
    import openvino.opset8 as o8
    import openvino.opset9 as o9
    import openvino.opset15 as o15

    del ov
    p = o15.parameter
    f32, i32 = np.float32, np.int32
    c = o15.constant
    return [
        o5.lstm_sequence(p([2, 3, 4], f32), p([2, 1, 5], f32), p([2, 1, 5], f32), p([2], i32), p([1, 20, 4], f32),
                         p([1, 20, 5], f32), p([1, 20], f32), 5, "forward"),
        o5.gru_sequence(p([2, 3, 4], f32), p([2, 1, 5], f32), p([2], i32), p([1, 15, 4], f32), p([1, 15, 5], f32),
                        p([1, 15], f32), 5, "forward"),
        o5.rnn_sequence(p([2, 3, 4], f32), p([2, 1, 5], f32), p([2], i32), p([1, 5, 4], f32), p([1, 5, 5], f32),
                        p([1, 5], f32), 5, "forward"),
        o9.grid_sample(p([1, 2, 3, 4], f32), p([1, 5, 6, 2], f32), {}),
        o9.non_max_suppression(p([1, 6, 4], f32), p([1, 1, 6], f32), c(np.int64(3))),
        o9.roi_align(p([1, 2, 8, 8], f32), p([3, 4], f32), p([3], i32), 2, 2, 0, 1.0, "avg"),
        o7.dft(p([1, 8, 2], f32), c(np.array([1]))), o7.idft(p([1, 8, 2], f32), c(np.array([1]))),
        o9.rdft(p([1, 8], f32), c(np.array([1]))), o9.irdft(p([1, 5, 2], f32), c(np.array([1]))),
        o15.bitwise_left_shift(p([3], i32), p([3], i32)), o15.bitwise_right_shift(p([3], i32), p([3], i32)),
        o15.col2im(p([1, 12, 9], f32), c(np.array([4, 4])), c(np.array([2, 2]))),
        o15.scatter_nd_update(p([4], f32), p([2, 1], np.int64), p([2], f32), "max"),
        o8.deformable_convolution(p([1, 1, 4, 4], f32), p([1, 8, 3, 3], f32), p([1, 1, 2, 2], f32), [1, 1], [0, 0],
                                  [0, 0], [1, 1]),
    ]


def test_type_names_versions_and_attribute_names_are_openvinos() -> None:
    from opforge.opset import all_ops

    ours = {(o.type_name, o.version): o for o in all_ops()}
    for node in _ov_nodes():
        key = (node.get_type_name(), node.get_type_info().version_id)
        assert key in ours, key
        assert set(ours[key].Attrs.model_fields) == set(node.get_attributes()), key
