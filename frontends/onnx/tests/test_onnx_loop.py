"""ONNX Loop with a run-time trip count or a run-time condition: converted to opforge's Loop op
(a body sub-model), run by reference, on CPU (a host stage that iterates the body compiled for the
CPU) and on HETERO:GPU,CPU (the GPU does not claim Loop, so it lands on CPU), compared with ONNX
Runtime. Constant trip counts with constant conditions are still unrolled (checked too)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import opforge
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from opforge.graph import Model
from opforge.reference import evaluate_model
from opforge_onnx.backend import REFERENCE, OpforgeBackend
from opforge_onnx.testing.helpers import make_model, run_ort

_AVAILABLE = {d.split(".")[0] for d in opforge.Core().available_devices}
DEVICES = [REFERENCE] + [d for d in ("CPU",) if d in _AVAILABLE] + (
    ["HETERO:GPU,CPU"] if {"GPU", "CPU"} <= _AVAILABLE else [])


def _vi(name: str, t: int, shape: list[int | str] | None) -> onnx.ValueInfoProto:
    return h.make_tensor_value_info(name, t, shape)


def _run(model: onnx.ModelProto, feeds: dict[str, np.ndarray], device: str) -> list[np.ndarray]:
    args = [feeds[i.name] for i in model.graph.input]
    if device == REFERENCE:
        return list(OpforgeBackend.prepare(model, device=device).run(args))
    core = opforge.Core()
    converted = opforge.convert_model(model.SerializeToString(), framework="onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # HETERO warns about the CPU fallback it chose
        compiled = core.compile_model(converted, device)
    res = compiled(args)
    return [np.asarray(res[k]) for k in range(len(converted.outputs))]


def _check(model: onnx.ModelProto, feeds: dict[str, np.ndarray], device: str) -> None:
    want = run_ort(model, feeds)
    got = _run(model, feeds, device)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def _accumulate_model() -> onnx.ModelProto:
    """acc += x each iteration until sum(acc) reaches `lim` (a condition computed in the body);
    scan output acc * iteration; x and lim are read from the outer scope."""
    body = h.make_graph([
        h.make_node("Add", ["acc", "x"], ["acc2"]),
        h.make_node("ReduceSum", ["acc2"], ["s"], keepdims=0),
        h.make_node("Less", ["s", "lim"], ["c2"]),
        h.make_node("Cast", ["i"], ["fi"], to=T.FLOAT),
        h.make_node("Mul", ["acc2", "fi"], ["sc"]),
    ], "body", [_vi("i", T.INT64, []), _vi("c", T.BOOL, []), _vi("acc", T.FLOAT, [3])],
        [_vi("c2", T.BOOL, []), _vi("acc2", T.FLOAT, [3]), _vi("sc", T.FLOAT, [3])])
    loop = h.make_node("Loop", ["M", "cond", "a0"], ["af", "scans"], body=body)
    return make_model([loop], [_vi("M", T.INT64, []), _vi("cond", T.BOOL, []), _vi("a0", T.FLOAT, [3]),
                               _vi("x", T.FLOAT, [3]), _vi("lim", T.FLOAT, [])],
                      [_vi("af", T.FLOAT, None), _vi("scans", T.FLOAT, None)], [], opset=17)


def _feeds(m: int, lim: float, cond: bool = True) -> dict[str, np.ndarray]:
    return {"M": np.array(m, np.int64), "cond": np.array(cond), "a0": np.ones(3, np.float32),
            "x": np.array([1, 2, 3], np.float32), "lim": np.array(lim, np.float32)}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("m", "lim", "cond"), [
    (5, 100.0, True),  # the trip count stops it
    (10, 20.0, True),  # the body's condition stops it early
    (0, 1.0, True),  # zero iterations: state keeps its value, scan output is empty
    (4, 100.0, False),  # the initial condition is false
])
def test_runtime_trip_count_and_condition(device: str, m: int, lim: float, cond: bool) -> None:
    _check(_accumulate_model(), _feeds(m, lim, cond), device)


def _range_like_model() -> onnx.ModelProto:
    """A loop with no trip count (only a condition), a growing scan output and two carried values
    of different types: the Fibonacci numbers below a run-time bound."""
    body = h.make_graph([
        h.make_node("Add", ["a", "b"], ["ab"]),
        h.make_node("Less", ["ab", "bound"], ["c2"]),
        h.make_node("Identity", ["b"], ["a2"]),
        h.make_node("Identity", ["ab"], ["b2"]),
        h.make_node("Cast", ["i"], ["i32"], to=T.INT32),
        h.make_node("Identity", ["ab"], ["scan"]),
    ], "body", [_vi("i", T.INT64, []), _vi("c", T.BOOL, []), _vi("a", T.INT64, []), _vi("b", T.INT64, []),
                _vi("n", T.INT32, [])],
        [_vi("c2", T.BOOL, []), _vi("a2", T.INT64, []), _vi("b2", T.INT64, []), _vi("i32", T.INT32, []),
         _vi("scan", T.INT64, [])])
    loop = h.make_node("Loop", ["", "", "a0", "b0", "n0"], ["a", "b", "n", "fib"], body=body)
    return make_model([loop], [_vi("a0", T.INT64, []), _vi("b0", T.INT64, []), _vi("n0", T.INT32, []),
                               _vi("bound", T.INT64, [])],
                      [_vi(k, t, None) for k, t in (("a", T.INT64), ("b", T.INT64), ("n", T.INT32),
                                                     ("fib", T.INT64))], [], opset=17)


@pytest.mark.parametrize("device", DEVICES)
def test_condition_only_loop_with_carried_state(device: str) -> None:
    feeds = {"a0": np.array(0, np.int64), "b0": np.array(1, np.int64), "n0": np.array(0, np.int32),
             "bound": np.array(1000, np.int64)}
    _check(_range_like_model(), feeds, device)


def _nested_model() -> onnx.ModelProto:
    """An outer loop of M iterations whose body runs an inner loop of N (both run-time) that
    adds the outer iteration number to a row; the inner body reads the outer body's value."""
    inner = h.make_graph([
        h.make_node("Cast", ["oi"], ["oif"], to=T.FLOAT),
        h.make_node("Add", ["r", "oif"], ["r2"]),
        h.make_node("Identity", ["ic"], ["ic2"]),
    ], "inner", [_vi("j", T.INT64, []), _vi("ic", T.BOOL, []), _vi("r", T.FLOAT, [2])],
        [_vi("ic2", T.BOOL, []), _vi("r2", T.FLOAT, [2])])
    outer = h.make_graph([
        h.make_node("Identity", ["i"], ["oi"]),
        h.make_node("Loop", ["N", "", "row"], ["row2"], body=inner),
        h.make_node("Identity", ["c"], ["c2"]),
        h.make_node("Identity", ["row2"], ["out"]),
    ], "outer", [_vi("i", T.INT64, []), _vi("c", T.BOOL, []), _vi("row", T.FLOAT, [2])],
        [_vi("c2", T.BOOL, []), _vi("row2", T.FLOAT, [2]), _vi("out", T.FLOAT, [2])])
    loop = h.make_node("Loop", ["M", "", "r0"], ["rf", "rows"], body=outer)
    return make_model([loop], [_vi("M", T.INT64, []), _vi("N", T.INT64, []), _vi("r0", T.FLOAT, [2])],
                      [_vi("rf", T.FLOAT, None), _vi("rows", T.FLOAT, None)], [], opset=17)


