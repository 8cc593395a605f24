"""Partition policies (greedy vs cost, third-party ones through the policy hook), asynchronous
execution, the partition drawings and the query command."""

from __future__ import annotations

import io
import itertools
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import opforge
import opforge_hetero.plugin
import pytest
from hetero_fixtures import Log, named, param, sandwich_model
from opforge import Model
from opforge.plugins import PluginInfo, PluginSystem
from opforge.reference import evaluate_model
from opforge.runtime import AsyncInferQueue
from opforge_hetero import (
    HeteroFallbackWarning,
    PolicyLoadError,
    PolicyLoadWarning,
    available_policies,
    explain,
)
from opforge_hetero.cli import query_command
from opforge_hetero.dump import CUT_COLOR, device_colors, dump_partition


def compile_quietly(core: opforge.Core, model: Model, device: str, config: dict | None = None) -> opforge.CompiledModel:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HeteroFallbackWarning)
        return core.compile_model(model, device, config)


def heavy_sandwich() -> Model:
    """x -> Sigmoid (SLOW) -> MatMul 256x256 (FAST can, and it is not cheap) -> Tanh (SLOW).
    Greedy keeps the MatMul on FAST (two transfers of 256 KiB); with slow transfers the cost
    policy moves it to SLOW."""
    x = param("x", (256, 256))
    w = opforge.op("Constant", value=(np.eye(256, dtype=np.float32) * 0.5), name="w")
    mm = opforge.op("MatMul", opforge.op("Sigmoid", x, name="sig"), w, name="mm")
    return Model([named(opforge.op("Tanh", mm, name="tanh"), "y")], [x], name="heavy_sandwich")


# ============================================================================ policies
def test_cost_aware_and_greedy_differ(core: opforge.Core) -> None:
    m = heavy_sandwich()
    greedy = compile_quietly(core, m, "HETERO:FAST,SLOW").get_property("HETERO_PLACEMENT")
    assert greedy.nodes["mm"].device == "FAST" and len(greedy.transfers) == 2
    slow_link = {"PARTITION_POLICY": "cost", "HETERO_TRANSFER_GBPS": 0.1,
                 "HETERO_DEVICE_GFLOPS": {"FAST": 1000, "SLOW": 100}}
    compiled = compile_quietly(core, m, "HETERO:FAST,SLOW", slow_link)
    cost = compiled.get_property("HETERO_PLACEMENT")
    assert cost.policy == "cost"
    assert cost.nodes["mm"].device == "SLOW"
    assert cost.nodes["mm"].reason.startswith("moved to SLOW to avoid 2 transfers: ")
    assert len(cost.subgraphs) == 1 and not cost.transfers
    assert any(n.startswith("cost model: FAST 1000 GFLOP/s, SLOW 100 GFLOP/s") for n in cost.notes)
    x = np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32)
    np.testing.assert_allclose(compiled([x])[0], evaluate_model(m, [x])[0], atol=1e-5)
    # with a fast link the MatMul is worth keeping on the fast device
    fast_link = {**slow_link, "HETERO_TRANSFER_GBPS": 100.0, "HETERO_TRANSFER_LATENCY_US": 0.0}
    kept = compile_quietly(core, m, "HETERO:FAST,SLOW", fast_link).get_property("HETERO_PLACEMENT")
    assert kept.nodes["mm"].device == "FAST"


def test_cost_policy_removes_the_cheap_sandwich_too(core: opforge.Core) -> None:
    placement = compile_quietly(core, sandwich_model(), "HETERO:FAST,SLOW",
                                {"PARTITION_POLICY": "COST"}).get_property("HETERO_PLACEMENT")
    assert placement.nodes["relu"].device == "SLOW" and len(placement.subgraphs) == 1


def test_cost_properties_are_validated(core: opforge.Core) -> None:
    with pytest.raises(opforge.OpforgeError, match="HETERO_DEVICE_GFLOPS names MID, which is not one of the devices"):
        core.compile_model(heavy_sandwich(), "HETERO:FAST,SLOW",
                           {"PARTITION_POLICY": "cost", "HETERO_DEVICE_GFLOPS": {"MID": 1}})


