"""The placement report: where each node runs and why, the sub-graphs and the transfers.

It is what ``compiled.get_property("HETERO_PLACEMENT")`` returns, what the fallback warning
summarises, and what :func:`opforge_hetero.dump.dump_partition` draws.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

#: NodePlacement.kind values
COMPUTE = "compute"      # placed by the policy (or by affinity)
CONSTANT_SUBGRAPH = "constant"  # computes on weights only: follows its consumers
SHAPE_SUBGRAPH = "shape"        # computes on shapes only: follows its consumers
WEIGHT = "weight"        # a Constant: copied into every sub-graph that reads it
INPUT = "input"          # a model Parameter
OUTPUT = "output"        # a model Result
UNSUPPORTED = "unsupported"


@dataclasses.dataclass(frozen=True)
class NodePlacement:
    """Where one node runs."""

    name: str
    type_name: str
    #: the device running it; for replicated nodes the first of ``devices``; None if none can
    device: str | None
    #: every device holding it (several for weights and replicated constant sub-graphs)
    devices: tuple[str, ...]
    reason: str
    kind: str
    #: the sub-graph that computes it (None for weights, inputs and replicated nodes)
    subgraph: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device, "devices": list(self.devices), "reason": self.reason,
                "kind": self.kind, "type": self.type_name, "subgraph": self.subgraph}


@dataclasses.dataclass(frozen=True)
class Transfer:
    """A tensor crossing from one device's sub-graph to another device's."""

    tensor: str
    producer: str
    port: int
    source: str
    target: str
    source_subgraph: int
    target_subgraph: int
    nbytes: int

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class SubgraphInfo:
    """One sub-graph: a connected region of nodes on one device, compiled as its own model."""

    index: int
    device: str
    nodes: tuple[str, ...]
    #: sub-graphs whose outputs it reads
    depends_on: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "device": self.device, "nodes": list(self.nodes),
                "depends_on": list(self.depends_on)}


@dataclasses.dataclass
class Placement:
    """Where every node of a model runs on a HETERO device, with the reasons."""

    model_name: str
    device_name: str
    devices: tuple[str, ...]
    policy: str
    nodes: dict[str, NodePlacement]
    subgraphs: list[SubgraphInfo]
    transfers: list[Transfer]
    notes: list[str] = dataclasses.field(default_factory=list)

    # --- queries -----------------------------------------------------------------------------
    def assignment(self) -> dict[str, str]:
        """``{node name: device}`` for every node that can run (``query_model``'s answer)."""
        return {n: p.device for n, p in self.nodes.items() if p.device is not None}

    @property
    def unsupported(self) -> list[NodePlacement]:
        return [p for p in self.nodes.values() if p.kind == UNSUPPORTED]

    def fallbacks(self) -> list[NodePlacement]:
        """Operations computed somewhere other than the first device."""
        first = self.devices[0]
        return [p for p in self.nodes.values()
                if p.kind in (COMPUTE, SHAPE_SUBGRAPH, CONSTANT_SUBGRAPH) and p.device is not None
                and first not in p.devices]

    def operations(self) -> list[NodePlacement]:
        return [p for p in self.nodes.values() if p.kind in (COMPUTE, SHAPE_SUBGRAPH, CONSTANT_SUBGRAPH)]

    def transfer_bytes(self) -> int:
        return sum(t.nbytes for t in self.transfers)

    def execution_devices(self) -> list[str]:
        used = {s.device for s in self.subgraphs}
        return [d for d in self.devices if d in used]

    def counts(self) -> dict[str, int]:
        """Operations per device (replicated ones counted on each)."""
        c: Counter[str] = Counter()
        for p in self.operations():
            for d in p.devices:
                c[d] += 1
        return {d: c[d] for d in self.devices if c[d]}

    # --- output ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model_name,
            "device": self.device_name,
            "devices": list(self.devices),
            "policy": self.policy,
            "nodes": {n: p.to_dict() for n, p in self.nodes.items()},
            "subgraphs": [s.to_dict() for s in self.subgraphs],
            "transfers": [t.to_dict() for t in self.transfers],
            "notes": list(self.notes),
        }

    def summary(self) -> str:
        ops = self.operations()
        per_dev = ", ".join(f"{d}: {n}" for d, n in self.counts().items()) or "none"
        s = (f"model '{self.model_name}' on {self.device_name} (policy {self.policy}): {len(ops)} operations "
             f"({per_dev}), {len(self.subgraphs)} sub-graph{'s' if len(self.subgraphs) != 1 else ''}, "
             f"{len(self.transfers)} transfer{'s' if len(self.transfers) != 1 else ''}"
             f" ({_size(self.transfer_bytes())} per inference)")
        if self.unsupported:
            s += f"; {len(self.unsupported)} operation(s) no device can run"
        return s

    def report(self, *, all_nodes: bool = False) -> str:
        """A text table: every operation (or every node), its device and why."""
        lines = [self.summary()]
        lines.extend(f"note: {n}" for n in self.notes)
        rows = [p for p in self.nodes.values()
                if all_nodes or p.kind in (COMPUTE, SHAPE_SUBGRAPH, CONSTANT_SUBGRAPH, UNSUPPORTED)]
        if rows:
            w_name = max(len(p.name) for p in rows)
            w_type = max(len(p.type_name) for p in rows)
            w_dev = max(len(",".join(p.devices) or "-") for p in rows)
            lines.append(f"{'node':<{w_name}}  {'type':<{w_type}}  {'device':<{w_dev}}  sub  reason")
            for p in rows:
                sub = "-" if p.subgraph is None else str(p.subgraph)
                lines.append(f"{p.name:<{w_name}}  {p.type_name:<{w_type}}  "
                             f"{','.join(p.devices) or '-':<{w_dev}}  {sub:>3}  {p.reason}")
        for s in self.subgraphs:
            dep = f" after {', '.join(map(str, s.depends_on))}" if s.depends_on else ""
            lines.append(f"sub-graph {s.index} on {s.device}: {len(s.nodes)} nodes{dep}")
        for t in self.transfers:
            lines.append(f"transfer {t.tensor}: {t.source} (sub-graph {t.source_subgraph}) -> "
                         f"{t.target} (sub-graph {t.target_subgraph}), {_size(t.nbytes)}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.report()


def _size(nbytes: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if nbytes < 1024 or unit == "GiB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024  # type: ignore[assignment]
    return f"{nbytes} B"