@pytest.mark.parametrize("device", DEVICES)
def test_nested_loops(device: str) -> None:
    feeds = {"M": np.array(4, np.int64), "N": np.array(3, np.int64), "r0": np.array([0.5, -1], np.float32)}
    _check(_nested_model(), feeds, device)


def test_changing_state_shape_gets_a_dynamic_body() -> None:
    """A carried value that grows each iteration (concat): the body takes it at any length."""
    body = h.make_graph([
        h.make_node("Cast", ["i"], ["fi"], to=T.FLOAT),
        h.make_node("Unsqueeze", ["fi", "zero"], ["fi1"]),
        h.make_node("Concat", ["v", "fi1"], ["v2"], axis=0),
        h.make_node("Identity", ["c"], ["c2"]),
    ], "body", [_vi("i", T.INT64, []), _vi("c", T.BOOL, []), _vi("v", T.FLOAT, ["n"])],
        [_vi("c2", T.BOOL, []), _vi("v2", T.FLOAT, ["m"])],
        [onnx.numpy_helper.from_array(np.array([0], np.int64), "zero")])
    loop = h.make_node("Loop", ["M", "", "v0"], ["v"], body=body)
    m = make_model([loop], [_vi("M", T.INT64, []), _vi("v0", T.FLOAT, [1])], [_vi("v", T.FLOAT, None)], [],
                   opset=17)
    converted = opforge.convert_model(m.SerializeToString(), framework="onnx")
    assert str(converted.outputs[0].partial_shape) == "[?]"
    for device in DEVICES:
        _check(m, {"M": np.array(5, np.int64), "v0": np.array([7], np.float32)}, device)


def test_constant_trip_count_is_still_unrolled() -> None:
    model = _accumulate_model()
    model.graph.input.pop(0)
    model.graph.initializer.append(onnx.numpy_helper.from_array(np.array(3, np.int64), "M"))
    model.graph.input.pop(0)
    model.graph.initializer.append(onnx.numpy_helper.from_array(np.array(True), "cond"))
    # the body's condition depends on run-time data: that needs the loop op even with M constant
    converted = opforge.convert_model(model.SerializeToString(), framework="onnx")
    assert any(n.type_name == "Loop" for n in converted.get_ordered_ops())
    feeds = {k: v for k, v in _feeds(3, 15.0).items() if k not in ("M", "cond")}
    for device in DEVICES:
        _check(model, feeds, device)
    # with a constant body condition (Identity of the incoming one) the loop is unrolled
    body = model.graph.node[0].attribute[0].g
    body.node[2].CopyFrom(h.make_node("Identity", ["c"], ["c2"]))
    converted = opforge.convert_model(model.SerializeToString(), framework="onnx")
    assert not any(n.type_name == "Loop" for n in converted.get_ordered_ops())
    _check(model, feeds, REFERENCE)


