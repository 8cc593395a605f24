"""HETERO on fake devices: fallback, one sub-graph when possible, affinities, per-device
properties, the placement report and the fallback warning."""

from __future__ import annotations

import warnings

import numpy as np
import opforge
import pytest
from hetero_fixtures import Log, const, named, param, sandwich_model
from opforge import Model
from opforge.errors import DeviceNotFoundError, KernelError, PropertyError, UnsupportedOpError
from opforge.reference import evaluate_model
from opforge_hetero import AffinityError, HeteroFallbackWarning, Placement


def compile_quietly(core: opforge.Core, model: Model, device: str, config: dict | None = None) -> opforge.CompiledModel:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HeteroFallbackWarning)
        return core.compile_model(model, device, config)


# ============================================================================ fallback
def test_op_only_the_second_device_supports_runs_with_equal_outputs(
        core: opforge.Core, swish_model: Model, x_value: np.ndarray, log: Log) -> None:
    hetero = compile_quietly(core, swish_model, "HETERO:FAST,SLOW")
    single = core.compile_model(swish_model, "SLOW")
    got = hetero([x_value])[0]
    np.testing.assert_allclose(got, single([x_value])[0], atol=1e-4)
    np.testing.assert_allclose(got, evaluate_model(swish_model, [x_value])[0], atol=1e-4)
    assert hetero.get_property("EXECUTION_DEVICES") == ["FAST", "SLOW"]
    placement: Placement = hetero.get_property("HETERO_PLACEMENT")
    assert placement.nodes["relu"].device == "FAST"
    assert placement.nodes["swish"].device == "SLOW"
    assert placement.nodes["swish"].reason == "Swish: no FAST kernel"
    assert placement.nodes["relu"].reason == "FAST is the first device"
    # greedy: the Add after Swish goes back to FAST (it is not sandwiched, so no smoothing)
    assert placement.nodes["add"].device == "FAST"
    assert hetero.get_property("HETERO_NUMBER_OF_SUBMODELS") == 3
    assert hetero.get_property("HETERO_NUMBER_OF_TRANSFERS") == 2
    assert [(r.device, r.model.split("/")[-1]) for r in log.compiles if "/subgraph" in r.model] == \
        [("FAST", "subgraph0_FAST"), ("SLOW", "subgraph1_SLOW"), ("FAST", "subgraph2_FAST")]


def test_full_support_gives_one_subgraph_and_no_transfers(
        core: opforge.Core, fast_model: Model, x_value: np.ndarray, log: Log) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", HeteroFallbackWarning)  # nothing falls back: no warning
        hetero = core.compile_model(fast_model, "HETERO:FAST,SLOW")
    assert hetero.get_property("HETERO_NUMBER_OF_SUBMODELS") == 1
    assert hetero.get_property("HETERO_NUMBER_OF_TRANSFERS") == 0
    assert hetero.get_property("EXECUTION_DEVICES") == ["FAST"]
    # The whole model went to FAST as it is, not a cut copy of it.
    assert [(r.device, r.model) for r in log.compiles] == [("FAST", "fast_model")]
    want = evaluate_model(fast_model, [x_value])
    got = hetero([x_value])
    for a, b in zip(got.to_tuple(), want):
        np.testing.assert_allclose(a, b, atol=1e-5)
    assert got.names() == ["y", "z"]


def test_query_model_returns_the_placement_and_skips_what_nobody_runs(core: opforge.Core) -> None:
    x = param("x")
    e = opforge.op("Exp", opforge.op("Relu", x, name="relu"), name="exp")
    m = Model([named(opforge.op("Sigmoid", e, name="sig"), "y")], [x], name="q")
    assert core.query_model(m, "HETERO:FAST,MID") == {"x": "FAST", "relu": "FAST", "sig": "MID", "sig/result": "MID"}
    with pytest.raises(UnsupportedOpError, match=r"no listed device can run 1 operation\(s\): node 'exp' \(Exp-opset1\)"):
        core.compile_model(m, "HETERO:FAST,MID")


def test_priority_order_decides(core: opforge.Core, x_value: np.ndarray) -> None:
    x = param("x")
    m = Model([named(opforge.op("Sigmoid", opforge.op("Relu", x, name="relu"), name="sig"), "y")], [x])
    assert core.query_model(m, "HETERO:MID,SLOW") == {"x": "MID", "relu": "MID", "sig": "MID", "sig/result": "MID"}
    assert core.query_model(m, "HETERO:SLOW,MID")["sig"] == "SLOW"
    placement = compile_quietly(core, m, "HETERO:FAST,MID,SLOW").get_property("HETERO_PLACEMENT")
    assert placement.nodes["sig"].device == "MID" and placement.nodes["sig"].reason == "Sigmoid: no FAST kernel"