def test_unknown_policy_lists_the_known_ones(core: opforge.Core, swish_model: Model) -> None:
    with pytest.raises(PolicyLoadError, match="PARTITION_POLICY 'best' is not a known partition policy; "
                                              "available: cost, greedy"):
        core.compile_model(swish_model, "HETERO:FAST,SLOW", {"PARTITION_POLICY": "best"})


class _BrokenPolicyHook:
    """A plugin whose policy hook raises: reported, and the next answer (the built-in) is used."""

    @opforge.hookimpl
    def opforge_select_partition_policy(self, name: str, devices: list[str]) -> Any:
        raise RuntimeError("policy plugin exploded")


class _WrongPolicyHook:
    """A plugin answering 'wrong' with a policy that puts everything on the first device."""

    @opforge.hookimpl
    def opforge_select_partition_policy(self, name: str, devices: list[str]) -> Any:
        from opforge_hetero.policy import PartitionPolicy

        class Wrong(PartitionPolicy):
            def assign(self, model, supported_by_device, devices, ctx):  # type: ignore[no-untyped-def]
                return {n: devices[0] for n in ctx.nodes}

        return Wrong() if name == "wrong" else None


def test_a_broken_policy_hook_is_reported_and_the_default_still_works(
        plugins: PluginSystem, swish_model: Model, x_value: np.ndarray) -> None:
    plugins.register_module(_BrokenPolicyHook(), PluginInfo("broken_policy", "opforge-test-broken-policy", "1.0"))
    core = opforge.Core(plugins)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = core.compile_model(swish_model, "HETERO:FAST,SLOW")
    reported = [str(w.message) for w in caught if issubclass(w.category, PolicyLoadWarning)]
    assert len(reported) == 1 and "opforge-test-broken-policy" in reported[0]
    assert "RuntimeError: policy plugin exploded" in reported[0]
    assert compiled.get_property("HETERO_PLACEMENT").policy == "greedy"
    np.testing.assert_allclose(compiled([x_value])[0], evaluate_model(swish_model, [x_value])[0], atol=1e-5)
    assert [e.name for e in available_policies()] == ["greedy", "cost"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PolicyLoadWarning)
        with pytest.raises(PolicyLoadError, match=r"hooks that failed: plugin opforge-test-broken-policy 1.0 .*policy plugin exploded"):
            core.compile_model(swish_model, "HETERO:FAST,SLOW", {"PARTITION_POLICY": "nope"})


def test_a_policy_returning_an_impossible_placement_is_named(plugins: PluginSystem, swish_model: Model) -> None:
    plugins.register_module(_WrongPolicyHook(), PluginInfo("wrong_policy", "opforge-test-wrong-policy", "1.0"))
    core = opforge.Core(plugins)
    with pytest.raises(opforge.OpforgeError, match=r"partition policy 'wrong' returned an unusable assignment: "
                                                   r"impossible placements: node 'swish' \(Swish-opset4\) -> FAST "
                                                   r"\(can run on: SLOW\)"):
        core.compile_model(swish_model, "HETERO:FAST,SLOW", {"PARTITION_POLICY": "wrong"})


def test_the_policy_hookspec_belongs_to_hetero() -> None:
    """The core declares no HETERO hook: the plugin adds its own spec (pluggy's add_hookspecs)."""
    from opforge import hookspecs as core_specs
    from opforge_hetero import hookspecs as hetero_specs

    assert not hasattr(core_specs, "opforge_select_partition_policy")
    assert hasattr(hetero_specs.opforge_select_partition_policy, "opforge_spec")
    bare = PluginSystem(autoload=False)
    assert bare.first_result("opforge_select_partition_policy", name="greedy", devices=["CPU"]) is None
    bare.register_module(opforge_hetero.plugin, PluginInfo("hetero", "opforge-hetero", "0.1.0"))
    assert bare.pm.hook.opforge_select_partition_policy.spec is not None


# ============================================================================ async
def two_branches() -> Model:
    """x -> Relu (FAST only here) and x -> Sigmoid (SLOW): two independent sub-graphs."""
    x = param("x")
    a = named(opforge.op("Relu", x, name="relu"), "a")
    b = named(opforge.op("Sigmoid", x, name="sig"), "b")
    return Model([a, b], [x], name="branches")


DELAYS = {"DEVICE_PROPERTIES": {"FAST": {"FAKE_DELAY_S": 0.15}, "SLOW": {"FAKE_DELAY_S": 0.15}}}


