"""ONNX Runtime's com.microsoft quantized ops (QOperator-format models: QLinearAdd, QLinearMul,
QLinearGlobalAveragePool, QLinearAveragePool, QLinearConcat, QLinearSigmoid, QLinearLeakyRelu,
QLinearSoftmax, QLinearReduceMean, QLinearWhere, QGemm), compared with ONNX Runtime, which
implements them, on the reference device, the CPU and the GPU.

Tolerance: one quantization step per element (ONNX Runtime's kernels compute some of these ops
in another order than the dequantize -> float op -> quantize definition opforge converts them
to: QLinearAdd/Mul through scale ratios, the pools through integer sums, so a value within
rounding of a .5 tie may land on the neighbour), and at least 95 % of the elements exact (each
test prints how many differ). A float output (QGemm without y_scale) within 1e-5 relative. On the
CPU each op must also run as the int8 kernel its QDQ form runs as (the profile's node types).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
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
from opforge_onnx.testing.helpers import make_model, run_ort

MS = "com.microsoft"
#: the reference device and the CPU and GPU where present (the VPU computes in f16: not an
#: int8-exact device for these f32 decompositions)
DEVICES = [REFERENCE] + [d for d in ("CPU", "GPU") if d in {a.split(".")[0] for a in opforge.Core().available_devices}]


def _rng() -> np.random.Generator:
    return np.random.default_rng(25)


def _q(rng: np.random.Generator, shape: Sequence[int], dtype: Any) -> np.ndarray:
    info = np.iinfo(dtype)
    return rng.integers(info.min, int(info.max) + 1, tuple(shape)).astype(dtype)


def _model(nodes: list[onnx.NodeProto], feeds: dict[str, np.ndarray], inits: dict[str, Any]) -> onnx.ModelProto:
    ins = [h.make_tensor_value_info(k, onnx.helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape)) for k, v in feeds.items()]
    outs = [h.make_empty_tensor_value_info(nodes[-1].output[0])]
    m = make_model(nodes, ins, [], [nh.from_array(np.asarray(v), k) for k, v in inits.items()], opset=17,
                   domains={MS: 1})
    m.graph.output.extend(outs)  # (ONNX's shape inference does not know the contrib ops: no type)
    return m


def _run_cpu(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> tuple[list[np.ndarray], list[tuple[str, str]]]:
    """The CPU's outputs (f32 arithmetic where anything is float, as ONNX Runtime's) and its
    profile's (node type, exec type) rows."""
    compiled = opforge.Core().compile_model(convert_model(model.SerializeToString(), framework="onnx"), "CPU",
                                            {"ENABLE_PROFILING": True, "INFERENCE_PRECISION_HINT": "f32"})
    req = compiled.create_infer_request()
    res = req.infer(dict(feeds))
    outs = [np.asarray(v) for v in res.values()]
    return outs, [(r.node_type, r.exec_type) for r in req.get_profiling_info()]


def _check(model: onnx.ModelProto, feeds: dict[str, np.ndarray], device: str, int8_nodes: Sequence[str] = (),
           exact_share: float = 0.95, oracle: onnx.ModelProto | None = None) -> None:
    """``model`` on ``device`` against ONNX Runtime's run of ``oracle`` (``model`` itself unless
    given)."""
    want = run_ort(oracle if oracle is not None else model, feeds)[0]
    if device == "CPU":
        outs, rows = _run_cpu(model, feeds)
        got = outs[0]
        types = {t for t, _ in rows}
        for n in int8_nodes:
            assert n in types, f"{n} not in the CPU's profile: {sorted(rows)}"
    else:
        got = OpforgeBackend.prepare(model, device).run([feeds[i.name] for i in model.graph.input])[0]
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    if want.dtype == np.float32:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))
        return
    d = np.abs(got.astype(np.int32) - want.astype(np.int32))
    print(f"{device}: {int((d > 0).sum())} of {d.size} elements one step from ONNX Runtime")
    assert d.max(initial=0) <= 1
    assert (d == 0).mean() >= exact_share