def test_device_list_from_multi_device_priorities(core: opforge.Core, swish_model: Model, x_value: np.ndarray) -> None:
    compiled = compile_quietly(core, swish_model, "HETERO", {"MULTI_DEVICE_PRIORITIES": "FAST, SLOW"})
    assert compiled.get_property("EXECUTION_DEVICES") == ["FAST", "SLOW"]
    with pytest.raises(DeviceNotFoundError, match="HETERO needs a list of devices"):
        core.compile_model(swish_model, "HETERO")
    with pytest.raises(DeviceNotFoundError, match="listed twice"):
        core.compile_model(swish_model, "HETERO:SLOW,SLOW")
    with pytest.raises(DeviceNotFoundError, match="cannot list itself"):
        core.compile_model(swish_model, "HETERO:HETERO,SLOW")
    with pytest.raises(DeviceNotFoundError, match="'NOPE' is not installed"):
        core.compile_model(swish_model, "HETERO:NOPE,SLOW")


# ============================================================================ affinity
def test_manual_affinity_is_followed(core: opforge.Core, swish_model: Model, x_value: np.ndarray) -> None:
    swish_model.node("relu").rt_info["affinity"] = "slow"
    compiled = compile_quietly(core, swish_model, "HETERO:FAST,SLOW")
    placement = compiled.get_property("HETERO_PLACEMENT")
    assert placement.nodes["relu"].device == "SLOW" and placement.nodes["relu"].reason == "affinity"
    assert placement.nodes["add"].device == "FAST"  # nodes without an affinity are placed as usual
    assert compiled.get_property("HETERO_NUMBER_OF_SUBMODELS") == 2
    swish_model.node("add").rt_info["affinity"] = "SLOW"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HeteroFallbackWarning)  # Swish still falls back
        compiled = core.compile_model(swish_model, "HETERO:FAST,SLOW")
    assert compiled.get_property("HETERO_NUMBER_OF_SUBMODELS") == 1
    np.testing.assert_allclose(compiled([x_value])[0], evaluate_model(swish_model, [x_value])[0], atol=1e-5)


def test_affinity_to_a_device_that_cannot_run_the_node_names_both(core: opforge.Core, swish_model: Model) -> None:
    swish_model.node("swish").rt_info["affinity"] = "FAST"
    with pytest.raises(AffinityError, match=r"node 'swish' \(Swish-opset4\) has affinity FAST, but FAST cannot "
                                            r"run it .*devices that can: SLOW"):
        core.compile_model(swish_model, "HETERO:FAST,SLOW")


def test_affinity_to_a_device_not_in_the_list_is_an_error(core: opforge.Core, swish_model: Model) -> None:
    swish_model.node("relu").rt_info["affinity"] = "MID"
    with pytest.raises(AffinityError, match=r"node 'relu' \(Relu-opset1\) has affinity 'MID', which is not one "
                                            r"of the HETERO devices \(FAST, SLOW\)"):
        core.compile_model(swish_model, "HETERO:FAST,SLOW")


# ============================================================================ properties
def test_per_device_properties_are_passed_through(core: opforge.Core, swish_model: Model, log: Log) -> None:
    compile_quietly(core, swish_model, "HETERO:FAST,SLOW", {
        "DEVICE_PROPERTIES": {"FAST": {"FAKE_TAG": "fast-one"}, "slow": {"FAKE_TAG": "slow-one", "NUM_STREAMS": 3}},
        "ENABLE_PROFILING": True,
    })
    by_dev = {r.device: r.config for r in log.compiles}
    assert by_dev["FAST"]["FAKE_TAG"] == "fast-one"
    assert by_dev["SLOW"]["FAKE_TAG"] == "slow-one" and by_dev["SLOW"]["NUM_STREAMS"] == 3
    # a common HETERO property changed from its default reaches every device that has it
    assert by_dev["FAST"]["ENABLE_PROFILING"] is True and by_dev["SLOW"]["ENABLE_PROFILING"] is True


def test_precision_is_each_devices_default_unless_set_and_is_reported(
        core: opforge.Core, swish_model: Model, log: Log) -> None:
    # SLOW's own default stands for the CPU's bf16 on a bf16 host
    core.set_property("SLOW", {"INFERENCE_PRECISION_HINT": "bf16"})
    compiled = compile_quietly(core, swish_model, "HETERO:FAST,SLOW")
    by_dev = {r.device: r.config for r in log.compiles}
    assert (by_dev["FAST"]["INFERENCE_PRECISION_HINT"], by_dev["SLOW"]["INFERENCE_PRECISION_HINT"]) == ("f32", "bf16")
    # reported as the parts computed, not as HETERO's own (unused) default f32
    assert compiled.get_property("HETERO_INFERENCE_PRECISIONS") == {"FAST": "f32", "SLOW": "bf16"}
    assert compiled.get_property("INFERENCE_PRECISION_HINT") == "FAST:f32,SLOW:bf16"
    # a precision set on HETERO reaches every part, even when it equals HETERO's default
    log.compiles.clear()
    compiled = compile_quietly(core, swish_model, "HETERO:FAST,SLOW", {"INFERENCE_PRECISION_HINT": "f32"})
    assert {r.device: r.config["INFERENCE_PRECISION_HINT"] for r in log.compiles} == {"FAST": "f32", "SLOW": "f32"}
    assert compiled.get_property("INFERENCE_PRECISION_HINT") == "f32"


