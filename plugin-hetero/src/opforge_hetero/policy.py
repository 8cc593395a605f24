"""Partition policies: who decides which device runs each node.

A policy gets the model, the nodes each device can run (already narrowed to the affinity for
pinned nodes) and the devices in priority order, and returns ``{node name: device}`` -- or
``{node name: Decision(device, reason)}`` to explain itself in the placement report. Two ship
here: ``greedy`` (the default: first device that supports a node, then smoothing of small
islands) and ``cost`` (device speeds and transfer costs). Others come from plugins, through the
first-result hook ``opforge_select_partition_policy`` (:mod:`opforge_hetero.hookspecs`): one
mechanism, which can also replace a built-in (a plugin answering ``greedy`` replaces the default).
"""

from __future__ import annotations

import abc
import dataclasses
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from opforge.errors import PluginHookError
from opforge.graph import Model

from opforge_hetero.cost import CostModel, is_cheap, port_bytes
from opforge_hetero.errors import PolicyLoadError
from opforge_hetero.graphinfo import DataflowView, ModelGraph

if TYPE_CHECKING:
    from opforge.runtime.device import CompileContext

#: HETERO's first-result hook that lets a plugin supply (or replace) a policy
HOOK_NAME = "opforge_select_partition_policy"


class Decision(NamedTuple):
    """A device for a node, with the reason shown in the placement report."""

    device: str
    reason: str


@dataclasses.dataclass(frozen=True)
class PolicyContext:
    """What a policy may consult besides the model."""

    #: the HETERO compile context (``compile.core`` can query devices further)
    compile: CompileContext
    #: HETERO's validated properties
    config: Mapping[str, Any]
    #: the properties each device is compiled with
    device_config: Mapping[str, Mapping[str, Any]]
    #: speeds and transfer prices
    cost: CostModel
    #: the graph index (nodes by name, consumers, node kinds)
    graph: ModelGraph
    #: nodes with a manual affinity: their only candidate device is the affinity
    pinned: frozenset[str]
    #: nodes HETERO re-homes after the policy (weight and shape sub-graphs follow their
    #: consumers); a policy may leave them out and should not count transfers through them
    followers: frozenset[str]
    #: the nodes to place (supported somewhere), in topological order
    nodes: tuple[str, ...]

    def dataflow(self) -> DataflowView:
        """The edges between the nodes a policy really places (followers left out)."""
        return DataflowView(self.graph, [n for n in self.nodes if n not in self.followers])


class PartitionPolicy(abc.ABC):
    """Base class of partition policies (any object with this ``assign`` works)."""

    name: ClassVar[str] = ""

    @abc.abstractmethod
    def assign(self, model: Model, supported_by_device: Mapping[str, frozenset[str]],
               devices: Sequence[str], ctx: PolicyContext) -> Mapping[str, str | Decision]:
        """A device for every node of ``ctx.nodes`` (followers may be left out)."""


