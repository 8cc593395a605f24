"""Models whose shapes only the inputs (or the data) decide, on every device, against ONNX Runtime.

- A transformer encoder exported with dynamic batch and sequence axes: its attention mask is
  built from ``Shape -> Gather -> Concat -> ConstantOfShape/Expand``, its head split and merge are
  Reshapes to shapes computed from ``Shape`` (what exporters write). Each device plans it per
  input shape, with the shape arithmetic folded (``opforge.planning``).
- An SSD-style detector: a convolutional head gives boxes and scores, NonMaxSuppression keeps a
  data-dependent number of them, Gathers pick the kept boxes, and TopK keeps the best
  ``K = min(10, count)`` where ``count`` is read from the NMS output's shape: a value port fed by
  data, so the model runs in stages. Its batch-index output is ``ConstantOfShape`` of the kept
  count.

Both were refused by the CPU ("Broadcast needs constant parameters": an Expand/ConstantOfShape
to a shape computed by ``Shape``) before it moved onto core's front half.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import onnx
import opforge
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper
from opforge_onnx.testing.helpers import make_model, run_ort

D, HEADS, FFN, LAYERS = 16, 2, 32, 2


def _init(name: str, value: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(value), name)


def _i64(name: str, values: list[int]) -> onnx.TensorProto:
    return _init(name, np.array(values, np.int64))


def _f32(name: str, value: float | np.ndarray) -> onnx.TensorProto:
    return _init(name, np.asarray(value, np.float32))


def _layer_norm(x: str, out: str, p: str, nodes: list[onnx.NodeProto]) -> None:
    """The decomposed layer norm exporters write (planning passes fuse it where a device wants)."""
    nodes += [
        h.make_node("ReduceMean", [x], [f"{p}/mean"], axes=[-1], keepdims=1),
        h.make_node("Sub", [x, f"{p}/mean"], [f"{p}/d"]),
        h.make_node("Pow", [f"{p}/d", "two"], [f"{p}/sq"]),
        h.make_node("ReduceMean", [f"{p}/sq"], [f"{p}/var"], axes=[-1], keepdims=1),
        h.make_node("Add", [f"{p}/var", "eps"], [f"{p}/ve"]),
        h.make_node("Sqrt", [f"{p}/ve"], [f"{p}/std"]),
        h.make_node("Div", [f"{p}/d", f"{p}/std"], [f"{p}/n"]),
        h.make_node("Mul", [f"{p}/n", f"{p}/g"], [f"{p}/ng"]),
        h.make_node("Add", [f"{p}/ng", f"{p}/b"], [out]),
    ]


def transformer_encoder(seed: int = 0) -> onnx.ModelProto:
    """x [batch, seq, D] f32 and mask [batch, seq] i64 (1 = a token, 0 = padding) -> [batch, seq, D]."""
    rng = np.random.default_rng(seed)
    dh = D // HEADS
    inits = [_i64("i0", [0]), _i64("i1", [1]), _i64("heads_dh", [HEADS, dh]), _i64("d", [D]),
             _i64("one", [1]), _i64("unsq12", [1, 2]), _f32("two", 2.0), _f32("eps", 1e-5),
             _f32("onef", 1.0), _f32("neg", -10000.0), _f32("half", 0.5), _f32("sqrt2", math.sqrt(2.0)),
             _f32("scale", 1 / math.sqrt(dh))]
    nodes = [
        # [batch, seq] from Shape(x): the sizes every shape computation below starts from
        h.make_node("Shape", ["x"], ["x_shape"]),
        h.make_node("Gather", ["x_shape", "i0"], ["batch"], axis=0),
        h.make_node("Gather", ["x_shape", "i1"], ["seq"], axis=0),
        h.make_node("Concat", ["batch", "seq"], ["bs"], axis=0),
        # HF's default mask (torch.ones(input_shape)) combined with the given one
        h.make_node("ConstantOfShape", ["bs"], ["ones"], value=h.make_tensor("v", T.FLOAT, [1], [1.0])),
        h.make_node("Cast", ["mask"], ["mask_f"], to=T.FLOAT),
        h.make_node("Mul", ["ones", "mask_f"], ["keep"]),
        h.make_node("Unsqueeze", ["keep", "unsq12"], ["keep4"]),  # [batch, 1, 1, seq]
        h.make_node("Sub", ["onef", "keep4"], ["drop"]),
        h.make_node("Mul", ["drop", "neg"], ["bias4"]),
        h.make_node("Concat", ["batch", "one", "seq", "seq"], ["bias_shape"], axis=0),
        h.make_node("Expand", ["bias4", "bias_shape"], ["attn_bias"]),  # [batch, 1, seq, seq]
        h.make_node("Concat", ["batch", "seq", "heads_dh"], ["split_shape"], axis=0),
        h.make_node("Concat", ["batch", "seq", "d"], ["merge_shape"], axis=0),
    ]
    x = "x"
    for layer in range(LAYERS):
        p = f"l{layer}"

        def w(name: str, shape: tuple[int, ...], scale: float = 0.3, p: str = p) -> str:
            inits.append(_f32(f"{p}/{name}", rng.standard_normal(shape).astype(np.float32) * scale))
            return f"{p}/{name}"

        for t in ("q", "k", "v"):
            nodes += [
                h.make_node("MatMul", [x, w(f"w{t}", (D, D))], [f"{p}/{t}0"]),
                h.make_node("Add", [f"{p}/{t}0", w(f"b{t}", (D,), 0.1)], [f"{p}/{t}1"]),
                h.make_node("Reshape", [f"{p}/{t}1", "split_shape"], [f"{p}/{t}2"]),
                h.make_node("Transpose", [f"{p}/{t}2"], [f"{p}/{t}"],
                            perm=[0, 2, 3, 1] if t == "k" else [0, 2, 1, 3]),
            ]
        nodes += [
            h.make_node("MatMul", [f"{p}/q", f"{p}/k"], [f"{p}/s0"]),
            h.make_node("Mul", [f"{p}/s0", "scale"], [f"{p}/s1"]),
            h.make_node("Add", [f"{p}/s1", "attn_bias"], [f"{p}/s2"]),
            h.make_node("Softmax", [f"{p}/s2"], [f"{p}/a"], axis=-1),
            h.make_node("MatMul", [f"{p}/a", f"{p}/v"], [f"{p}/c0"]),
            h.make_node("Transpose", [f"{p}/c0"], [f"{p}/c1"], perm=[0, 2, 1, 3]),
            h.make_node("Reshape", [f"{p}/c1", "merge_shape"], [f"{p}/c2"]),
            h.make_node("MatMul", [f"{p}/c2", w("wo", (D, D))], [f"{p}/o0"]),
            h.make_node("Add", [f"{p}/o0", x], [f"{p}/r1"]),
        ]
        w("ln1/g", (D,), 1.0), w("ln1/b", (D,), 0.1)
        _layer_norm(f"{p}/r1", f"{p}/h1", f"{p}/ln1", nodes)
        # FFN with the erf GELU as PyTorch exports it: (x * (1 + erf(x / sqrt 2))) * 0.5
        nodes += [
            h.make_node("MatMul", [f"{p}/h1", w("w1", (D, FFN))], [f"{p}/f0"]),
            h.make_node("Add", [f"{p}/f0", w("b1", (FFN,), 0.1)], [f"{p}/f1"]),
            h.make_node("Div", [f"{p}/f1", "sqrt2"], [f"{p}/g0"]),
            h.make_node("Erf", [f"{p}/g0"], [f"{p}/g1"]),
            h.make_node("Add", [f"{p}/g1", "onef"], [f"{p}/g2"]),
            h.make_node("Mul", [f"{p}/f1", f"{p}/g2"], [f"{p}/g3"]),
            h.make_node("Mul", [f"{p}/g3", "half"], [f"{p}/g4"]),
            h.make_node("MatMul", [f"{p}/g4", w("w2", (FFN, D))], [f"{p}/f2"]),
            h.make_node("Add", [f"{p}/f2", f"{p}/h1"], [f"{p}/r2"]),
        ]
        w("ln2/g", (D,), 1.0), w("ln2/b", (D,), 0.1)
        _layer_norm(f"{p}/r2", f"{p}/out", f"{p}/ln2", nodes)
        x = f"{p}/out"
    nodes.append(h.make_node("Identity", [x], ["y"]))
    return make_model(nodes, [h.make_tensor_value_info("x", T.FLOAT, ["batch", "seq", D]),
                              h.make_tensor_value_info("mask", T.INT64, ["batch", "seq"])],
                      [h.make_tensor_value_info("y", T.FLOAT, ["batch", "seq", D])], inits, name="encoder")


def ssd_detector(classes: int = 3, seed: int = 1) -> onnx.ModelProto:
    """image [1, 3, H, W] -> the best min(10, kept) boxes after NMS, their scores and batch index."""
    rng = np.random.default_rng(seed)
    inits = [
        _f32("conv_w", rng.standard_normal((8, 3, 3, 3)) * 0.4), _f32("conv_b", rng.standard_normal(8) * 0.1),
        _f32("box_w", rng.standard_normal((4, 8, 1, 1)) * 0.5), _f32("score_w", rng.standard_normal((classes, 8, 1, 1)) * 0.3),
        _i64("boxes_shape", [1, 4, -1]), _i64("scores_shape", [1, classes, -1]), _i64("i0", [0]),
        _i64("yx", [0, 1]), _i64("hw", [2, 3]), _f32("size", 0.3), _i64("max_k", [10]),
        _i64("max_per_class", [20]), _f32("iou", 0.5), _f32("score_min", 0.3), _init("box_col", np.array(2, np.int64)),
    ]
    nodes = [
        h.make_node("Conv", ["image", "conv_w", "conv_b"], ["c0"], pads=[1, 1, 1, 1]),
        h.make_node("Relu", ["c0"], ["c1"]),
        # boxes [1, anchors, 4]: a corner in [0, 1) and a size, so y1 < y2 and x1 < x2
        h.make_node("Conv", ["c1", "box_w"], ["b0"]),
        h.make_node("Reshape", ["b0", "boxes_shape"], ["b1"]),
        h.make_node("Transpose", ["b1"], ["b2"], perm=[0, 2, 1]),
        h.make_node("Sigmoid", ["b2"], ["b3"]),
        h.make_node("Gather", ["b3", "yx"], ["corner"], axis=2),
        h.make_node("Gather", ["b3", "hw"], ["extent"], axis=2),
        h.make_node("Mul", ["extent", "size"], ["extent2"]),
        h.make_node("Add", ["corner", "extent2"], ["far"]),
        h.make_node("Concat", ["corner", "far"], ["boxes"], axis=2),
        # scores [1, classes, anchors]
        h.make_node("Conv", ["c1", "score_w"], ["s0"]),
        h.make_node("Reshape", ["s0", "scores_shape"], ["s1"]),
        h.make_node("Sigmoid", ["s1"], ["scores"]),
        h.make_node("NonMaxSuppression", ["boxes", "scores", "max_per_class", "iou", "score_min"], ["selected"]),
        # the kept boxes and their scores
        h.make_node("Gather", ["selected", "box_col"], ["box_idx"], axis=1),  # selected[:, 2]
        h.make_node("Squeeze", ["boxes", "i0"], ["boxes0"]),
        h.make_node("Gather", ["boxes0", "box_idx"], ["kept_boxes"], axis=0),
        h.make_node("GatherND", ["scores", "selected"], ["kept_scores"]),
        # K = min(10, number kept): read from the data-dependent shape
        h.make_node("Shape", ["selected"], ["sel_shape"]),
        h.make_node("Gather", ["sel_shape", "i0"], ["count"], axis=0),
        h.make_node("Min", ["count", "max_k"], ["k"]),
        h.make_node("TopK", ["kept_scores", "k"], ["top_scores", "top_idx"], axis=0),
        h.make_node("Gather", ["kept_boxes", "top_idx"], ["top_boxes"], axis=0),
        # the batch index of each detection, as detection heads export it: zeros of the kept count
        h.make_node("Shape", ["top_scores"], ["top_shape"]),
        h.make_node("ConstantOfShape", ["top_shape"], ["top_batch"], value=h.make_tensor("z", T.INT64, [1], [0])),
    ]
    return make_model(nodes, [h.make_tensor_value_info("image", T.FLOAT, [1, 3, "H", "W"])],
                      [h.make_tensor_value_info("top_scores", T.FLOAT, ["K"]),
                       h.make_tensor_value_info("top_boxes", T.FLOAT, ["K", 4]),
                       h.make_tensor_value_info("top_batch", T.INT64, ["K"])], inits, name="ssd")


def _run(model: onnx.ModelProto, feeds: list[np.ndarray], device: str) -> tuple[opforge.CompiledModel, list[list[np.ndarray]]]:
    converted = opforge.convert_model(model.SerializeToString(), framework="onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # HETERO reports where it placed what
        compiled = opforge.Core().compile_model(converted, device)
    return compiled, [[np.asarray(compiled(f)[k]) for k in range(len(converted.outputs))] for f in feeds]


def _f16(device: str) -> bool:
    return device.startswith("VPU")  # computes in f16


def _tolerance(device: str) -> dict[str, float]:
    return {"rtol": 5e-2, "atol": 5e-2} if _f16(device) else {"rtol": 1e-4, "atol": 1e-5}


def test_transformer_encoder_with_dynamic_batch_and_sequence(device: str) -> None:
    model = transformer_encoder()
    rng = np.random.default_rng(5)
    feeds = []
    for batch, seq in ((1, 5), (2, 7), (3, 16), (2, 7)):
        mask = (rng.random((batch, seq)) > 0.3).astype(np.int64)
        mask[:, 0] = 1  # every sequence has a token
        feeds.append([rng.standard_normal((batch, seq, D)).astype(np.float32), mask])
    _, got = _run(model, feeds, device)
    for feed, outs in zip(feeds, got):
        (want,) = run_ort(model, {"x": feed[0], "mask": feed[1]})
        assert outs[0].shape == want.shape
        np.testing.assert_allclose(outs[0], want, **_tolerance(device))


@pytest.mark.parametrize("size", [(8, 8), (12, 16), (20, 20)])
def test_ssd_detector_with_nms_and_a_data_dependent_top_k(device: str, size: tuple[int, int]) -> None:
    model = ssd_detector()
    rng = np.random.default_rng(size[0] * 100 + size[1])
    feeds = [[rng.standard_normal((1, 3, *size)).astype(np.float32)] for _ in range(2)]
    _, got = _run(model, feeds, device)
    for feed, (scores, boxes, batch) in zip(feeds, got):
        want_scores, want_boxes, want_batch = run_ort(model, {"image": feed[0]})
        np.testing.assert_array_equal(batch, want_batch)
        assert scores.shape == want_scores.shape and boxes.shape == want_boxes.shape
        if _f16(device):
            # f16 scores that differ in the fourth digit may tie or swap: compare as sets of
            # (score, box) rows, each expected row paired with the closest unused one
            got_rows, free = np.column_stack([scores, boxes]), list(range(len(scores)))
            order = []
            for row in np.column_stack([want_scores, want_boxes]):
                best = min(free, key=lambda i: float(np.abs(got_rows[i] - row).max()))
                free.remove(best)
                order.append(best)
            scores, boxes = scores[order], boxes[order]
        np.testing.assert_allclose(scores, want_scores, **_tolerance(device))
        np.testing.assert_allclose(boxes, want_boxes, **_tolerance(device))