def test_a_constant_trip_count_of_several_values_is_refused() -> None:
    model = _accumulate_model()
    model.graph.input.pop(0)
    model.graph.initializer.append(onnx.numpy_helper.from_array(np.array([3, 4], np.int64), "M"))
    with pytest.raises(opforge.OpforgeError, match=r"Loop.*input 0 \(M\) must hold one value, got shape \(2,\)"):
        opforge.convert_model(model.SerializeToString(), framework="onnx")


def test_body_is_self_contained_and_gpu_does_not_claim_loop() -> None:
    converted = opforge.convert_model(_accumulate_model().SerializeToString(), framework="onnx")
    loop = next(n for n in converted.get_ordered_ops() if n.type_name == "Loop")
    body: Model = loop.attrs.body  # type: ignore[attr-defined]
    own = {n.id for n in body.get_ordered_ops()}
    assert all(i.node.id in own for n in body.get_ordered_ops() for i in n.inputs)
    assert len(loop.inputs) == 2 + 1 + 2  # trip, cond, carried, outer x and lim as invariants
    core = opforge.Core()
    if "GPU" not in _AVAILABLE:
        pytest.skip(f"no GPU device here: {core.available_devices}")
    assert loop.name not in core.query_model(converted, "GPU")
    assert core.query_model(converted, "HETERO:GPU,CPU")[loop.name] == "CPU"


@pytest.mark.parametrize("make", [_accumulate_model, _nested_model])
def test_ir_round_trip_and_openvino_agree(make: Any, tmp_path: Path) -> None:
    """The converted Loop saved as IR reads back in opforge and in OpenVINO (2026.4), and both
    give ONNX Runtime's outputs."""
    model = make()
    feeds = _feeds(10, 20.0) if make is _accumulate_model else {
        "M": np.array(4, np.int64), "N": np.array(3, np.int64), "r0": np.array([0.5, -1], np.float32)}
    want = run_ort(model, feeds)
    converted = opforge.convert_model(model.SerializeToString(), framework="onnx")
    opforge.save_model(converted, tmp_path / "loop.xml")
    back = opforge.read_model(tmp_path / "loop.xml")
    args = [feeds[i.name] for i in model.graph.input]
    for device in DEVICES:
        if device == REFERENCE:
            got = evaluate_model(back, args)
        else:
            res = opforge.Core().compile_model(back, device)(args)
            got = [np.asarray(res[k]) for k in range(len(back.outputs))]
        for g, w in zip(got, want):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    ov = pytest.importorskip("openvino")
    compiled = ov.Core().compile_model(str(tmp_path / "loop.xml"), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    res = compiled(args)
    for i, w in enumerate(want):
        g = np.asarray(res[compiled.output(i)])
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def _scan_model() -> onnx.ModelProto:
    """Scan-9+ over a run-time sequence length: a running sum (state) of rows scanned along axis
    1 of x, a second input scanned in reverse, an outer-scope scale, scan outputs on axes 0 and 1
    (the second reversed)."""
    body = h.make_graph([
        h.make_node("Add", ["s", "xr"], ["s2"]),
        h.make_node("Mul", ["s2", "scale"], ["y"]),
        h.make_node("Add", ["yr", "xr"], ["z"]),
    ], "body", [_vi("s", T.FLOAT, [2]), _vi("xr", T.FLOAT, [2]), _vi("yr", T.FLOAT, [2])],
        [_vi("s2", T.FLOAT, [2]), _vi("y", T.FLOAT, [2]), _vi("z", T.FLOAT, [2])])
    scan = h.make_node("Scan", ["s0", "x", "w"], ["sf", "ys", "zs"], body=body, num_scan_inputs=2,
                       scan_input_axes=[1, 0], scan_input_directions=[0, 1], scan_output_axes=[0, 1],
                       scan_output_directions=[0, 1])
    return make_model([scan], [_vi("s0", T.FLOAT, [2]), _vi("x", T.FLOAT, [2, "T"]), _vi("w", T.FLOAT, ["T", 2]),
                               _vi("scale", T.FLOAT, [])],
                      [_vi("sf", T.FLOAT, None), _vi("ys", T.FLOAT, None), _vi("zs", T.FLOAT, None)], [], opset=17)


@pytest.mark.parametrize("device", DEVICES)
def test_scan_with_a_run_time_sequence_length(device: str) -> None:
    model = _scan_model()
    converted = opforge.convert_model(model.SerializeToString(), framework="onnx")
    assert any(n.type_name == "Loop" for n in converted.get_ordered_ops())
    rng = np.random.default_rng(9)
    for t in (5, 1):
        feeds = {"s0": rng.standard_normal(2).astype(np.float32), "x": rng.standard_normal((2, t)).astype(np.float32),
                 "w": rng.standard_normal((t, 2)).astype(np.float32), "scale": np.array(0.5, np.float32)}
        _check(model, feeds, device)