def test_per_device_properties_are_validated(core: opforge.Core, swish_model: Model) -> None:
    with pytest.raises(PropertyError, match="DEVICE_PROPERTIES has settings for MID, which is not one of the "
                                            r"devices of HETERO:FAST,SLOW \(FAST, SLOW\)"):
        core.compile_model(swish_model, "HETERO:FAST,SLOW", {"DEVICE_PROPERTIES": {"MID": {}}})
    with pytest.raises(PropertyError, match="device SLOW has no property 'NOPE'"):
        core.compile_model(swish_model, "HETERO:FAST,SLOW", {"DEVICE_PROPERTIES": {"SLOW": {"NOPE": 1}}})
    with pytest.raises(PropertyError, match="expects dict"):
        core.compile_model(swish_model, "HETERO:FAST,SLOW", {"DEVICE_PROPERTIES": "SLOW"})


def test_core_level_hetero_properties_apply(core: opforge.Core, swish_model: Model) -> None:
    core.set_property("HETERO", {"MULTI_DEVICE_PRIORITIES": "SLOW"})
    compiled = core.compile_model(swish_model, "HETERO")
    assert compiled.get_property("EXECUTION_DEVICES") == ["SLOW"]
    assert "HETERO_PLACEMENT" in compiled.get_property("SUPPORTED_PROPERTIES")


# ============================================================================ visibility
def test_fallback_warning_appears_once_per_compiled_model(core: opforge.Core, swish_model: Model,
                                                          x_value: np.ndarray) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = core.compile_model(swish_model, "HETERO:FAST,SLOW")
        for _ in range(3):
            compiled([x_value])
        compiled.create_infer_request().infer([x_value])
    ours = [w for w in caught if issubclass(w.category, HeteroFallbackWarning)]
    assert len(ours) == 1
    msg = str(ours[0].message)
    assert "HETERO:FAST,SLOW: 1 of 3 operations of model 'swish_model' do not run on FAST" in msg
    assert "'swish' -> SLOW (Swish: no FAST kernel)" in msg
    assert ours[0].filename == __file__  # points at the compile_model call
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        core.compile_model(swish_model, "HETERO:FAST,SLOW", {"HETERO_FALLBACK_WARNING": False})
    assert not [w for w in caught if issubclass(w.category, HeteroFallbackWarning)]


def test_placement_report_text(core: opforge.Core, swish_model: Model) -> None:
    compiled = compile_quietly(core, swish_model, "HETERO:FAST,SLOW")
    text = compiled.get_property("HETERO_PLACEMENT_REPORT")
    assert text.splitlines()[0] == ("model 'swish_model' on HETERO:FAST,SLOW (policy greedy): 3 operations "
                                    "(FAST: 2, SLOW: 1), 3 sub-graphs, 2 transfers (48 B per inference)")
    assert "swish  Swish  SLOW    1  Swish: no FAST kernel" in text
    assert "transfer relu: FAST (sub-graph 0) -> SLOW (sub-graph 1), 24 B" in text
    as_dict = compiled.get_property("HETERO_PLACEMENT").to_dict()
    assert as_dict["nodes"]["bias"]["kind"] == "weight" and as_dict["nodes"]["bias"]["devices"] == ["FAST"]


def test_no_ping_pong_on_a_sandwich(core: opforge.Core, x_value: np.ndarray) -> None:
    m = sandwich_model()
    smooth = compile_quietly(core, m, "HETERO:FAST,SLOW").get_property("HETERO_PLACEMENT")
    assert smooth.nodes["relu"].device == "SLOW"
    assert smooth.nodes["relu"].reason == "moved to SLOW to avoid 2 transfers"
    assert len(smooth.subgraphs) == 1 and not smooth.transfers
    raw = compile_quietly(core, m, "HETERO:FAST,SLOW", {"HETERO_SMOOTHING_MAX_OPS": 0})
    placement = raw.get_property("HETERO_PLACEMENT")
    assert placement.nodes["relu"].device == "FAST"
    assert len(placement.subgraphs) == 3 and len(placement.transfers) == 2
    np.testing.assert_allclose(raw([x_value])[0], evaluate_model(m, [x_value])[0], atol=1e-5)


