"""The int8 regions of ONNX Runtime's QOperator-format models (QLinearConv, com.microsoft QLinearAdd,
standard ops on the u8 tensors between them), on the CPU against ONNX Runtime.

* A residual Add of a QLinearConv's output (QLinearAdd, or DequantizeLinear -> Add ->
  QuantizeLinear) goes into the convolution as its sum post-op. QLinearConv's integer form leaves
  the convolution's value in its output's steps, not in real units (dst_scale 1, the multiplier in
  the weight scales): the fusion scales it to real units (passes/int8/residual_sum.py). Before
  that fix the sum mixed the units: 186 steps off on this test's block, resnet18's QOperator copy
  0.6-1.4 off in its logits.
* A MaxPool of the u8 bytes (the QOperator format pools QLinearConv's output as it is) runs as
  QuantizedMaxPool in the convolution's channels-last layout (emit.py); with
  OPFORGE_CPU_INT8_MAX_POOL=0 the integer loop over a plain copy. Before, the integer loop read
  the channels-last bytes as nchw (196 steps off).

Tolerance: the residual fusion does not round the convolution's result to its own grid before
the addition (precision.md), so one step, most elements exact; the max pool itself is exact
(the same bytes with the switch on and off).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import opforge
import pytest
from int8_testing import run_child
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh
from opforge.frontend.convert import convert_model

MS = "com.microsoft"


def _model(nodes: list[onnx.NodeProto], shape: list[int], inits: dict[str, np.ndarray]) -> onnx.ModelProto:
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.UINT8, shape)], [h.make_empty_tensor_value_info("y")],
                     [nh.from_array(v, k) for k, v in inits.items()])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17), h.make_opsetid(MS, 1)])
    m.ir_version = 8
    return m


def _conv(rng: np.random.Generator, c: int, bias: bool) -> tuple[onnx.NodeProto, dict[str, np.ndarray]]:
    """A 3x3 QLinearConv u8 -> u8 with per-channel 7-bit s8 weights (within +-64: the CPU runs
    them as they are on hosts without VNNI too, so the comparison holds there) and an i32 bias."""
    w = rng.integers(-64, 65, (c, c, 3, 3)).astype(np.int8)
    inits: dict[str, np.ndarray] = {"xs": np.array(0.0213, np.float32), "xz": np.array(128, np.uint8), "w": w,
             "ws": rng.uniform(5e-4, 2e-3, c).astype(np.float32), "wz": np.zeros(c, np.int8),
             "ys": np.array(0.0517, np.float32), "yz": np.array(100, np.uint8)}
    names = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"]
    if bias:
        inits["b"] = rng.integers(-2000, 2000, c).astype(np.int32)
        names.append("b")
    return h.make_node("QLinearConv", names, ["c"], pads=[1, 1, 1, 1]), inits


def _run_cpu(model: onnx.ModelProto, x: np.ndarray) -> tuple[np.ndarray, set[str]]:
    compiled = opforge.Core().compile_model(convert_model(model.SerializeToString(), framework="onnx"), "CPU",
                                            {"ENABLE_PROFILING": True})
    req = compiled.create_infer_request()
    y = np.asarray(next(iter(req.infer({"x": x}).values())))
    return y, {r.node_type for r in req.get_profiling_info()}


def _ort(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return np.asarray(sess.run(None, {"x": x})[0])


@pytest.mark.parametrize("form", ["qlinear_add", "qdq_add"])
@pytest.mark.parametrize("bias", [True, False])
def test_qlinear_conv_residual_add(form: str, bias: bool) -> None:
    rng = np.random.default_rng(5)
    shape = [1, 32, 14, 14]
    conv, inits = _conv(rng, 32, bias)
    inits |= {"os": np.array(0.0793, np.float32), "oz": np.array(90, np.uint8)}
    if form == "qlinear_add":
        add = [h.make_node("QLinearAdd", ["c", "ys", "yz", "x", "xs", "xz", "os", "oz"], ["y"], domain=MS)]
    else:
        add = [h.make_node("DequantizeLinear", ["c", "ys", "yz"], ["cf"]),
               h.make_node("DequantizeLinear", ["x", "xs", "xz"], ["xf"]),
               h.make_node("Add", ["cf", "xf"], ["s"]), h.make_node("QuantizeLinear", ["s", "os", "oz"], ["y"])]
    model = _model([conv, *add], shape, inits)
    x = rng.integers(0, 256, shape).astype(np.uint8)
    got, kinds = _run_cpu(model, x)
    want = _ort(model, x)
    assert "QuantizedConvolution" in kinds and not kinds & {"QuantizedEltwise", "Add"}, kinds  # the sum is fused
    d = np.abs(got.astype(np.int32) - want)
    print(f"{int((d > 0).sum())} of {d.size} one step from ONNX Runtime")
    assert d.max() <= 1 and (d == 0).mean() >= 0.75


_CHILD = """
import json, sys
import numpy as np, onnx, opforge
from opforge.frontend.convert import convert_model
m = onnx.load(sys.argv[1]); x = np.load(sys.argv[2])
c = opforge.Core().compile_model(convert_model(m.SerializeToString(), framework="onnx"), "CPU", {"ENABLE_PROFILING": True})
r = c.create_infer_request(); y = np.asarray(next(iter(r.infer({"x": x}).values())))
print(json.dumps({"y": y.astype(int).reshape(-1).tolist(), "kinds": sorted({p.node_type for p in r.get_profiling_info()})}))
"""


@pytest.mark.parametrize("pool", [{"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
                                  {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}])
def test_max_pool_of_qlinear_conv_bytes(tmp_path: Path, pool: dict[str, object]) -> None:
    rng = np.random.default_rng(6)
    shape = [1, 64, 15, 15]
    conv, inits = _conv(rng, 64, True)
    model = _model([conv, h.make_node("MaxPool", ["c"], ["y"], **pool)], shape, inits)  # type: ignore[arg-type]
    x = rng.integers(0, 256, shape).astype(np.uint8)
    want = _ort(model, x)
    onnx.save(model, tmp_path / "m.onnx")
    np.save(tmp_path / "x.npy", x)
    runs = {}
    for switch in ("1", "0"):
        res = run_child(_CHILD, [str(tmp_path / "m.onnx"), str(tmp_path / "x.npy")], None,
                        {"OPFORGE_CPU_INT8_MAX_POOL": switch})
        runs[switch] = np.asarray(res["y"]).reshape(want.shape)
        expected = "QuantizedMaxPool" if switch == "1" else "MaxPool"
        assert expected in res["kinds"], res["kinds"]
    np.testing.assert_array_equal(runs["1"], runs["0"])  # the pool is exact either way
    d = np.abs(runs["1"] - want.astype(np.int64))
    print(f"{int((d > 0).sum())} of {d.size} one step from ONNX Runtime (the convolution's requantization)")
    assert d.max() <= 1 and (d == 0).mean() >= 0.99