def _scales(dtype: Any, *scales: float) -> list[np.ndarray]:
    """Per-tensor scale/zero-point pairs: u8 zero points near the middle, s8 near 0. The scales
    are moved off round values (0.05 -> 0.0507) so that few results land exactly on a .5 tie,
    where the engines' orders of rounding may pick either neighbour."""
    zps = [128, 120, 131, 100] if dtype == np.uint8 else [-3, 5, 0, 9]
    out: list[np.ndarray] = []
    for k, s in enumerate(scales):
        out += [np.array(s * (1 + 0.0137 * (k + 1)), np.float32), np.array(zps[k % 4], dtype)]
    return out


# --- element-wise binary -------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize(("a_shape", "b_shape"), [((2, 8, 6, 6), (2, 8, 6, 6)), ((2, 8, 6, 6), (1, 8, 1, 1)),
                                                    ((3, 5), (5,)), ((4, 6), ())])
def test_binary_matches_onnxruntime(device: str, op: str, dtype: Any, a_shape: tuple[int, ...],
                                    b_shape: tuple[int, ...]) -> None:
    rng = _rng()
    a, b = _q(rng, a_shape, dtype), _q(rng, b_shape, dtype)
    sa, za, sb, zb, sc, zc = _scales(dtype, 0.05, 0.03, 0.07 if op == "QLinearAdd" else 0.4)
    node = h.make_node(op, ["a", "sa", "za", "b", "sb", "zb", "sc", "zc"], ["y"], domain=MS)
    model = _model([node], {"a": a, "b": b}, {"sa": sa, "za": za, "sb": sb, "zb": zb, "sc": sc, "zc": zc})
    # (two run-time operands of one grid each: the CPU's int8 element-wise kernel)
    _check(model, {"a": a, "b": b}, device, ["QuantizedEltwise"])


@pytest.mark.parametrize("device", DEVICES)
def test_binary_zero_points_absent_or_shaped_one(device: str) -> None:
    """Zero points omitted (0: s8 symmetric; A's in the middle, C's at the end), and scales /
    zero points given as [1] tensors instead of scalars. ONNX Runtime refuses both an empty
    input in the middle and [1] tensors: its answer for the model with scalars and an explicit
    0 is the oracle."""
    rng = _rng()
    a, b = _q(rng, (2, 4, 5, 5), np.int8), _q(rng, (2, 4, 5, 5), np.int8)
    node = h.make_node("QLinearAdd", ["a", "sa", "", "b", "sb", "zb", "sc"], ["y"], domain=MS)
    inits: dict[str, np.ndarray] = {"sa": np.array(0.0513, np.float32), "sb": np.array(0.0207, np.float32), "zb": np.array(3, np.int8),
             "sc": np.array(0.0611, np.float32)}
    shaped = {k: v.reshape(1) if k != "sc" else v for k, v in inits.items()}
    feeds = {"a": a, "b": b}
    explicit = h.make_node("QLinearAdd", ["a", "sa", "za", "b", "sb", "zb", "sc"], ["y"], domain=MS)
    _check(_model([node], feeds, shaped), feeds, device, ["QuantizedEltwise"],
           oracle=_model([explicit], feeds, inits | {"za": np.array(0, np.int8)}))


@pytest.mark.parametrize("device", DEVICES)
def test_binary_constant_operand(device: str) -> None:
    """A constant operand (a per-channel u8 tensor, as a quantized bias-like Add has)."""
    rng = _rng()
    a = _q(rng, (1, 6, 7, 7), np.uint8)
    c = _q(rng, (1, 6, 1, 1), np.uint8)
    sa, za, sb, zb, sc, zc = _scales(np.uint8, 0.02, 0.01, 0.025)
    node = h.make_node("QLinearMul", ["a", "sa", "za", "c", "sb", "zb", "sc", "zc"], ["y"], domain=MS)
    _check(_model([node], {"a": a}, {"sa": sa, "za": za, "c": c, "sb": sb, "zb": zb, "sc": sc, "zc": zc}),
           {"a": a}, device)


# --- pools and reductions ------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("channels_last", [0, 1])
def test_global_average_pool(device: str, dtype: Any, channels_last: int) -> None:
    rng = _rng()
    x = _q(rng, (2, 7, 7, 16) if channels_last else (2, 16, 7, 7), dtype)
    sx, zx, sy, zy = _scales(dtype, 0.04, 0.01)
    node = h.make_node("QLinearGlobalAveragePool", ["x", "sx", "zx", "sy", "zy"], ["y"], domain=MS,
                       channels_last=channels_last)
    _check(_model([node], {"x": x}, {"sx": sx, "zx": zx, "sy": sy, "zy": zy}), {"x": x}, device, ["QuantizedAvgPool"])