def test_independent_subgraphs_overlap(core: opforge.Core, log: Log, x_value: np.ndarray) -> None:
    m = two_branches()
    compiled = compile_quietly(core, m, "HETERO:FAST,SLOW", DELAYS)
    assert compiled.get_property("HETERO_NUMBER_OF_SUBMODELS") == 2
    compiled([x_value])  # warm-up: starts the device queues
    log.runs.clear()
    t0 = time.perf_counter()
    out = compiled([x_value])
    elapsed = time.perf_counter() - t0
    assert log.overlapped("FAST", "SLOW")
    assert elapsed < 0.30, f"two 0.15 s sub-graphs on two devices took {elapsed:.3f} s"
    for a, b in zip(out.to_tuple(), evaluate_model(m, [x_value])):
        np.testing.assert_allclose(a, b, atol=1e-6)
    # HETERO_ASYNC=False runs them one after the other in the caller's thread
    serial = compile_quietly(core, m, "HETERO:FAST,SLOW", {**DELAYS, "HETERO_ASYNC": False})
    log.runs.clear()
    serial([x_value])
    assert not log.overlapped("FAST", "SLOW")


def test_async_infer_queue_on_hetero_pipelines_requests(core: opforge.Core, log: Log, swish_model: Model) -> None:
    compiled = compile_quietly(core, swish_model, "HETERO:FAST,SLOW", DELAYS)
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(6)]
    got: dict[int, np.ndarray] = {}

    def done(request: opforge.InferRequest, userdata: int) -> None:
        got[userdata] = request.results[0].copy()

    queue = AsyncInferQueue(compiled, 3)
    queue.set_callback(done)
    for i, x in enumerate(inputs):
        queue.start_async([x], userdata=i)
    queue.wait_all()
    for i, x in enumerate(inputs):
        np.testing.assert_allclose(got[i], evaluate_model(swish_model, [x])[0], atol=1e-5)
    # consecutive requests overlapped: one request's FAST part ran while another's SLOW part did
    assert log.overlapped("FAST", "SLOW")
    # and each device ran one sub-graph at a time (its queue has one worker: NUM_STREAMS 1)
    for dev in ("FAST", "SLOW"):
        runs = sorted((r for r in log.runs if r.device == dev), key=lambda r: r.start)
        assert all(a.end <= b.start + 1e-4 for a, b in itertools.pairwise(runs))


def test_start_async_and_profiling(core: opforge.Core, swish_model: Model, x_value: np.ndarray) -> None:
    compiled = compile_quietly(core, swish_model, "HETERO:FAST,SLOW", {"ENABLE_PROFILING": True})
    req = compiled.create_infer_request()
    req.start_async([x_value])
    req.wait()
    np.testing.assert_allclose(req.results[0], evaluate_model(swish_model, [x_value])[0], atol=1e-5)
    counters = req.get_profiling_info()
    subs = [c for c in counters if c["node_type"] == "HeteroSubgraph"]
    assert [c["exec_type"] for c in subs] == ["FAST", "SLOW", "FAST"]
    assert subs[1]["transfer_bytes_in"] == 24 and all(c["real_time_ms"] >= 0 for c in subs)


# ============================================================================ dump and query
@pytest.mark.parametrize("suffix", [".dot", ".svg", ".html"])
def test_dump_files_have_device_colours_and_cut_edges(core: opforge.Core, swish_model: Model, tmp_path: Path,
                                                      suffix: str) -> None:
    placement = compile_quietly(core, swish_model, "HETERO:FAST,SLOW").get_property("HETERO_PLACEMENT")
    path = dump_partition(swish_model, placement, tmp_path / f"partition{suffix}")
    text = path.read_text(encoding="utf-8")
    colors = device_colors(["FAST", "SLOW"])
    assert colors["FAST"] != colors["SLOW"]
    assert colors["FAST"] in text and colors["SLOW"] in text
    assert CUT_COLOR in text
    assert "FAST\u2192SLOW" in text and "SLOW\u2192FAST" in text
    if suffix == ".svg":
        import xml.etree.ElementTree as ET

        root = ET.fromstring(text)  # well-formed
        ns = "{http://www.w3.org/2000/svg}"
        cut = [g for g in root.iter(f"{ns}g") if g.get("class") == "cut-edge"]
        assert len(cut) == 2
        devices = sorted(g.get("data-device") for g in root.iter(f"{ns}g") if g.get("class") == "node")
        assert devices == ["FAST", "FAST", "FAST", "FAST", "SLOW"]  # x, relu, add, result; swish
    if suffix == ".dot":
        assert text.startswith('digraph "swish_model" {')
        assert 'subgraph cluster_1 {' in text and 'style=dashed, penwidth=2.5' in text
    if suffix == ".html":
        assert "Swish: no FAST kernel" in text and "<svg" in text and "Cut edges (2)" in text


