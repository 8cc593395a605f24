"""Loop-5: the NumPy reference against a plain Python loop, shape inference of concatenated and
shape-changing outputs, and the errors of malformed port maps."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from opforge.errors import AttributeValidationError, KernelError, ShapeInferenceError
from opforge.graph import Model, Node, Output
from opforge.opset.loop import Loop
from opforge.reference import evaluate_model


def param(name: str, t: str, shape: Any) -> Node:
    return Node.create("Parameter", [], {"element_type": t, "shape": shape}, name=name)


def const(v: Any) -> Output:
    return Node.create("Constant", [], {"value": np.asarray(v)}).output(0)


def body_model() -> Model:
    """acc' = acc + x + slice (a [1,3] row of xs) * iteration; condition: sum(acc') < lim."""
    it, acc, x, row = param("it", "i64", []), param("acc", "f32", [3]), param("x", "f32", [3]), param("row", "f32", [1, 3])
    fi = Node.create("Convert", [it], {"destination_type": "f32"})
    scaled = Node.create("Multiply", [Node.create("Reshape", [row, const(np.int64([3]))], {"special_zero": False}), fi])
    acc2 = Node.create("Add", [Node.create("Add", [acc, x]), scaled])
    total = Node.create("ReduceSum", [acc2, const(np.int64([0]))], {"keep_dims": False})
    cond = Node.create("Less", [total, const(np.float32(40))])
    scan = Node.create("Unsqueeze", [acc2, const(np.int64([0]))])
    return Model([cond, acc2, scan], [it, acc, x, row], name="body")


def loop_node(trip: Output, cond: Output, acc0: Output, x: Output, xs: Output, **over: Any) -> Node:
    attrs: dict[str, Any] = {
        "body": body_model(),
        "input_descriptions": [
            {"kind": "merged", "external_port_id": 2, "body_parameter_index": 1, "back_edge_result_index": 1},
            {"kind": "invariant", "external_port_id": 3, "body_parameter_index": 2},
            {"kind": "sliced", "external_port_id": 4, "body_parameter_index": 3, "axis": 0},
        ],
        "output_descriptions": [{"external_port_id": 0, "body_result_index": 1},
                                {"external_port_id": 1, "body_result_index": 2, "axis": 0}],
        "current_iteration_input_idx": 0, "body_condition_output_idx": 0, **over,
    }
    return Node.create(Loop, [trip, cond, acc0, x, xs], attrs, name="loop")


def python_loop(trip: int, go: bool, acc: np.ndarray, x: np.ndarray, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    scans = []
    i = 0
    while go and (trip < 0 or i < trip) and i < xs.shape[0]:
        acc = acc + x + xs[i] * np.float32(i)
        scans.append(acc[None])
        go = bool(acc.sum() < 40)
        i += 1
    return acc, (np.concatenate(scans) if scans else np.zeros((0, 3), np.float32))


def loop_model() -> Model:
    ps = [param("trip", "i64", []), param("go", "boolean", []), param("acc0", "f32", [3]), param("x", "f32", [3]),
          param("xs", "f32", [6, 3])]
    n = loop_node(*[p.output(0) for p in ps])
    return Model([n.output(0), n.output(1)], ps, name="loop_model")


@pytest.mark.parametrize(("trip", "go"), [(-1, True), (2, True), (0, True), (5, False), (100, True)])
def test_reference_matches_a_python_loop(trip: int, go: bool) -> None:
    rng = np.random.default_rng(3)
    acc0, x, xs = (rng.standard_normal(s).astype(np.float32) for s in ((3,), (3,), (6, 3)))
    got = evaluate_model(loop_model(), [np.int64(trip), np.bool_(go), acc0, x, xs])
    want = python_loop(trip, go, acc0, x, xs)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_shapes_concatenated_axis_is_dynamic_unless_the_count_is_known() -> None:
    m = loop_model()
    assert [str(o.partial_shape) for o in m.outputs] == ["[3]", "[?,3]"]
    fixed = loop_node(const(np.int64(4)), const(True), const(np.zeros(3, np.float32)), const(np.zeros(3, np.float32)),
                      param("xs", "f32", [6, 3]).output(0), body_condition_output_idx=-1)
    assert str(fixed.output(1).partial_shape) == "[4,3]"


def test_port_map_errors_name_the_problem() -> None:
    with pytest.raises(AttributeValidationError, match="must be fed exactly once"):
        loop_node(const(np.int64(1)), const(True), const(np.zeros(3, np.float32)), const(np.zeros(3, np.float32)),
                  const(np.zeros((6, 3), np.float32)), current_iteration_input_idx=-1)
    with pytest.raises(ShapeInferenceError, match="trip count"):
        loop_node(const(np.float32(1)), const(True), const(np.zeros(3, np.float32)), const(np.zeros(3, np.float32)),
                  const(np.zeros((6, 3), np.float32)))


def test_a_loop_without_a_value_for_a_non_carried_output_after_zero_iterations_is_an_error() -> None:
    n = loop_node(param("t", "i64", []).output(0), const(True), const(np.zeros(3, np.float32)),
                  const(np.zeros(3, np.float32)), const(np.zeros((6, 3), np.float32)),
                  output_descriptions=[{"external_port_id": 0, "body_result_index": 0}])
    m = Model([n.output(0)], [n.inputs[0].node])
    with pytest.raises(KernelError, match="zero iterations"):
        evaluate_model(m, [np.int64(0)])


# ============================================================================ IR
def _inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    return [np.array(-1, np.int64), np.array(True), *(rng.standard_normal(s).astype(np.float32)
                                                       for s in ((3,), (3,), (6, 3)))]


def test_ir_round_trip_keeps_the_body_and_port_maps() -> None:
    from opforge.ir import read_ir
    from opforge.ir.writer import serialize

    m = loop_model()
    xml, weights = serialize(m)
    text = xml.decode()
    assert "<port_map>" in text and "<back_edges>" in text and "<body>" in text and 'purpose="current_iteration"' in text
    back = read_ir(xml, weights)
    loop = next(n for n in back.get_ordered_ops() if n.type_name == "Loop")
    assert loop.attrs == m.results[0].inputs[0].node.attrs.model_copy(update={"body": loop.attrs.body})  # type: ignore[attr-defined]
    for g, w in zip(evaluate_model(back, _inputs()), evaluate_model(m, _inputs())):
        np.testing.assert_array_equal(g, w)


@pytest.mark.openvino
def test_openvino_reads_opforges_loop_ir_and_agrees(tmp_path: Any) -> None:
    ov = pytest.importorskip("openvino")
    from opforge.ir import save_model

    m = loop_model()
    save_model(m, tmp_path / "loop.xml")
    core = ov.Core()
    # OpenVINO's CPU plugin refuses a trip count past the sliced input's length (opforge stops
    # there), so the counts here stay within the 6 rows; compiled per count, because after zero
    # iterations the same compiled model returned the previous run's concatenated shape
    for trip in (6, 2, 0):
        compiled = core.compile_model(core.read_model(str(tmp_path / "loop.xml")), "CPU",
                                      {"INFERENCE_PRECISION_HINT": "f32"})
        ins = _inputs()
        ins[0] = np.array(trip, np.int64)
        res = compiled(ins)
        for i, w in enumerate(evaluate_model(m, ins)):
            g = np.asarray(res[compiled.output(i)])
            assert g.shape == w.shape, (trip, i, g.shape, w.shape)
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.openvino
def test_opforge_reads_openvinos_loop_ir_and_agrees(tmp_path: Any) -> None:
    ov = pytest.importorskip("openvino")
    ops = pytest.importorskip("openvino.opset13")
    from openvino import opset5
    from opforge.ir import read_ir

    it = ops.parameter([], np.int64, name="it")
    acc = ops.parameter([3], np.float32, name="acc")
    row = ops.parameter([3], np.float32, name="row")
    acc2 = ops.add(acc, ops.multiply(row, ops.convert(it, "f32")))
    cond = ops.less(ops.reduce_sum(acc2, [0]), ops.constant(np.float32(30)))
    scan = ops.unsqueeze(acc2, [0])
    body = ov.Model([cond, acc2, scan], [it, acc, row], "body")
    trip, go = ops.parameter([], np.int64, name="trip"), ops.parameter([], np.bool_, name="go")
    a0, xs = ops.parameter([3], np.float32, name="a0"), ops.parameter([3], np.float32, name="xs")
    loop = opset5.loop(trip, go)
    loop.set_function(body)
    loop.set_special_body_ports([0, 0])
    loop.set_merged_input(acc, a0.output(0), acc2.output(0))
    loop.set_invariant_input(row, xs.output(0))
    outs = [loop.get_iter_value(acc2.output(0), -1), loop.get_concatenated_slices(scan.output(0), 0, 1, 1, -1, 0)]
    ov.save_model(ov.Model(outs, [trip, go, a0, xs], "ov_loop"), str(tmp_path / "ov.xml"))
    model = read_ir(tmp_path / "ov.xml")
    ins = [np.array(-1, np.int64), np.array(True), np.ones(3, np.float32),
           np.arange(3, dtype=np.float32)]
    core = ov.Core()
    compiled = core.compile_model(str(tmp_path / "ov.xml"), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    res = compiled(ins)
    for i, g in enumerate(evaluate_model(model, ins)):
        w = np.asarray(res[compiled.output(i)])
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("old", "new", "message"), [
    ('internal_layer_id="1"', 'internal_layer_id="99"', "names body layer 99, which is not a body Parameter"),
    ('external_port_id="2"', 'external_port_id="77"', "external_port_id=77 is not an input port"),
    ('stride="1"', 'stride="2"', "one element per iteration over the whole axis"),
    ('axis="0" external_port_id="4"', 'axis="x" external_port_id="4"', "axis='x' is not an integer"),
    ("<port_map>", "<port_map_gone>", "has a <body> but no <port_map>"),
])
def test_malformed_loop_ir_is_a_clear_error(old: str, new: str, message: str) -> None:
    from opforge.errors import ModelFormatError
    from opforge.ir import read_ir
    from opforge.ir.writer import serialize

    xml, weights = serialize(loop_model())
    text = xml.decode()
    assert old in text
    text = text.replace(old, new, 1)
    if new == "<port_map_gone>":
        text = text.replace("</port_map>", "</port_map_gone>", 1)
    with pytest.raises(ModelFormatError, match=message):
        read_ir(text.encode(), weights)