@pytest.mark.parametrize("device", DEVICES)
def test_global_average_pool_1d(device: str) -> None:
    rng = _rng()
    x = _q(rng, (2, 8, 9), np.uint8)
    sx, zx, sy, zy = _scales(np.uint8, 0.04, 0.01)
    node = h.make_node("QLinearGlobalAveragePool", ["x", "sx", "zx", "sy", "zy"], ["y"], domain=MS)
    _check(_model([node], {"x": x}, {"sx": sx, "zx": zx, "sy": sy, "zy": zy}), {"x": x}, device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("attrs", "channels_last"), [
    ({"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, 0),
    ({"kernel_shape": [3, 3], "strides": [1, 1], "pads": [1, 1, 1, 1], "count_include_pad": 1}, 0),
    ({"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}, 0),
    ({"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, 1),
])
def test_average_pool(device: str, attrs: dict[str, Any], channels_last: int) -> None:
    rng = _rng()
    x = _q(rng, (1, 9, 9, 8) if channels_last else (1, 8, 9, 9), np.uint8)
    sx, zx, sy, zy = _scales(np.uint8, 0.03, 0.02)
    node = h.make_node("QLinearAveragePool", ["x", "sx", "zx", "sy", "zy"], ["y"], domain=MS,
                       channels_last=channels_last, **attrs)
    _check(_model([node], {"x": x}, {"sx": sx, "zx": zx, "sy": sy, "zy": zy}), {"x": x}, device, ["QuantizedAvgPool"])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("axes", "keepdims", "int8_node"), [([2, 3], 1, "QuantizedAvgPool"), ([1], 0, None),
                                                             ([-1], 1, None)])
def test_reduce_mean(device: str, axes: list[int], keepdims: int, int8_node: str | None) -> None:
    """ONNX Runtime 1.32's CPU provider has no QLinearReduceMean kernel: the oracle is its run of
    the op's definition, DequantizeLinear -> ReduceMean -> QuantizeLinear."""
    rng = _rng()
    x = _q(rng, (2, 6, 5, 5), np.int8)
    sx, zx, sy, zy = _scales(np.int8, 0.05, 0.02)
    inits = {"sx": sx, "zx": zx, "sy": sy, "zy": zy}
    node = h.make_node("QLinearReduceMean", ["x", "sx", "zx", "sy", "zy"], ["y"], domain=MS, axes=axes,
                       keepdims=keepdims)
    qdq = [h.make_node("DequantizeLinear", ["x", "sx", "zx"], ["xf"]),
           h.make_node("ReduceMean", ["xf"], ["m"], axes=axes, keepdims=keepdims),
           h.make_node("QuantizeLinear", ["m", "sy", "zy"], ["y"])]
    _check(_model([node], {"x": x}, inits), {"x": x}, device, [int8_node] if int8_node else [],
           oracle=_model(qdq, {"x": x}, inits))


# --- concatenation -------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_concat(device: str, dtype: Any) -> None:
    rng = _rng()
    xs = [_q(rng, (1, c, 5, 5), dtype) for c in (3, 4, 2)]
    p = _scales(dtype, 0.05, 0.02, 0.04, 0.05)  # the last input is on Y's grid (copied)
    names = ["sy", "zy", "x0", "s0", "z0", "x1", "s1", "z1", "x2", "s2", "z2"]
    node = h.make_node("QLinearConcat", names, ["y"], domain=MS, axis=1)
    inits = {"sy": p[0], "zy": p[1], "s0": p[2], "z0": p[3], "s1": p[4], "z1": p[5], "s2": p[0], "z2": p[1]}
    feeds = {f"x{k}": x for k, x in enumerate(xs)}
    _check(_model([node], feeds, inits), feeds, device, ["QuantizedConcat"])


# --- unary ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize(("op", "attrs", "int8_node"), [("QLinearSigmoid", {}, "QuantizedLookup"),
                                                         ("QLinearLeakyRelu", {"alpha": 0.1}, None),
                                                         ("QLinearLeakyRelu", {}, None)])
def test_unary(device: str, dtype: Any, op: str, attrs: dict[str, Any], int8_node: str | None) -> None:
    rng = _rng()
    x = np.arange(256).astype(np.uint8).view(dtype).reshape(1, 4, 8, 8)  # every byte
    sx, zx, sy, zy = _scales(dtype, 0.06, 0.004 if op == "QLinearSigmoid" else 0.05)
    node = h.make_node(op, ["x", "sx", "zx", "sy", "zy"], ["y"], domain=MS, **attrs)
    _check(_model([node], {"x": x}, {"sx": sx, "zx": zx, "sy": sy, "zy": zy}), {"x": x}, device,
           [int8_node] if int8_node else [])
    del rng


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("opset", "axis", "shape"), [(13, -1, (2, 3, 10)), (13, 1, (2, 6, 4)), (12, 1, (2, 3, 4))])
def test_softmax(device: str, opset: int, axis: int, shape: tuple[int, ...]) -> None:
    rng = _rng()
    x = _q(rng, shape, np.uint8)
    node = h.make_node("QLinearSoftmax", ["x", "sx", "zx", "sy", "zy"], ["y"], domain=MS, axis=axis, opset=opset)
    inits = {"sx": np.array(0.05, np.float32), "zx": np.array(128, np.uint8), "sy": np.array(1 / 256, np.float32),
             "zy": np.array(0, np.uint8)}
    _check(_model([node], {"x": x}, inits), {"x": x}, device)


# --- where ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
def test_where(device: str) -> None:
    rng = _rng()
    cond = rng.integers(0, 2, (1, 5)).astype(bool)
    x, y = _q(rng, (3, 5), np.uint8), _q(rng, (3, 1), np.uint8)
    sx, zx, sy, zy, sz, zz = _scales(np.uint8, 0.05, 0.03, 0.04)
    node = h.make_node("QLinearWhere", ["c", "x", "sx", "zx", "y", "sy", "zy", "sz", "zz"], ["z"], domain=MS)
    feeds = {"c": cond, "x": x, "y": y}
    _check(_model([node], feeds, {"sx": sx, "zx": zx, "sy": sy, "zy": zy, "sz": sz, "zz": zz}), feeds, device)


# --- QGemm ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("trans_b", "per_column", "with_c", "alpha", "out"), [
    (0, True, True, 1.0, "u8"),     # what quantize_static writes for a classifier (Gemm -> QGemm)
    (1, True, True, 1.0, "u8"),
    (0, False, False, 1.0, "s8"),
    (1, True, True, 0.5, "u8"),
    (0, True, True, 1.0, "f32"),    # no y_scale: float output
    (1, False, False, 2.0, "f32"),
])
def test_qgemm(device: str, trans_b: int, per_column: bool, with_c: bool, alpha: float, out: str) -> None:
    """Symmetric s8 weights as ONNX Runtime's quantizer writes them with ``reduce_range``: the
    largest |q| of each column is 64 (7-bit weights, which the CPU runs as they are on hosts
    without VNNI too, where it rounds full-range weights to 7 bits: precision.md). (ONNX Runtime
    runs QGemm with an s8 output only for an s8 A.)"""
    rng = _rng()
    m, k, n = 3, 40, 12
    atype = np.int8 if out == "s8" else np.uint8
    a = _q(rng, (m, k), atype)
    bt = rng.integers(-64, 65, (k, n)).astype(np.int8)
    bt[rng.integers(0, k, n), np.arange(n)] = rng.choice(np.array([-64, 64], np.int8), n)
    b = np.ascontiguousarray(bt.T) if trans_b else bt
    inits: dict[str, np.ndarray] = {"sa": np.array(0.02, np.float32), "za": np.array(120 if out != "s8" else -4, atype),
                                    "b": b,
                                    "sb": (rng.uniform(0.002, 0.01, n) if per_column else np.array(0.004)).astype(np.float32),
                                    "zb": np.zeros(n if per_column else (), np.int8)}
    names = ["a", "sa", "za", "b", "sb", "zb"]
    if with_c:
        inits["c"] = rng.integers(-3000, 3000, n).astype(np.int32)
    names.append("c" if with_c else "")
    if out != "f32":
        inits["sy"] = np.array(0.15, np.float32)
        inits["zy"] = np.array(128 if out == "u8" else 3, atype)
        names += ["sy", "zy"]
    while names[-1] == "":
        names.pop()
    node = h.make_node("QGemm", names, ["y"], domain=MS, transB=trans_b, alpha=alpha)
    _check(_model([node], {"a": a}, inits), {"a": a}, device, ["QuantizedMatMul"])


