"""The HETERO device: ``HETERO:GPU,CPU`` runs each node on the first listed device that supports
it (or where a policy or a manual affinity puts it), cuts the model into per-device sub-graphs,
compiles each on its device and runs them in order with the tensors passed between them."""

from __future__ import annotations

import contextlib
import dataclasses
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from opforge.errors import DeviceNotFoundError, OpforgeError, PropertyError, UnsupportedOpError
from opforge.graph import Model
from opforge.op import STRUCTURAL
from opforge.runtime.device import CompileContext, Device, Executable
from opforge.runtime.device_name import parse_device_name
from opforge.runtime.properties import COMMON_PROPERTIES, PropertySpec

from opforge_hetero import partition
from opforge_hetero.cost import CostModel, default_gflops, port_bytes
from opforge_hetero.errors import AffinityError, PartitionError
from opforge_hetero.executable import CompiledSubgraph, HeteroExecutable
from opforge_hetero.graphinfo import CONSTANT, DATA, SHAPE, ModelGraph
from opforge_hetero.placement import (
    COMPUTE,
    CONSTANT_SUBGRAPH,
    INPUT,
    OUTPUT,
    SHAPE_SUBGRAPH,
    UNSUPPORTED,
    WEIGHT,
    NodePlacement,
    Placement,
    SubgraphInfo,
    Transfer,
)
from opforge_hetero.policy import Decision, PolicyContext, select_policy

#: the rt_info key of a manual affinity (OpenVINO's name)
AFFINITY = "affinity"

HETERO_PROPERTIES: tuple[PropertySpec, ...] = (
    *COMMON_PROPERTIES,
    PropertySpec("MULTI_DEVICE_PRIORITIES", str, "",
                 doc="devices in priority order ('GPU,CPU'); the list in 'HETERO:GPU,CPU' wins over it"),
    PropertySpec("DEVICE_PROPERTIES", dict, {},
                 doc="properties per device, e.g. {'GPU': {'ENABLE_PROFILING': True}, 'CPU': {...}}"),
    PropertySpec("PARTITION_POLICY", str, "greedy",
                 doc="'greedy', 'cost', or a policy a plugin supplies through opforge_select_partition_policy"),
    PropertySpec("HETERO_SMOOTHING_MAX_OPS", int, 2, minimum=0,
                 doc="greedy: largest island of cheap ops moved to its neighbours' device to avoid "
                     "transfers; 0 turns smoothing off"),
    PropertySpec("HETERO_DEVICE_GFLOPS", dict, {},
                 doc="cost: speed per device in GFLOP/s, e.g. {'GPU': 2000, 'CPU': 300}"),
    PropertySpec("HETERO_TRANSFER_GBPS", float, 8.0, minimum=1e-9,
                 doc="cost: bandwidth of a transfer between devices, GB/s"),
    PropertySpec("HETERO_TRANSFER_LATENCY_US", float, 20.0, minimum=0,
                 doc="cost: fixed cost of one transfer, microseconds"),
    PropertySpec("HETERO_ASYNC", bool, True,
                 doc="run sub-graphs on per-device queues so independent ones and consecutive "
                     "requests overlap; False runs them one after another in the caller's thread"),
    PropertySpec("HETERO_FALLBACK_WARNING", bool, True,
                 doc="warn (once per compiled model) when operations fall back from the first device"),
)

#: HETERO properties that concern HETERO only; the common ones may be forwarded to the devices
_OWN = {s.name for s in HETERO_PROPERTIES} - {s.name for s in COMMON_PROPERTIES}


class HeteroFallbackWarning(UserWarning):
    """Operations of a model run on a device other than the first one listed for HETERO."""


@dataclasses.dataclass
class Plan:
    """Everything compiling needs: the placement report plus the internal maps behind it."""

    placement: Placement
    graph: ModelGraph
    groups: list[partition.Group]
    replicated: dict[str, tuple[str, ...]]
    device_config: dict[str, dict[str, Any]]
    policy_source: str


