"""ONNX Runtime's com.microsoft DynamicQuantizeLSTM (what ``quantize_dynamic`` writes for an LSTM),
on the reference device, the CPU and the GPU where present.

opforge dequantizes the weights and runs the standard LSTM
(:mod:`opforge_onnx.ops.dynamic_quantize_lstm`), so each case is checked twice:

* against ONNX Runtime running ONNX's LSTM on the same dequantized weights (what the translation
  means): within 1e-5 of the output's largest value;
* against ONNX Runtime's own DynamicQuantizeLSTM, which also rounds X and h to u8 at each step:
  cosine >= 0.9999 and the largest difference within 2 % of the output's largest value (these
  seeded cases measure 0.36-1.05 %, cosine >= 0.99996; bilstm_text, 0.12 %: 8.3e-5 of 0.069,
  cosine 0.999999).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import opforge
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh
from opforge.errors import OpforgeError
from opforge.frontend.convert import convert_model
from opforge_onnx.backend import REFERENCE, OpforgeBackend
from opforge_onnx.testing.helpers import run_ort

MS = "com.microsoft"
DEVICES = [REFERENCE] + [d for d in ("CPU", "GPU") if d in {a.split(".")[0] for a in opforge.Core().available_devices}]
SEQ, BATCH, INPUT, HIDDEN = 6, 3, 10, 8


def _case(direction: str = "forward", dtype: Any = np.int8, per_column: bool = False, zero_point: int = 0,
          states: bool = False, lengths: bool = False, peephole: bool = False, bias: bool = True,
          seed: int = 26) -> tuple[dict[str, np.ndarray], list[str], dict[str, Any]]:
    """Initializers, the node's input names and its attributes for one seeded case."""
    rng = np.random.default_rng(seed)
    nd = 2 if direction == "bidirectional" else 1
    info = np.iinfo(dtype)
    cols = 4 * HIDDEN
    shape = (nd, cols) if per_column else (nd,)

    def weights(rows: int) -> np.ndarray:
        return rng.integers(info.min + (dtype == np.int8), int(info.max) + 1, (nd, rows, cols)).astype(dtype)

    inits: dict[str, np.ndarray] = {
        "W": weights(INPUT), "R": weights(HIDDEN),
        # scales so that the dequantized weights have magnitude ~0.3-0.6 (127 * 0.004)
        "ws": (0.003 + 0.002 * rng.random(shape)).astype(np.float32),
        "wz": np.full(shape, zero_point, dtype), "rs": (0.002 + 0.002 * rng.random(shape)).astype(np.float32),
        "rz": np.full(shape, zero_point, dtype),
    }
    names = ["X", "W", "R", "", "", "", "", "", "ws", "wz", "rs", "rz"]
    if bias:
        inits["B"] = (0.1 * rng.standard_normal((nd, 8 * HIDDEN))).astype(np.float32)
        names[3] = "B"
    if lengths:
        inits["L"] = np.array([SEQ, 2, 4][:BATCH], np.int32)
        names[4] = "L"
    if states:
        inits["h0"] = (0.5 * rng.standard_normal((nd, BATCH, HIDDEN))).astype(np.float32)
        inits["c0"] = (0.5 * rng.standard_normal((nd, BATCH, HIDDEN))).astype(np.float32)
        names[5:7] = ["h0", "c0"]
    if peephole:
        inits["P"] = (0.2 * rng.standard_normal((nd, 3 * HIDDEN))).astype(np.float32)
        names[7] = "P"
    return inits, names, {"hidden_size": HIDDEN, "direction": direction}


def _model(inits: dict[str, np.ndarray], names: list[str], attrs: dict[str, Any], op: str = "DynamicQuantizeLSTM",
           name: str = "my_lstm") -> onnx.ModelProto:
    node = h.make_node(op, names, ["Y", "Y_h", "Y_c"], domain=MS if op == "DynamicQuantizeLSTM" else "", name=name,
                       **attrs)
    graph = h.make_graph([node], "g", [h.make_tensor_value_info("X", T.FLOAT, [SEQ, BATCH, INPUT])],
                         [h.make_tensor_value_info(o, T.FLOAT, None) for o in ("Y", "Y_h", "Y_c")],
                         [nh.from_array(v, k) for k, v in inits.items()])
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17), h.make_opsetid(MS, 1)])


def _dequantized_lstm(inits: dict[str, np.ndarray], names: list[str], attrs: dict[str, Any]) -> onnx.ModelProto:
    """The same node as ONNX's LSTM over the dequantized, transposed weights (NumPy)."""
    def deq(q: str, s: str, z: str) -> np.ndarray:
        scale, zp = inits[s], inits[z].astype(np.float32)
        nd = scale.shape[0]
        v = (inits[q].astype(np.float32) - zp.reshape(nd, 1, -1)) * scale.reshape(nd, 1, -1)
        return np.ascontiguousarray(v.transpose(0, 2, 1)).astype(np.float32)

    lstm_inits = {k: v for k, v in inits.items() if k not in ("W", "R", "ws", "wz", "rs", "rz")}
    lstm_inits["W"] = deq("W", "ws", "wz")
    lstm_inits["R"] = deq("R", "rs", "rz")
    return _model(lstm_inits, names[:8], attrs, op="LSTM")