def test_weights_are_never_transferred(core: opforge.Core, x_value: np.ndarray, log: Log) -> None:
    """A weight converted on its way (a constant sub-graph) is replicated next to each consumer."""
    x = param("x")
    w = opforge.op("Convert", opforge.op("Constant", value=np.arange(9, dtype=np.float16).reshape(3, 3), name="w16"),
                   destination_type="f32", name="w32")
    left = opforge.op("MatMul", x, w, name="mm_fast")               # FAST
    mm_slow = opforge.op("MatMul", opforge.op("Sigmoid", x, name="sig"), w, name="mm_slow")
    mm_slow.rt_info["affinity"] = "SLOW"
    right = opforge.op("Swish", mm_slow, name="swish")              # SLOW
    m = Model([named(left, "a"), named(right, "b")], [x], name="weights")
    compiled = compile_quietly(core, m, "HETERO:FAST,SLOW", {"HETERO_SMOOTHING_MAX_OPS": 0})
    placement = compiled.get_property("HETERO_PLACEMENT")
    assert placement.nodes["w32"].devices == ("FAST", "SLOW")
    assert placement.nodes["w32"].kind == "constant"
    assert "replicated on FAST, SLOW" in placement.nodes["w32"].reason
    assert not placement.transfers
    # each sub-graph got its own copy of the weight and of its Convert
    for rec in log.compiles:
        assert "w16" in rec.nodes and "w32" in rec.nodes
    for a, b in zip(compiled([x_value]).to_tuple(), evaluate_model(m, [x_value])):
        np.testing.assert_allclose(a, b, rtol=1e-5)


def test_shape_subgraph_follows_its_consumer(core: opforge.Core, x_value: np.ndarray) -> None:
    x = param("x")
    t = opforge.op("Tanh", x, name="tanh")                                   # SLOW only
    shape = opforge.op("ShapeOf", t, name="shape")                           # SLOW only
    r = opforge.op("Reshape", opforge.op("Relu", t, name="relu"), shape, special_zero=False, name="reshape")
    m = Model([named(r, "y")], [x], name="shapes")
    placement = compile_quietly(core, m, "HETERO:FAST,SLOW", {"HETERO_SMOOTHING_MAX_OPS": 0}).get_property(
        "HETERO_PLACEMENT")
    assert placement.nodes["shape"].kind == "shape"
    assert placement.nodes["shape"].device == "SLOW"


def test_model_output_straight_from_an_input_or_a_constant(core: opforge.Core, x_value: np.ndarray) -> None:
    x = param("x")
    s = opforge.op("Swish", opforge.op("Relu", x, name="relu"), name="swish")
    m = Model([named(s, "y"), x, const("c", [1.0, 2.0])], [x], name="passthrough")
    compiled = compile_quietly(core, m, "HETERO:FAST,SLOW", {"HETERO_SMOOTHING_MAX_OPS": 0})
    out = compiled([x_value]).to_tuple()
    np.testing.assert_allclose(out[0], evaluate_model(m, [x_value])[0], atol=1e-5)
    np.testing.assert_array_equal(out[1], x_value)
    np.testing.assert_array_equal(out[2], np.array([1.0, 2.0], np.float32))


def test_errors_inside_a_subgraph_name_it(core: opforge.Core, swish_model: Model, x_value: np.ndarray) -> None:
    compiled = compile_quietly(core, swish_model, "HETERO:FAST,SLOW", {"HETERO_ASYNC": False})
    sub = compiled.get_property("HETERO_SUBGRAPHS")
    assert [s["device"] for s in sub] == ["FAST", "SLOW", "FAST"]

    def broken(node: object, inputs: list[np.ndarray]) -> list[np.ndarray]:
        raise ValueError("kernel exploded")

    # break SLOW's Swish kernel after compiling: the error must say which sub-graph failed
    for req in compiled._executable.subgraphs:  # type: ignore[attr-defined]
        if req.device == "SLOW":
            req.compiled._executable.kernels = {k: broken for k in req.compiled._executable.kernels}
    for mode in (False, True):
        compiled._executable.use_queues = mode  # type: ignore[attr-defined]
        # a builtin exception from a kernel reaches the user as a KernelError naming the device,
        # chained to the original
        with pytest.raises(KernelError, match="SLOW failed: ValueError: kernel exploded") as info:
            compiled.infer_new_request([x_value])
        chain: list[BaseException] = []
        err: BaseException | None = info.value
        while err is not None:
            chain.append(err)
            err = err.__cause__
        notes = [n for e in chain for n in getattr(e, "__notes__", [])]
        assert any("HETERO sub-graph 1 on SLOW" in n for n in notes)
