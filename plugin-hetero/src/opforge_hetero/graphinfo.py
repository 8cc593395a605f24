"""What HETERO needs to know about a model's graph: nodes by name, who reads which port, and which
nodes only compute on weights or shapes (those follow their consumers instead of being placed)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from opforge.errors import ModelValidationError
from opforge.graph import Model, Node, Output
from opforge.op import STRUCTURAL  # no computation: these go wherever their neighbours are

#: a port: (producer node name, output index)
Port = tuple[str, int]

#: node kinds for compute nodes
DATA = "data"          # depends on a model input's values
CONSTANT = "constant"  # depends only on Constants: its value is fixed at compile time
SHAPE = "shape"        # depends on model inputs only through their shapes (ShapeOf chains)


class ModelGraph:
    """An index over a model's nodes, keyed by node name (the key ``query_model`` uses)."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.order: list[Node] = model.get_ordered_ops()
        self.nodes: dict[str, Node] = {}
        for n in self.order:
            other = self.nodes.get(n.name)
            if other is not None and other is not n:
                # query_model answers by node name, so two nodes with one name cannot be told apart.
                raise ModelValidationError(
                    f"model '{model.name}': two nodes are named '{n.name}' ({other.type_name} and "
                    f"{n.type_name}); HETERO places nodes by name, so names must be unique"
                )
            self.nodes[n.name] = n
        self.index: dict[str, int] = {n.name: i for i, n in enumerate(self.order)}
        self.compute: list[str] = [n.name for n in self.order if n.type_name not in STRUCTURAL]
        self.consumers: dict[Port, list[str]] = {}
        for n in self.order:
            for src in n.inputs:
                users = self.consumers.setdefault((src.node.name, src.index), [])
                if n.name not in users:
                    users.append(n.name)
        self.kind: dict[str, str] = self._classify()
        self.parameter_index: dict[str, int] = {p.name: i for i, p in enumerate(model.parameters)}

    def _classify(self) -> dict[str, str]:
        kind: dict[str, str] = {}
        for n in self.order:
            if n.type_name in STRUCTURAL:
                continue
            if n.type_name == "ShapeOf":
                kind[n.name] = SHAPE
                continue
            srcs = [self._source_kind(i.node, kind) for i in n.inputs]
            if all(s == CONSTANT for s in srcs):
                kind[n.name] = CONSTANT
            elif all(s in (CONSTANT, SHAPE) for s in srcs):
                kind[n.name] = SHAPE
            else:
                kind[n.name] = DATA
        return kind

    @staticmethod
    def _source_kind(node: Node, kind: Mapping[str, str]) -> str:
        if node.type_name == "Constant":
            return CONSTANT
        if node.type_name == "Parameter":
            return DATA
        return kind[node.name]

    def node(self, name: str) -> Node:
        return self.nodes[name]

    def port(self, port: Port) -> Output:
        return self.nodes[port[0]].output(port[1])

    def out_ports(self, name: str) -> list[Port]:
        return [(name, i) for i in range(len(self.nodes[name].output_specs))]

    def label(self, name: str) -> str:
        """``'sw' (Swish-opset4)``: how errors and reports name a node."""
        n = self.nodes[name]
        return f"'{n.name}' ({n.type_name}-{n.version})"


class DataflowView:
    """The data edges between a subset of compute nodes (those a policy places): which ports each
    node reads and which nodes read each port. Transfers are counted over these edges only."""

    def __init__(self, graph: ModelGraph, nodes: Iterable[str]) -> None:
        self.graph = graph
        keep = set(nodes)
        self.nodes: list[str] = [n for n in graph.compute if n in keep]
        self.members = frozenset(self.nodes)
        self.port_consumers: dict[Port, list[str]] = {}
        self.in_ports: dict[str, list[Port]] = {n: [] for n in self.nodes}
        self.out_ports: dict[str, list[Port]] = {n: [] for n in self.nodes}
        for n in self.nodes:
            for src in graph.node(n).inputs:
                p = (src.node.name, src.index)
                if p[0] not in self.members:
                    continue
                if p not in self.in_ports[n]:
                    self.in_ports[n].append(p)
                users = self.port_consumers.setdefault(p, [])
                if n not in users:
                    users.append(n)
        for p in self.port_consumers:
            self.out_ports[p[0]].append(p)
        self.neighbours: dict[str, set[str]] = {n: set() for n in self.nodes}
        for p, users in self.port_consumers.items():
            for u in users:
                self.neighbours[p[0]].add(u)
                self.neighbours[u].add(p[0])

    def ports_touching(self, nodes: Iterable[str]) -> set[Port]:
        out: set[Port] = set()
        for n in nodes:
            out.update(self.in_ports[n])
            out.update(self.out_ports[n])
        return out

    def targets(self, port: Port, device_of: Mapping[str, str]) -> set[str]:
        """Devices other than the producer's that read ``port``: one transfer each."""
        src = device_of[port[0]]
        return {device_of[u] for u in self.port_consumers.get(port, ())} - {src}

    def islands(self, device_of: Mapping[str, str]) -> list[list[str]]:
        """Connected regions of nodes on one device, each in topological order."""
        seen: set[str] = set()
        out: list[list[str]] = []
        for start in self.nodes:
            if start in seen:
                continue
            dev = device_of[start]
            comp = [start]
            seen.add(start)
            stack = [start]
            while stack:
                cur = stack.pop()
                for nb in self.neighbours[cur]:
                    if nb not in seen and device_of[nb] == dev:
                        seen.add(nb)
                        comp.append(nb)
                        stack.append(nb)
            comp.sort(key=self.graph.index.__getitem__)
            out.append(comp)
        return out

    def border_devices(self, island: Sequence[str], device_of: Mapping[str, str]) -> list[str]:
        """Devices of the nodes next to ``island`` (other than its own), most frequent first."""
        own = device_of[island[0]]
        counts: dict[str, int] = {}
        inside = set(island)
        for n in island:
            for nb in self.neighbours[n]:
                if nb not in inside and device_of[nb] != own:
                    counts[device_of[nb]] = counts.get(device_of[nb], 0) + 1
        return sorted(counts, key=lambda d: -counts[d])