# --- bad input -----------------------------------------------------------------------------------
def _convert(model: onnx.ModelProto) -> None:
    convert_model(model.SerializeToString(), framework="onnx")


def test_missing_scale_names_the_node() -> None:
    a = np.zeros((2, 3), np.uint8)
    node = h.make_node("QLinearAdd", ["a", "", "za", "a", "sa", "za", "sa", "za"], ["y"], domain=MS, name="my_add")
    model = _model([node], {"a": a}, {"sa": np.array(0.1, np.float32), "za": np.array(1, np.uint8)})
    with pytest.raises(OpforgeError, match=r"my_add.*input 1 \(A_scale\) is missing"):
        _convert(model)


@pytest.mark.parametrize(("zp", "why"), [(np.array(1, np.int8), "is int8; expected uint8"),
                                         (np.array(1, np.int32), "is int32; expected uint8"),
                                         (np.array([1, 2], np.uint8), "must be one value")])
def test_bad_zero_point_names_the_node(zp: np.ndarray, why: str) -> None:
    x = np.zeros((1, 2, 3, 3), np.uint8)
    node = h.make_node("QLinearGlobalAveragePool", ["x", "s", "z", "s", "zok"], ["y"], domain=MS, name="my_gap")
    model = _model([node], {"x": x}, {"s": np.array(0.1, np.float32), "z": zp, "zok": np.array(0, np.uint8)})
    with pytest.raises(OpforgeError, match=f"my_gap.*x_zero_point.*{why}"):
        _convert(model)