class HeteroDevice(Device):
    property_specs = HETERO_PROPERTIES
    is_meta = True

    def full_name(self, device_name: str) -> str:
        targets = parse_device_name(device_name).targets
        return ("Heterogeneous device: splits a model across " + ", ".join(targets)) if targets else \
            "Heterogeneous device (give the devices as HETERO:GPU,CPU)"

    def query_model(self, model: Model, ctx: CompileContext) -> dict[str, str]:
        """Where each node would run; nodes no listed device supports are left out."""
        return plan(model, ctx, strict=False).placement.assignment()

    def compile_model(self, model: Model, ctx: CompileContext) -> Executable:
        p = plan(model, ctx, strict=True)
        if ctx.config.get("HETERO_FALLBACK_WARNING", True):
            _warn_fallback(p.placement)
        return _compile(model, p, ctx)


# ============================================================================ planning
def target_devices(ctx: CompileContext) -> tuple[str, ...]:
    """The device list, from the name (``HETERO:GPU,CPU``) or ``MULTI_DEVICE_PRIORITIES``."""
    targets = parse_device_name(ctx.device_name).targets
    if not targets:
        text = str(ctx.config.get("MULTI_DEVICE_PRIORITIES") or "")
        targets = tuple(t.strip().upper() for t in text.split(",") if t.strip())
    if not targets:
        raise DeviceNotFoundError(
            "HETERO needs a list of devices in priority order: compile for 'HETERO:GPU,CPU', or set "
            "MULTI_DEVICE_PRIORITIES='GPU,CPU'")
    for t in targets:
        base = parse_device_name(t).base
        if base == parse_device_name(ctx.device_name).base:
            raise DeviceNotFoundError(f"{ctx.device_name}: HETERO cannot list itself as a target device")
    dup = sorted({t for t in targets if targets.count(t) > 1})
    if dup:
        raise DeviceNotFoundError(f"{ctx.device_name}: device {', '.join(dup)} is listed twice")
    return targets