# ============================================================================ shared helpers
def first_supported(nodes: Sequence[str], supported: Mapping[str, frozenset[str]],
                    devices: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for n in nodes:
        for d in devices:
            if n in supported[d]:
                out[n] = d
                break
    return out


def transfers(view: DataflowView, device_of: Mapping[str, str], ports: Any) -> int:
    return sum(len(view.targets(p, device_of)) for p in ports)


class _Moved(Mapping[str, str]):
    """``device_of`` with an island moved, without copying the whole assignment."""

    def __init__(self, base: Mapping[str, str], island: Sequence[str], device: str) -> None:
        self.base = base
        self.moved = set(island)
        self.device = device

    def __getitem__(self, key: str) -> str:
        return self.device if key in self.moved else self.base[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.base)

    def __len__(self) -> int:
        return len(self.base)


# ============================================================================ greedy
class GreedyPolicy(PartitionPolicy):
    """Each node on the first device (in priority order) that supports it; then islands of at
    most ``HETERO_SMOOTHING_MAX_OPS`` cheap ops sandwiched by another device's nodes move to that
    device when it can run them and the move removes transfers (no ping-pong)."""

    name = "greedy"

    def assign(self, model: Model, supported_by_device: Mapping[str, frozenset[str]],
               devices: Sequence[str], ctx: PolicyContext) -> Mapping[str, str | Decision]:
        device_of = first_supported(ctx.nodes, supported_by_device, devices)
        result: dict[str, str | Decision] = dict(device_of)
        max_ops = int(ctx.config.get("HETERO_SMOOTHING_MAX_OPS", 2))
        if max_ops <= 0:
            return result
        view = ctx.dataflow()
        # Bounded: every move removes at least one transfer, so this ends long before the bound.
        for _ in range(len(view.nodes) + 1):
            if not self._smooth_once(view, device_of, supported_by_device, ctx, max_ops, result):
                break
        return result

    @staticmethod
    def _smooth_once(view: DataflowView, device_of: dict[str, str],
                     supported: Mapping[str, frozenset[str]], ctx: PolicyContext, max_ops: int,
                     result: dict[str, str | Decision]) -> bool:
        for island in sorted(view.islands(device_of), key=len):
            if len(island) > max_ops:
                break
            if any(n in ctx.pinned or not is_cheap(ctx.graph.node(n)) for n in island):
                continue
            if not _sandwiched(view, island):
                continue  # at the model's edge: no round trip to save, the first device keeps it
            ports = view.ports_touching(island)
            before = transfers(view, device_of, ports)
            best: tuple[int, str] | None = None
            for dev in view.border_devices(island, device_of):
                if not all(n in supported[dev] for n in island):
                    continue
                after = transfers(view, _Moved(device_of, island, dev), ports)
                if after < before and (best is None or after < best[0]):
                    best = (after, dev)
            if best is None:
                continue
            saved = before - best[0]
            for n in island:
                device_of[n] = best[1]
                result[n] = Decision(best[1], f"moved to {best[1]} to avoid {saved} transfer"
                                     f"{'s' if saved != 1 else ''}")
            return True
        return False


def _sandwiched(view: DataflowView, island: Sequence[str]) -> bool:
    """Whether ``island`` both reads from and feeds nodes outside it (a round trip to undo)."""
    inside = set(island)
    reads = any(p[0] not in inside for n in island for p in view.in_ports[n])
    feeds = any(u not in inside for n in island for p in view.out_ports[n] for u in view.port_consumers[p])
    return reads and feeds


# ============================================================================ cost-aware
class CostAwarePolicy(PartitionPolicy):
    """Starts from the greedy placement and moves regions (connected same-device islands, then
    single nodes) to another device that supports them whenever the estimated compute time lost
    is smaller than the transfer time saved. Speeds: ``HETERO_DEVICE_GFLOPS``; transfers:
    ``HETERO_TRANSFER_GBPS`` and ``HETERO_TRANSFER_LATENCY_US``."""

    name = "cost"

    #: improvements smaller than this (seconds) are noise in an estimate
    EPSILON_S = 1e-9
    MAX_PASSES = 50

    def assign(self, model: Model, supported_by_device: Mapping[str, frozenset[str]],
               devices: Sequence[str], ctx: PolicyContext) -> Mapping[str, str | Decision]:
        device_of = first_supported(ctx.nodes, supported_by_device, devices)
        result: dict[str, str | Decision] = dict(device_of)
        view = ctx.dataflow()
        for _ in range(self.MAX_PASSES):
            moved = False
            candidates = view.islands(device_of) + [[n] for n in view.nodes]
            for region in candidates:
                own = device_of[region[0]]
                if any(device_of[n] != own or n in ctx.pinned for n in region):
                    continue  # stale after an earlier move in this pass, or pinned
                best = self._best_move(view, region, device_of, supported_by_device, devices, ctx)
                if best is None:
                    continue
                dev, compute_delta, transfer_delta, saved_transfers = best
                for n in region:
                    device_of[n] = dev
                    result[n] = Decision(dev, self._reason(dev, compute_delta, transfer_delta,
                                                           saved_transfers))
                moved = True
            if not moved:
                break
        return result

    def _best_move(self, view: DataflowView, region: Sequence[str], device_of: dict[str, str],
                   supported: Mapping[str, frozenset[str]], devices: Sequence[str],
                   ctx: PolicyContext) -> tuple[str, float, float, int] | None:
        own = device_of[region[0]]
        ports = view.ports_touching(region)
        before_t = self._transfer_cost(view, device_of, ports, ctx.cost)
        before_n = transfers(view, device_of, ports)
        best: tuple[float, str, float, float, int] | None = None
        for dev in devices:
            if dev == own or not all(n in supported[dev] for n in region):
                continue
            moved = _Moved(device_of, region, dev)
            compute_delta = sum(ctx.cost.compute_s(ctx.graph.node(n), dev)
                                - ctx.cost.compute_s(ctx.graph.node(n), own) for n in region)
            transfer_delta = self._transfer_cost(view, moved, ports, ctx.cost) - before_t
            total = compute_delta + transfer_delta
            if total < -self.EPSILON_S and (best is None or total < best[0]):
                best = (total, dev, compute_delta, transfer_delta,
                        before_n - transfers(view, moved, ports))
        if best is None:
            return None
        return best[1], best[2], best[3], best[4]

    @staticmethod
    def _transfer_cost(view: DataflowView, device_of: Mapping[str, str], ports: Any,
                       cost: CostModel) -> float:
        total = 0.0
        for p in ports:
            n = len(view.targets(p, device_of))
            if n:
                total += n * cost.transfer_s(_bytes(view, p))
        return total

    @staticmethod
    def _reason(dev: str, compute_delta: float, transfer_delta: float, saved: int) -> str:
        if compute_delta <= 0 and transfer_delta >= 0:
            return f"moved to {dev}: {_us(-compute_delta)} faster there, costs {_us(transfer_delta)} of transfers"
        if compute_delta <= 0:
            return f"moved to {dev}: {_us(-compute_delta)} faster there and {_us(-transfer_delta)} less transfer time"
        what = f"{saved} transfer{'s' if saved != 1 else ''}" if saved > 0 else "transfer time"
        return (f"moved to {dev} to avoid {what}: {_us(compute_delta)} more compute < "
                f"{_us(-transfer_delta)} of transfers saved")


def _bytes(view: DataflowView, port: tuple[str, int]) -> int:
    return port_bytes(view.graph.port(port))


def _us(seconds: float) -> str:
    us = seconds * 1e6
    return f"{us:.3g} us" if us < 1000 else f"{us / 1000:.3g} ms"


# ============================================================================ registry
BUILTIN_POLICIES: dict[str, Callable[[], PartitionPolicy]] = {
    GreedyPolicy.name: GreedyPolicy,
    CostAwarePolicy.name: CostAwarePolicy,
}


class PolicyLoadWarning(UserWarning):
    """A plugin's ``opforge_select_partition_policy`` raised; HETERO goes on without its answer."""


@dataclasses.dataclass(frozen=True)
class PolicyEntry:
    """One policy as listed by :func:`available_policies`."""

    name: str
    source: str  # "built-in"
    policy: Any = None
    error: str | None = None


def available_policies() -> list[PolicyEntry]:
    """The built-in policies. A plugin's policies are not listed: the hook is asked by name, when
    a model is compiled with that ``PARTITION_POLICY``."""
    return [PolicyEntry(n, "built-in", policy=f()) for n, f in BUILTIN_POLICIES.items()]


def select_policy(name: str, ctx: CompileContext, devices: Sequence[str]) -> tuple[Any, str]:
    """The policy called ``name`` and where it came from: the plugins' hook first (so a plugin
    can replace even ``greedy``), then the built-ins."""
    key = name.strip().lower()
    failures: list[PluginHookError] = []
    hooked = _from_hook(key, ctx, devices, failures)
    if hooked is not None:
        return hooked
    if key in BUILTIN_POLICIES:
        return BUILTIN_POLICIES[key](), "built-in"
    msg = (f"PARTITION_POLICY '{name}' is not a known partition policy; available: "
           f"{', '.join(sorted(BUILTIN_POLICIES))} (built in), and no installed plugin answered "
           f"{HOOK_NAME}(name={key!r})")
    if failures:
        msg += "; hooks that failed: " + "; ".join(str(f) for f in failures)
    raise PolicyLoadError(msg)


def _from_hook(name: str, ctx: CompileContext, devices: Sequence[str],
               failures: list[PluginHookError]) -> tuple[Any, str] | None:
    # A plugin whose hook raises must not stop HETERO: it is reported, and the next plugin (or
    # the built-in policy) answers.
    found = ctx.plugins.first_result(HOOK_NAME, failures=failures, name=name, devices=list(devices))
    for err in failures:
        warnings.warn(f"{err} (HETERO goes on without its answer)", PolicyLoadWarning, stacklevel=5)
    if found is None:
        return None
    policy, who = found
    if not callable(getattr(policy, "assign", None)):
        raise PolicyLoadError(f"plugin {who}: {HOOK_NAME} returned {type(policy).__name__}, "
                              "which has no assign(model, supported_by_device, devices, ctx) method")
    return policy, f"hook {HOOK_NAME} of plugin {who}"
