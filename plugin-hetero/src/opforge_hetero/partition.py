"""Cutting a placed model into sub-graphs: connected same-device regions, kept acyclic, each cut
into its own :class:`~opforge.graph.Model` (Parameters for incoming tensors, Results for
outgoing ones) and ordered so every sub-graph runs after those it reads from."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from opforge.graph import Model, Node, Output
from opforge.plugins.registry import OpRegistry

from opforge_hetero.graphinfo import ModelGraph, Port


@dataclasses.dataclass
class Group:
    """One sub-graph before cutting: a device and its nodes in topological order."""

    device: str
    nodes: list[str]
    depends_on: list[int] = dataclasses.field(default_factory=list)


def form_groups(graph: ModelGraph, device_of: Mapping[str, str]) -> list[Group]:
    """Connected same-device regions of the nodes in ``device_of``, acyclic, in execution order.

    Nodes are visited in topological order; a node joins the groups of its same-device producers
    unless that would make a cycle between groups (A -> B -> A through another device), checked
    with each group's transitive dependencies kept as a bitmask.
    """
    group_of: dict[str, int] = {}
    members: dict[int, list[str]] = {}
    device: dict[int, str] = {}
    deps: dict[int, int] = {}  # group -> bitmask of the groups it depends on, transitively
    next_id = 0
    for name in graph.compute:
        if name not in device_of:
            continue
        dev = device_of[name]
        preds: list[int] = []
        for src in graph.node(name).inputs:
            g = group_of.get(src.node.name)
            if g is not None and g not in preds:
                preds.append(g)
        chosen: list[int] = []
        for g in (p for p in preds if device[p] == dev):
            trial = [*chosen, g]
            if _acyclic(trial, preds, deps):
                chosen = trial
        if chosen:
            gid = chosen[0]
        else:
            gid = next_id
            next_id += 1
            members[gid], device[gid], deps[gid] = [], dev, 0
            chosen = [gid]
        merged_bits = _bits(chosen)
        new_deps = 0
        for g in chosen:
            new_deps |= deps[g]
        for p in preds:
            if p not in chosen:
                new_deps |= (1 << p) | deps[p]
        new_deps &= ~merged_bits
        for g in chosen[1:]:
            members[gid].extend(members.pop(g))
            del device[g], deps[g]
            for n in members[gid]:
                group_of[n] = gid
        members[gid].append(name)
        group_of[name] = gid
        deps[gid] = new_deps
        # Groups that depended on any merged group now depend on the merged group and on all it
        # waits for, so later cycle checks see the whole picture.
        for k in deps:
            if k != gid and deps[k] & merged_bits:
                deps[k] = (deps[k] & ~merged_bits) | (1 << gid) | new_deps
    return _ordered(graph, members, device, deps)


def _bits(groups: Sequence[int]) -> int:
    out = 0
    for g in groups:
        out |= 1 << g
    return out


def _acyclic(merge: Sequence[int], preds: Sequence[int], deps: Mapping[int, int]) -> bool:
    """Whether merging ``merge`` (plus the new node reading ``preds``) keeps groups acyclic: no
    group outside the merge may both depend on it and be depended on by it."""
    bits = _bits(merge)
    needed = 0
    for g in merge:
        needed |= deps[g]
    for p in preds:
        if p not in merge:
            needed |= (1 << p) | deps[p]
    needed &= ~bits
    h = 0
    while needed:
        if needed & 1 and deps[h] & bits:
            return False
        needed >>= 1
        h += 1
    return True


def _ordered(graph: ModelGraph, members: dict[int, list[str]], device: dict[int, str],
             deps: dict[int, int]) -> list[Group]:
    # Direct dependencies, from the data edges (the bitmasks are transitive).
    group_of = {n: g for g, ns in members.items() for n in ns}
    direct: dict[int, set[int]] = {g: set() for g in members}
    for g, ns in members.items():
        for n in ns:
            for src in graph.node(n).inputs:
                h = group_of.get(src.node.name)
                if h is not None and h != g:
                    direct[g].add(h)
    first = {g: min(graph.index[n] for n in ns) for g, ns in members.items()}
    order: list[int] = []
    done: set[int] = set()
    remaining = set(members)
    while remaining:
        ready = sorted((g for g in remaining if direct[g] <= done), key=first.__getitem__)
        if not ready:  # form_groups never builds a cycle; this guards a logic error loudly
            raise RuntimeError("HETERO internal error: sub-graphs depend on each other in a cycle")
        g = ready[0]
        order.append(g)
        done.add(g)
        remaining.discard(g)
    new_index = {g: i for i, g in enumerate(order)}
    return [Group(device[g], sorted(members[g], key=graph.index.__getitem__),
                  sorted(new_index[h] for h in direct[g])) for g in order]


# ============================================================================ cutting
#: where a sub-graph input (or a model output) comes from
@dataclasses.dataclass(frozen=True)
class Source:
    kind: str  # "input" (model input), "sub" (a sub-graph's output), "const" (a fixed value)
    index: int = 0   # model input index, or sub-graph index
    port: int = 0    # output index of that sub-graph
    value: Any = None

    def describe(self) -> str:
        if self.kind == "input":
            return f"model input {self.index}"
        if self.kind == "sub":
            return f"output {self.port} of sub-graph {self.index}"
        return "a constant"


@dataclasses.dataclass
class SubModel:
    """A cut sub-graph ready to compile: its model and where its inputs come from."""

    index: int
    device: str
    model: Model
    inputs: list[Source]
    #: the original ports its Results carry, in order
    outputs: list[Port]
    depends_on: list[int]


@dataclasses.dataclass
class Cut:
    submodels: list[SubModel]
    #: where each model output comes from
    outputs: list[Source]


def cut(graph: ModelGraph, groups: Sequence[Group], replicated: Mapping[str, Sequence[str]],
        registry: OpRegistry) -> Cut:
    """One :class:`Model` per group. Constants and replicated constant sub-graphs are cloned
    into every sub-graph that reads them, so weights never travel between devices."""
    group_of = {n: i for i, g in enumerate(groups) for n in g.nodes}
    # Outputs of each group: ports read by another group or by a model Result, in node order.
    outputs: list[list[Port]] = [[] for _ in groups]
    for i, g in enumerate(groups):
        for n in g.nodes:
            for port in graph.out_ports(n):
                readers = graph.consumers.get(port, [])
                if any(group_of.get(r) != i for r in readers):
                    outputs[i].append(port)
    out_index = [{p: k for k, p in enumerate(ports)} for ports in outputs]
    subs: list[SubModel] = []
    for i, g in enumerate(groups):
        subs.append(_cut_one(graph, i, g, group_of, outputs[i], out_index, replicated, registry))
    model_outputs: list[Source] = []
    for r in graph.model.results:
        src = r.inputs[0]
        model_outputs.append(_source(graph, (src.node.name, src.index), group_of, out_index))
    return Cut(subs, model_outputs)


def _source(graph: ModelGraph, port: Port, group_of: Mapping[str, int],
            out_index: Sequence[Mapping[Port, int]]) -> Source:
    node = graph.node(port[0])
    if node.type_name == "Parameter":
        return Source("input", graph.parameter_index[node.name])
    if node.type_name == "Constant":
        return Source("const", value=node.constant_value())
    g = group_of[port[0]]
    return Source("sub", g, out_index[g][port])


def _cut_one(graph: ModelGraph, index: int, group: Group, group_of: Mapping[str, int],
             outputs: Sequence[Port], out_index: Sequence[Mapping[Port, int]],
             replicated: Mapping[str, Sequence[str]], registry: OpRegistry) -> SubModel:
    made: dict[str, Node] = {}
    params: list[Node] = []
    sources: list[Source] = []
    param_of: dict[Port, Output] = {}
    used_names: set[str] = set(group.nodes)

    def clone(node: Node) -> Node:
        new = Node(node.op, [feed(i) for i in node.inputs], node.attrs, node.name,
                   output_specs=node.output_specs)
        new.output_names = [list(x) for x in node.output_names]
        new.rt_info = dict(node.rt_info)
        made[node.name] = new
        used_names.add(node.name)
        return new

    def feed(src: Output) -> Output:
        port = (src.node.name, src.index)
        node = src.node
        if node.name in made:
            return made[node.name].output(src.index)
        if node.type_name == "Constant" or group.device in replicated.get(node.name, ()):
            return clone(node).output(src.index)
        if port not in param_of:
            name = _unique(f"{src.any_name}/hetero_input", used_names)
            p = Node.create("Parameter", [], {"element_type": src.element_type, "shape": src.partial_shape},
                            name=name, registry=registry)
            p.output(0).set_names(src.names or [src.any_name])
            params.append(p)
            sources.append(_source(graph, port, group_of, out_index))
            param_of[port] = p.output(0)
        return param_of[port]

    for n in group.nodes:
        clone(graph.node(n))
    results = []
    for port in outputs:
        out = made[port[0]].output(port[1])
        name = _unique(f"{out.any_name}/hetero_output", used_names)
        results.append(Node.create("Result", [out], name=name, registry=registry))
    model = Model(results, params, name=f"{graph.model.name}/subgraph{index}_{group.device}")
    return SubModel(index, group.device, model, sources, list(outputs), list(group.depends_on))


def _unique(name: str, used: set[str]) -> str:
    out, k = name, 1
    while out in used:
        k += 1
        out = f"{name}{k}"
    used.add(out)
    return out