def device_configs(ctx: CompileContext, devices: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The properties each device is compiled with: common HETERO properties the caller set or
    changed from their defaults (when the device declares them), overridden by
    ``DEVICE_PROPERTIES[device]``. One left unset takes each device's own default (the CPU's
    precision: bf16 on a bf16 host, as in OpenVINO's HETERO); one set to HETERO's default
    (``INFERENCE_PRECISION_HINT=f32``) is passed on all the same."""
    per_device = ctx.config.get("DEVICE_PROPERTIES") or {}
    wanted: dict[str, Mapping[str, Any]] = {}
    for key, value in per_device.items():
        dev = str(key).strip().upper()
        if dev not in devices:
            raise PropertyError(
                f"DEVICE_PROPERTIES has settings for {key}, which is not one of the devices of "
                f"{ctx.device_name} ({', '.join(devices)})")
        if not isinstance(value, Mapping):
            raise PropertyError(
                f"DEVICE_PROPERTIES['{key}'] must be a dict of properties for {dev}, got {value!r}")
        wanted[dev] = value
    defaults = {s.name: s.default for s in COMMON_PROPERTIES}
    forwarded = {k: v for k, v in ctx.config.items() if k in defaults and (k in ctx.explicit or v != defaults[k])}
    out: dict[str, dict[str, Any]] = {}
    for dev in devices:
        cfg: dict[str, Any] = {}
        if forwarded:
            supported = set(ctx.core.get_property(dev, "SUPPORTED_PROPERTIES"))
            cfg.update({k: v for k, v in forwarded.items() if k in supported})
        cfg.update(wanted.get(dev, {}))
        out[dev] = cfg
    return out


def cost_model(ctx: CompileContext, devices: Sequence[str]) -> CostModel:
    gflops = default_gflops(devices)
    for dev in devices:
        # A device may state its own speed (none of the core's common properties does).
        with contextlib.suppress(OpforgeError, TypeError, ValueError):
            gflops[dev] = float(ctx.core.get_property(dev, "DEVICE_GFLOPS"))
    given = ctx.config.get("HETERO_DEVICE_GFLOPS") or {}
    for key, value in given.items():
        dev = str(key).strip().upper()
        if dev not in devices:
            raise PropertyError(f"HETERO_DEVICE_GFLOPS names {key}, which is not one of the devices of "
                                f"{ctx.device_name} ({', '.join(devices)})")
        try:
            speed = float(value)
        except (TypeError, ValueError):
            raise PropertyError(f"HETERO_DEVICE_GFLOPS['{key}'] must be a number, got {value!r}") from None
        if speed <= 0:
            raise PropertyError(f"HETERO_DEVICE_GFLOPS['{key}'] must be > 0, got {value!r}")
        gflops[dev] = speed
    return CostModel(gflops, float(ctx.config.get("HETERO_TRANSFER_GBPS", 8.0)),
                     float(ctx.config.get("HETERO_TRANSFER_LATENCY_US", 20.0)) * 1e-6)


def plan(model: Model, ctx: CompileContext, *, strict: bool) -> Plan:
    """Place every node and form the sub-graphs. ``strict``: a node no device supports is an
    error (compiling) rather than a gap in the report (querying)."""
    devices = target_devices(ctx)
    configs = device_configs(ctx, devices)
    graph = ModelGraph(model)
    supported: dict[str, set[str]] = {}
    for dev in devices:
        answer = ctx.core.query_model(model, dev, configs[dev])
        supported[dev] = {n for n in answer if n in graph.kind}
    pinned = _affinities(graph, devices, supported)
    unsupported = [n for n in graph.compute if not any(n in supported[d] for d in devices)]
    if unsupported and strict:
        listed = "; ".join(f"node {graph.label(n)}" for n in unsupported[:10])
        more = f" (and {len(unsupported) - 10} more)" if len(unsupported) > 10 else ""
        raise UnsupportedOpError(
            f"{ctx.device_name}: no listed device can run {len(unsupported)} operation(s): {listed}{more}. "
            f"Add a device that supports them to the list, or install a plugin with kernels for them")
    placeable = tuple(n for n in graph.compute if n not in unsupported)
    candidates = {d: frozenset(n for n in supported[d] if pinned.get(n, d) == d) for d in devices}
    followers = frozenset(n for n in placeable if graph.kind[n] in (CONSTANT, SHAPE) and n not in pinned)
    policy_name = str(ctx.config.get("PARTITION_POLICY") or "greedy")
    policy, source = select_policy(policy_name, ctx, devices)
    pctx = PolicyContext(ctx, ctx.config, configs, cost_model(ctx, devices), graph,
                         frozenset(pinned), followers, placeable)
    raw = policy.assign(model, candidates, devices, pctx)
    device_of, reasons = _check_assignment(raw, graph, placeable, followers, candidates, devices, policy_name)
    for n, d in pinned.items():
        reasons[n] = "affinity"
        device_of[n] = d
    replicated = _rehome_followers(graph, device_of, reasons, followers, candidates, devices)
    members = {n: d for n, d in device_of.items() if n not in replicated}
    groups = partition.form_groups(graph, members)
    placement = _placement(graph, ctx, devices, policy_name, device_of, reasons, replicated, groups,
                           unsupported, supported, pinned)
    return Plan(placement, graph, groups, replicated, configs, f"{policy_name} ({source})")


def _affinities(graph: ModelGraph, devices: Sequence[str], supported: Mapping[str, set[str]]) -> dict[str, str]:
    pinned: dict[str, str] = {}
    problems: list[str] = []
    for node in graph.order:
        raw = node.rt_info.get(AFFINITY)
        if raw is None or raw == "":
            continue
        dev = str(raw).strip().upper()
        if dev not in devices:
            problems.append(f"node {graph.label(node.name)} has affinity '{raw}', which is not one of "
                            f"the HETERO devices ({', '.join(devices)})")
            continue
        if node.type_name in STRUCTURAL:
            continue  # inputs, outputs and weights go where their neighbours are
        if node.name not in supported[dev]:
            able = [d for d in devices if node.name in supported[d]]
            problems.append(f"node {graph.label(node.name)} has affinity {dev}, but {dev} cannot run it "
                            f"({node.type_name} is not in {dev}'s query_model); "
                            + (f"devices that can: {', '.join(able)}" if able else "no listed device can"))
            continue
        pinned[node.name] = dev
    if problems:
        raise AffinityError("invalid affinity: " + "; ".join(problems))
    return pinned


def _check_assignment(raw: Mapping[str, Any], graph: ModelGraph, placeable: Sequence[str],
                      followers: frozenset[str], candidates: Mapping[str, frozenset[str]],
                      devices: Sequence[str], policy: str) -> tuple[dict[str, str], dict[str, str]]:
    device_of: dict[str, str] = {}
    reasons: dict[str, str] = {}
    missing: list[str] = []
    wrong: list[str] = []
    for n in placeable:
        value = raw.get(n)
        if value is None:
            if n in followers:
                dev = next(d for d in devices if n in candidates[d])
                device_of[n] = dev
                continue
            missing.append(n)
            continue
        dev, why = (value.device, value.reason) if isinstance(value, Decision) else (value, "")
        dev = str(dev).strip().upper()
        if dev not in devices or n not in candidates[dev]:
            able = [d for d in devices if n in candidates[d]]
            wrong.append(f"node {graph.label(n)} -> {dev} (can run on: {', '.join(able)})")
            continue
        device_of[n] = dev
        if why:
            reasons[n] = why
    if missing or wrong:
        parts = []
        if missing:
            parts.append("no device for " + ", ".join(graph.label(n) for n in missing[:10]))
        if wrong:
            parts.append("impossible placements: " + "; ".join(wrong[:10]))
        raise PartitionError(f"partition policy '{policy}' returned an unusable assignment: " + "; ".join(parts))
    return device_of, reasons


def _rehome_followers(graph: ModelGraph, device_of: dict[str, str], reasons: dict[str, str],
                      followers: frozenset[str], candidates: Mapping[str, frozenset[str]],
                      devices: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Shape sub-graphs move to their consumers' device; constant sub-graphs are replicated on
    every device that reads them, so no weight is ever transferred. Consumers first (reverse
    topological order), so a chain of followers follows the node at its end."""
    replicated: dict[str, tuple[str, ...]] = {}
    order = [n for n in reversed(graph.compute) if n in followers]

    def consumer_devices(name: str) -> list[str]:
        out: list[str] = []
        for port in graph.out_ports(name):
            for user in graph.consumers.get(port, []):
                if graph.node(user).type_name == "Result":
                    found: Sequence[str] = [device_of[name]]
                elif user in replicated:
                    found = replicated[user]
                else:
                    found = [device_of[user]] if user in device_of else []
                out.extend(d for d in found if d not in out)
        return sorted(out, key=devices.index)

    for n in order:
        if graph.kind[n] != SHAPE:
            continue
        users = consumer_devices(n)
        able = [d for d in users if n in candidates[d]]
        if len(set(users)) == 1 and able:
            dev = able[0]
        elif device_of[n] in users:
            dev = device_of[n]
        elif able:
            dev = able[0]
        else:
            dev = device_of[n]
        if dev != device_of[n] or n not in reasons:
            reasons[n] = f"shape sub-graph: follows its consumer on {dev}"
        device_of[n] = dev
    for n in order:
        if graph.kind[n] != CONSTANT:
            continue
        feeds_result = any(graph.node(u).type_name == "Result"
                           for p in graph.out_ports(n) for u in graph.consumers.get(p, []))
        users = consumer_devices(n)
        if not feeds_result and users and all(n in candidates[d] for d in users):
            replicated[n] = tuple(users)
            device_of[n] = users[0]
            reasons[n] = ("constant sub-graph: replicated on " + ", ".join(users)
                          + " next to its consumers (no transfer)" if len(users) > 1 else
                          f"constant sub-graph: follows its consumers on {users[0]} (no transfer)")
        else:
            lacking = [d for d in users if n not in candidates[d]]
            if lacking:
                reasons[n] = (f"constant sub-graph: no {', '.join(lacking)} kernel, computed on "
                              f"{device_of[n]} and transferred")
            elif feeds_result:
                reasons[n] = f"constant sub-graph feeding a model output: computed on {device_of[n]}"
    return replicated


def _default_reason(graph: ModelGraph, name: str, dev: str, devices: Sequence[str],
                    supported: Mapping[str, set[str]], policy: str) -> str:
    node = graph.node(name)
    before = devices[: devices.index(dev)]
    lacking = [d for d in before if name not in supported[d]]
    if not before:
        return f"{dev} is the first device"
    if len(lacking) == len(before):
        return f"{node.type_name}: no {', '.join(lacking)} kernel"
    return f"placed on {dev} by policy '{policy}'"


def _placement(graph: ModelGraph, ctx: CompileContext, devices: Sequence[str], policy: str,
               device_of: Mapping[str, str], reasons: Mapping[str, str],
               replicated: Mapping[str, tuple[str, ...]], groups: Sequence[partition.Group],
               unsupported: Sequence[str], supported: Mapping[str, set[str]],
               pinned: Mapping[str, str]) -> Placement:
    group_of = {n: i for i, g in enumerate(groups) for n in g.nodes}
    nodes: dict[str, NodePlacement] = {}
    # Which devices read each tensor: weights and inputs are placed by their readers.
    def readers(name: str) -> tuple[str, ...]:
        devs: list[str] = []
        for port in graph.out_ports(name):
            for u in graph.consumers.get(port, []):
                for d in replicated.get(u, (device_of[u],) if u in device_of else ()):
                    if d not in devs:
                        devs.append(d)
        return tuple(sorted(devs, key=devices.index))

    for node in graph.order:
        n, t = node.name, node.type_name
        if t == "Parameter":
            devs = readers(n)
            nodes[n] = NodePlacement(n, t, devs[0] if devs else devices[0], devs,
                                     "model input" + (f", read on {', '.join(devs)}" if devs else ""), INPUT)
        elif t == "Constant":
            devs = readers(n)
            nodes[n] = NodePlacement(n, t, devs[0] if devs else None, devs,
                                     "weights: copied into each sub-graph that reads them (no transfer)", WEIGHT)
        elif t == "Result":
            producer = node.inputs[0].node.name
            dev = nodes[producer].device if producer in nodes else None
            nodes[n] = NodePlacement(n, t, dev, (dev,) if dev else (), "model output", OUTPUT,
                                     group_of.get(producer))
        elif n in unsupported:
            nodes[n] = NodePlacement(n, t, None, (), f"{t}: no {', '.join(devices)} kernel", UNSUPPORTED)
        else:
            kind = {DATA: COMPUTE, CONSTANT: CONSTANT_SUBGRAPH, SHAPE: SHAPE_SUBGRAPH}[graph.kind[n]]
            if n in pinned:
                kind = COMPUTE
            dev = device_of[n]
            devs = replicated.get(n, (dev,))
            why = reasons.get(n) or _default_reason(graph, n, dev, devices, supported, policy)
            nodes[n] = NodePlacement(n, t, devs[0], devs, why, kind, group_of.get(n))
    transfers: list[Transfer] = []
    seen: set[tuple[str, int, int]] = set()
    for gi, g in enumerate(groups):
        for n in g.nodes:
            for src in graph.node(n).inputs:
                h = group_of.get(src.node.name)
                if h is None or h == gi or groups[h].device == g.device:
                    continue
                key = (src.node.name, src.index, gi)
                if key in seen:
                    continue
                seen.add(key)
                transfers.append(Transfer(src.any_name, src.node.name, src.index, groups[h].device,
                                          g.device, h, gi, port_bytes(src)))
    subgraphs = [SubgraphInfo(i, g.device, tuple(g.nodes), tuple(g.depends_on)) for i, g in enumerate(groups)]
    notes = []
    if policy == "cost":
        notes.append("cost model: " + cost_model(ctx, devices).describe(devices))
    return Placement(graph.model.name, ctx.device_name, tuple(devices), policy, nodes, subgraphs, transfers, notes)


# ============================================================================ compiling
def _compile(model: Model, p: Plan, ctx: CompileContext) -> HeteroExecutable:
    graph, placement = p.graph, p.placement
    devices = placement.devices
    used = {d for g in p.groups for d in [g.device]} | {d for ds in p.replicated.values() for d in ds}
    if len(used) <= 1:
        # Everything on one device: compile the model as it is -- one sub-graph, no transfers,
        # nothing between the user and the device but a function call.
        dev = next(iter(used)) if used else devices[0]
        compiled = ctx.core.compile_model(model, dev, p.device_config[dev])
        placement.subgraphs = [SubgraphInfo(0, dev, tuple(graph.compute), ())]
        placement.nodes = {n: dataclasses.replace(np_, subgraph=0) if np_.kind not in (INPUT, WEIGHT) else np_
                           for n, np_ in placement.nodes.items()}
        sub = CompiledSubgraph(0, dev, compiled, [partition.Source("input", i) for i in range(len(model.parameters))], [])
        outputs = [partition.Source("sub", 0, k) for k in range(len(model.results))]
        return HeteroExecutable([sub], outputs, placement, use_queues=False, policy_source=p.policy_source)
    cut = partition.cut(graph, p.groups, p.replicated, ctx.plugins.ops)
    subs: list[CompiledSubgraph] = []
    for sm in cut.submodels:
        try:
            compiled = ctx.core.compile_model(sm.model, sm.device, p.device_config[sm.device])
        except OpforgeError as err:
            add = getattr(err, "add_note", None)
            if add is not None:
                add(f"while compiling HETERO sub-graph {sm.index} ({len(p.groups[sm.index].nodes)} nodes, "
                    f"first '{p.groups[sm.index].nodes[0]}') on {sm.device}")
            raise
        subs.append(CompiledSubgraph(sm.index, sm.device, compiled, sm.inputs, sm.depends_on))
    return HeteroExecutable(subs, cut.outputs, placement, use_queues=bool(ctx.config.get("HETERO_ASYNC", True)),
                            policy_source=p.policy_source)


def _warn_fallback(placement: Placement) -> None:
    # Nodes pinned by an affinity are where the user asked for them: nothing to warn about.
    moved = [p for p in placement.fallbacks() if p.reason != "affinity"]
    if not moved:
        return
    first = placement.devices[0]
    shown = "; ".join(f"'{p.name}' -> {p.device} ({p.reason})" for p in moved[:5])
    more = f"; and {len(moved) - 5} more" if len(moved) > 5 else ""
    warnings.warn(
        f"{placement.device_name}: {len(moved)} of {len(placement.operations())} operations of model "
        f"'{placement.model_name}' do not run on {first}: {shown}{more}. {len(placement.subgraphs)} "
        f"sub-graph(s), {len(placement.transfers)} transfer(s) per inference. Details: "
        "compiled_model.get_property('HETERO_PLACEMENT_REPORT')",
        HeteroFallbackWarning, stacklevel=4)