def _run(model: onnx.ModelProto, x: np.ndarray, device: str) -> list[np.ndarray]:
    if device == "CPU":
        compiled = opforge.Core().compile_model(convert_model(model.SerializeToString(), framework="onnx"), "CPU",
                                                {"INFERENCE_PRECISION_HINT": "f32"})
        return [np.asarray(v) for v in compiled.create_infer_request().infer({"X": x}).values()]
    return list(OpforgeBackend.prepare(model, device).run([x]))


CASES: list[dict[str, Any]] = [
    {},
    {"direction": "reverse"},
    {"direction": "bidirectional"},
    {"dtype": np.uint8, "zero_point": 128},
    {"zero_point": 3},
    {"per_column": True},
    {"direction": "bidirectional", "dtype": np.uint8, "zero_point": 120, "per_column": True, "states": True},
    {"lengths": True, "direction": "bidirectional"},
    {"bias": False, "states": True},
    {"peephole": True},
    {"peephole": True, "direction": "bidirectional", "lengths": True},
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(f"{k}={getattr(v, '__name__', v)}" for k, v in c.items()) or "plain")
def test_matches_onnxruntime(device: str, case: dict[str, Any]) -> None:
    inits, names, attrs = _case(**case)
    x = np.random.default_rng(7).standard_normal((SEQ, BATCH, INPUT)).astype(np.float32)
    model = _model(inits, names, attrs)
    got = _run(model, x, device)
    exact = run_ort(_dequantized_lstm(inits, names, attrs), {"X": x})
    dynamic = run_ort(model, {"X": x})
    for g, e, d in zip(got, exact, dynamic, strict=True):
        assert g.shape == e.shape == d.shape, (g.shape, e.shape, d.shape)
        top = float(np.abs(e).max())
        np.testing.assert_allclose(g, e, rtol=0, atol=1e-5 * top)
        diff = float(np.abs(g - d).max())
        cos = float(np.dot(g.ravel(), d.ravel()) / (np.linalg.norm(g) * np.linalg.norm(d)))
        print(f"{device} {case}: vs ONNX Runtime's DynamicQuantizeLSTM max {diff:.3g} of {top:.3g}, cosine {cos:.7f}")
        assert diff <= 0.02 * top
        assert cos >= 0.9999


def _refused(inits: dict[str, np.ndarray], names: list[str], attrs: dict[str, Any], match: str) -> None:
    with pytest.raises(OpforgeError, match=f"my_lstm.*{match}"):
        convert_model(_model(inits, names, attrs).SerializeToString(), framework="onnx")


def test_bad_weights_name_the_node() -> None:
    inits, names, attrs = _case()
    bad = dict(inits, W=inits["W"].transpose(0, 2, 1).copy())  # LSTM's layout, not this op's
    _refused(bad, names, attrs, r"input 1 \(W\) has shape \[1, 32, 10\]; expected .* \[1, 10, 32\]")
    bad = dict(inits, R=inits["R"].astype(np.uint8), rz=inits["rz"].astype(np.uint8))
    _refused(bad, names, attrs, r"input 2 \(R\) is uint8; expected int8, W's type")
    bad = dict(inits, W=inits["W"].astype(np.int32))
    _refused(bad, names, attrs, r"input 1 \(W\) is int32; expected u8 or i8")
    _refused(inits, names, dict(attrs, direction="bidirectional"), r"input 1 \(W\) has shape \[1, 10, 32\]")


def test_bad_scales_and_zero_points_name_the_node() -> None:
    inits, names, attrs = _case()
    _refused(dict(inits, ws=np.full(5, 0.01, np.float32)), names, attrs,
             r"input 8 \(W_scale\) has shape \[5\]; expected \[1\] \(per direction\) or \[1, 32\]")
    _refused(dict(inits, rs=inits["rs"].astype(np.float16)), names, attrs, r"input 10 \(R_scale\) is float16")
    _refused(dict(inits, wz=inits["wz"].astype(np.uint8)), names, attrs,
             r"input 9 \(W_zero_point\) is uint8; expected int8")
    _refused(dict(inits, rz=np.zeros((1, 32), np.int8)), names, attrs,
             r"input 11 \(R_zero_point\) has shape \[1, 32\]; expected \[1\], its scale's shape")
    without = [n if n != "rz" else "" for n in names]
    _refused({k: v for k, v in inits.items() if k != "rz"}, without, attrs, r"input 11 \(R_zero_point\) is missing")