def test_qgemm_bad_inputs_name_the_node() -> None:
    a = np.zeros((2, 4), np.uint8)
    inits = {"sa": np.array(0.1, np.float32), "za": np.array(1, np.uint8), "b": np.ones((4, 3), np.int8),
             "sb": np.array([0.1, 0.2], np.float32), "zb": np.zeros((), np.int8)}
    node = h.make_node("QGemm", ["a", "sa", "za", "b", "sb", "zb"], ["y"], domain=MS, name="my_gemm")
    with pytest.raises(OpforgeError, match=r"my_gemm.*b_scale.*one per column of B \(3\)"):
        _convert(_model([node], {"a": a}, inits))
    inits["sb"] = np.array(0.1, np.float32)
    inits["c"] = np.zeros(3, np.float32)
    node = h.make_node("QGemm", ["a", "sa", "za", "b", "sb", "zb", "c"], ["y"], domain=MS, name="my_gemm")
    with pytest.raises(OpforgeError, match=r"my_gemm.*C\) is float32"):
        _convert(_model([node], {"a": a}, inits))
    inits["c"] = np.zeros(3, np.int32)
    inits["sy"] = np.array(0.1, np.float32)
    node = h.make_node("QGemm", ["a", "sa", "za", "b", "sb", "zb", "c", "sy"], ["y"], domain=MS, name="my_gemm")
    with pytest.raises(OpforgeError, match=r"my_gemm.*y_scale and y_zero_point come together"):
        _convert(_model([node], {"a": a}, inits))


def test_softmax_without_opset_attribute_names_the_node() -> None:
    x = np.zeros((2, 3), np.uint8)
    node = h.make_node("QLinearSoftmax", ["x", "s", "z", "s", "z"], ["y"], domain=MS, name="my_softmax")
    with pytest.raises(OpforgeError, match=r"my_softmax.*'opset'"):
        _convert(_model([node], {"x": x}, {"s": np.array(0.1, np.float32), "z": np.array(0, np.uint8)}))