def test_dump_from_a_query_model_dict(core: opforge.Core, swish_model: Model, tmp_path: Path) -> None:
    text = dump_partition(swish_model, core.query_model(swish_model, "HETERO:FAST,SLOW"),
                          tmp_path / "q.svg").read_text(encoding="utf-8")
    assert text.count('class="cut-edge"') == 2
    with pytest.raises(opforge.OpforgeError, match=r"use a \.dot, \.svg or \.html file name"):
        dump_partition(swish_model, {}, tmp_path / "q.png")


def test_query_command(core: opforge.Core, swish_model: Model, tmp_path: Path) -> None:
    xml = tmp_path / "m.xml"
    opforge.save_model(swish_model, xml)
    out, err = io.StringIO(), io.StringIO()
    assert query_command(core, xml, "HETERO:FAST,SLOW", tmp_path / "p.svg", out=out, err=err) == 0
    text = out.getvalue()
    assert "on HETERO:FAST,SLOW (policy greedy): 3 operations (FAST: 2, SLOW: 1), 3 sub-graphs" in text
    assert "Swish: no FAST kernel" in text and "partition drawn to" in text
    assert (tmp_path / "p.svg").read_text(encoding="utf-8").startswith("<svg")
    # a single device: what it cannot run is listed, and the exit code says so
    out = io.StringIO()
    assert query_command(core, xml, "FAST", None, out=out, err=err) == 1
    assert "swish  Swish  -" in out.getvalue() and "Swish: no FAST kernel" in out.getvalue()
    assert query_command(core, tmp_path / "missing.onnx", "HETERO:FAST,SLOW", None, out=out, err=err) == 2
    assert err.getvalue().startswith("error: ")


def test_explain_without_compiling(core: opforge.Core, swish_model: Model, log: Log) -> None:
    placement = explain(core, swish_model, "HETERO:FAST,SLOW", {"PARTITION_POLICY": "cost"})
    assert placement.policy == "cost" and log.compiles == []
    assert set(placement.assignment()) == {n.name for n in swish_model.get_ordered_ops()}


class _PolicyHookPlugin:
    """A plugin answering the first-result hook: it supplies 'everything_last' and replaces the
    default 'greedy' too, which is what the hook is for."""

    @opforge.hookimpl
    def opforge_select_partition_policy(self, name: str, devices: list[str]) -> Any:
        from opforge_hetero.policy import Decision, PartitionPolicy

        if name not in ("everything_last", "greedy"):
            return None

        class EverythingLast(PartitionPolicy):
            def assign(self, model, supported_by_device, devices, ctx):  # type: ignore[no-untyped-def]
                last = devices[-1]
                return {n: Decision(last, f"hook policy for {name}") for n in ctx.nodes
                        if n in supported_by_device[last]}

        return EverythingLast()


def test_hook_opforge_select_partition_policy(plugins: PluginSystem, swish_model: Model,
                                              x_value: np.ndarray) -> None:
    plugins.register_module(_PolicyHookPlugin(), PluginInfo("policy_hook", "opforge-test-policy", "2.0"))
    core = opforge.Core(plugins)
    for policy in ("everything_last", "greedy"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compiled = core.compile_model(swish_model, "HETERO:FAST,SLOW", {"PARTITION_POLICY": policy})
        placement = compiled.get_property("HETERO_PLACEMENT")
        assert {p.device for p in placement.operations()} == {"SLOW"}
        assert placement.nodes["relu"].reason == f"hook policy for {policy}"
        assert "opforge-test-policy 2.0" in compiled.get_property("HETERO_PARTITION_POLICY_SOURCE")
        np.testing.assert_allclose(compiled([x_value])[0], evaluate_model(swish_model, [x_value])[0], atol=1e-5)
