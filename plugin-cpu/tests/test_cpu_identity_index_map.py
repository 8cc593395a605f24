"""A data-movement op that moves nothing (a Pad by zeros, a Slice of the whole tensor, as
torchvision's Swin pads each stage to a window multiple and slices back) is lowered to a copy
the planner may alias, not an IndexMap gather over every element (97 of them, 7 ms of
tv_swin_t's 38 at 1 thread). Values against ONNX Runtime, with the input and the no-op's output
both read afterwards (an alias must not let one clobber the other), and real pads/slices still
gathered."""

from __future__ import annotations

from typing import Any

import numpy as np
import opforge
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
helper, numpy_helper, TP = onnx.helper, onnx.numpy_helper, onnx.TensorProto

SHAPE = [1, 6, 8, 5]


def pad_slice_model(pad: int) -> bytes:
    def i64(name: str, v: Any) -> Any:
        return numpy_helper.from_array(np.asarray(v, np.int64), name)

    inits = [i64("pads", [0, 0, 0, 0, 0, 0, pad, pad]), i64("starts", [0, 0]), i64("ends", [8, 5]),
             i64("axes", [2, 3])]
    nodes = [helper.make_node("Pad", ["x", "pads"], ["p"], mode="constant"),
             helper.make_node("Relu", ["p"], ["r"]),
             helper.make_node("Slice", ["r", "starts", "ends", "axes"], ["s"]),
             helper.make_node("Add", ["s", "x"], ["y"]),      # x is read again after the Pad
             helper.make_node("Neg", ["s"], ["z"])]           # and the Slice's output twice
    graph = helper.make_graph(nodes, "pad_slice", [helper.make_tensor_value_info("x", TP.FLOAT, SHAPE)],
                              [helper.make_tensor_value_info(n, TP.FLOAT, None) for n in ("y", "z")], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


@pytest.mark.parametrize("pad,gathers", [(0, 0), (2, 2)])
@pytest.mark.parametrize("precision", ["f32", "bf16"])
def test_no_op_pad_and_slice_are_copies(pad: int, gathers: int, precision: str) -> None:
    data = pad_slice_model(pad)
    x = np.random.default_rng(4).standard_normal(SHAPE).astype(np.float32)
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    core = opforge.Core()
    compiled = core.compile_model(core.read_model(data), "CPU", {"INFERENCE_PRECISION_HINT": precision,
                                                                 "ENABLE_PROFILING": True})
    req = compiled.create_infer_request()
    for _ in range(2):
        got = req.infer({"x": x})
        for i, w in enumerate(want):
            np.testing.assert_array_equal(np.asarray(got[i]), w)  # data movement and Relu/Add/Neg: exact
    ran = [r.node_type for r in req.get_profiling_info() if r.status == "EXECUTED"]
    assert ran.count("IndexMap") == gathers, ran


def test_index_map_copies_runs_and_gathers_the_rest() -> None:
    """A map of whole runs of consecutive elements (a Slice of the last axis, GPT-NeoX's partial
    rotary; a Pad of the last axis, padding runs included) is copied run by run
    (``index_map:runs``); a strided Slice keeps the element-wise gather. Exact vs ONNX Runtime."""
    def i64(name: str, v: Any) -> Any:
        return numpy_helper.from_array(np.asarray(v, np.int64), name)

    shape = [2, 3, 5, 32]
    inits = [i64("s0", [8]), i64("e0", [24]), i64("ax", [3]), i64("st", [2]),
             i64("pads", [0, 0, 0, 8, 0, 0, 0, 8]), numpy_helper.from_array(np.array(1.5, np.float32), "fill")]
    nodes = [helper.make_node("Slice", ["x", "s0", "e0", "ax"], ["a"]),                # runs of 16
             helper.make_node("Pad", ["x", "pads", "fill"], ["b"], mode="constant"),   # runs of 8, fill runs
             helper.make_node("Slice", ["x", "s0", "e0", "ax", "st"], ["c"])]          # every other: gathers
    graph = helper.make_graph(nodes, "runs", [helper.make_tensor_value_info("x", TP.FLOAT, shape)],
                              [helper.make_tensor_value_info(n, TP.FLOAT, None) for n in "abc"], inits)
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    x = np.random.default_rng(8).standard_normal(shape).astype(np.float32)
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    core = opforge.Core()
    for threads in (1, 2):
        compiled = core.compile_model(core.read_model(data), "CPU", {"INFERENCE_NUM_THREADS": threads,
                                                                     "ENABLE_PROFILING": True})
        req = compiled.create_infer_request()
        got = req.infer({"x": x})
        for i, w in enumerate(want):
            np.testing.assert_array_equal(np.asarray(got[i]), w)
        impls = sorted(r.exec_type for r in req.get_profiling_info() if r.node_type == "IndexMap")
        assert impls == ["index_map", "index_map:runs", "index_map:runs"], impls