# --- whole models: quantize_static(..., QOperator) of a small CNN ----------------------------------
def _small_cnn(path: Path) -> Path:
    """Conv/Relu/MaxPool, a residual Add, a squeeze-excitation-like Sigmoid * x, LeakyRelu,
    AveragePool, Concat, GlobalAveragePool, Flatten, Gemm (seeded weights)."""
    rng = np.random.default_rng(3)

    def w(*s: int, scale: float = 0.2) -> np.ndarray:
        return (rng.standard_normal(s) * scale).astype(np.float32)

    inits = {"w1": w(8, 3, 3, 3), "b1": w(8), "w2": w(8, 8, 3, 3, scale=0.1), "b2": w(8), "w3": w(8, 8, 1, 1),
             "b3": w(8), "wf": w(16, 10), "bf": w(10)}
    nodes = [
        h.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]), h.make_node("Relu", ["c1"], ["r1"]),
        h.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        h.make_node("Conv", ["p1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        h.make_node("Add", ["c2", "p1"], ["a1"]),
        h.make_node("Conv", ["a1", "w3", "b3"], ["c3"]),
        h.make_node("Sigmoid", ["c3"], ["s3"]), h.make_node("Mul", ["a1", "s3"], ["m3"]),
        h.make_node("LeakyRelu", ["m3"], ["l3"], alpha=0.1),
        h.make_node("AveragePool", ["l3"], ["ap"], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1]),
        h.make_node("Concat", ["ap", "a1"], ["cat"], axis=1),
        h.make_node("GlobalAveragePool", ["cat"], ["g"]),
        h.make_node("Flatten", ["g"], ["f"]),
        h.make_node("Gemm", ["f", "wf", "bf"], ["y"]),
    ]
    g = h.make_graph(nodes, "cnn", [h.make_tensor_value_info("x", T.FLOAT, [1, 3, 16, 16])],
                     [h.make_tensor_value_info("y", T.FLOAT, [1, 10])], [nh.from_array(v, k) for k, v in inits.items()])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)
    return path


def _quantize_qop(src: Path, dst: Path, activation: str) -> onnx.ModelProto:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    rng = np.random.default_rng(7)

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.it = iter([{"x": rng.standard_normal((1, 3, 16, 16)).astype(np.float32)} for _ in range(8)])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.it, None)

    act = QuantType.QUInt8 if activation == "u8" else QuantType.QInt8
    quantize_static(str(src), str(dst), Reader(), quant_format=QuantFormat.QOperator, per_channel=True,
                    activation_type=act, weight_type=QuantType.QInt8)
    return onnx.load(dst)


@pytest.mark.parametrize("activation", ["u8", "s8"])
def test_quantize_static_qoperator_cnn(tmp_path: Path, activation: str) -> None:
    pytest.importorskip("onnxruntime.quantization")
    model = _quantize_qop(_small_cnn(tmp_path / "cnn.onnx"), tmp_path / "cnn_qop.onnx", activation)
    ops = {(n.domain, n.op_type) for n in model.graph.node}
    for op in ("QLinearAdd", "QLinearMul", "QLinearSigmoid", "QLinearLeakyRelu", "QLinearAveragePool",
               "QLinearConcat", "QLinearGlobalAveragePool", "QGemm"):
        assert (MS, op) in ops, f"quantize_static wrote no {op}: {sorted(ops)}"
    x = np.random.default_rng(11).standard_normal((1, 3, 16, 16)).astype(np.float32)
    want = run_ort(model, {"x": x})[0]
    # the output is DequantizeLinear of QGemm's u8/s8 result: compare in its steps
    deq = next(n for n in model.graph.node if n.op_type == "DequantizeLinear")
    init = {t.name: nh.to_array(t) for t in model.graph.initializer}
    step = float(init[deq.input[1]])
    for device in DEVICES:
        if device == "CPU":
            outs, rows = _run_cpu(model, {"x": x})
            got = outs[0]
            kinds = {t for t, _ in rows}
            for n in ("QuantizedConvolution", "QuantizedMaxPool", "QuantizedLookup", "QuantizedEltwise",
                      "QuantizedAvgPool", "QuantizedConcat", "QuantizedMatMul"):
                assert n in kinds, f"{n} not in the CPU's profile: {sorted(rows)}"
        else:
            got = OpforgeBackend.prepare(model, device).run([x])[0]
        steps = np.abs(got.astype(np.float64) - want) / step
        print(f"{device} {activation}: max {steps.max():.2f} steps from ONNX Runtime, {(steps > 0.5).sum()} of {steps.size}")
        assert steps.max() <= 1.0 + 1e-3
