"""A small cost model: FLOPs per node from its shapes, bytes per tensor, device speeds and the
price of moving a tensor between devices. Estimates only; the cost-aware policy compares them."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

from opforge.graph import Node, Output
from opforge.op import CostClass
from opforge.shape import PartialShape

#: dynamic dimensions count as this many elements: the estimate must stay finite
DYNAMIC_DIM_GUESS = 1

#: a node doing at most this many FLOPs per output element is "cheap" (elementwise, data movement)
CHEAP_FLOPS_PER_ELEMENT = 8.0

#: FLOPs per element of an op's cost class (``Op.cost_class``; COMPUTE and pools are costed
#: from their operands below, everything else at one per output element)
_PER_ELEMENT = {CostClass.TRANSCENDENTAL: 4.0}


def numel(shape: PartialShape) -> int:
    if shape.rank is None:
        return DYNAMIC_DIM_GUESS
    return math.prod(DYNAMIC_DIM_GUESS if d is None else d for d in shape.dims)


def _dims(shape: PartialShape) -> list[int]:
    if shape.rank is None:
        return []
    return [DYNAMIC_DIM_GUESS if d is None else d for d in shape.dims]


def port_bytes(port: Output) -> int:
    """Bytes of one tensor (estimated for dynamic shapes)."""
    spec = port.spec
    try:
        item = spec.type.np.itemsize
    except Exception:  # noqa: BLE001 - element type 'dynamic' has no dtype: assume 4 bytes
        item = 4
    return numel(spec.shape) * item


def node_flops(node: Node) -> float:
    """Floating-point operations of one node, from its input and output shapes."""
    out = sum(numel(s.shape) for s in node.output_specs)
    t = node.type_name
    ins = [_dims(i.partial_shape) for i in node.inputs]
    if t == "MatMul" and len(ins) == 2 and ins[0]:
        a = ins[0]
        transpose_a = bool(getattr(node.attrs, "transpose_a", False))
        k = a[-2] if (transpose_a and len(a) > 1) else a[-1]
        return 2.0 * out * k
    if t in ("Convolution", "BinaryConvolution") and len(ins) == 2 and len(ins[1]) > 1:
        return 2.0 * out * math.prod(ins[1][1:])
    if t == "GroupConvolution" and len(ins) == 2 and len(ins[1]) > 2:
        return 2.0 * out * math.prod(ins[1][2:])
    if t in ("ConvolutionBackpropData", "GroupConvolutionBackpropData") and len(ins) >= 2 and ins[0]:
        return 2.0 * math.prod(ins[0]) * math.prod(ins[1][1:] or [1])
    if t == "Einsum":
        return 2.0 * max([math.prod(d) for d in ins if d] + [out])
    if t in ("MaxPool", "AvgPool"):
        kernel = getattr(node.attrs, "kernel", None) or [1]
        return float(out * math.prod(kernel))
    cost = node.op.cost_class
    if cost is CostClass.REDUCING:
        return 4.0 * (math.prod(ins[0]) if ins and ins[0] else out)
    return _PER_ELEMENT.get(cost, 1.0) * out


def is_cheap(node: Node) -> bool:
    """Elementwise and data-movement ops: moving one to save a transfer costs little compute."""
    out = max(1, sum(numel(s.shape) for s in node.output_specs))
    return node_flops(node) <= CHEAP_FLOPS_PER_ELEMENT * out


@dataclasses.dataclass(frozen=True)
class CostModel:
    """Seconds per node on each device and per transfer between devices."""

    #: sustained GFLOP/s per device
    gflops: Mapping[str, float]
    #: bandwidth of a transfer between two devices, GB/s
    transfer_gbps: float
    #: fixed cost of one transfer (synchronisation, launch), seconds
    transfer_latency_s: float

    def compute_s(self, node: Node, device: str) -> float:
        return node_flops(node) / (self.gflops[device] * 1e9)

    def transfer_s(self, nbytes: int) -> float:
        return self.transfer_latency_s + nbytes / (self.transfer_gbps * 1e9)

    def describe(self, devices: Sequence[str]) -> str:
        speeds = ", ".join(f"{d} {self.gflops[d]:g} GFLOP/s" for d in devices)
        return (f"{speeds}; transfers {self.transfer_gbps:g} GB/s + "
                f"{self.transfer_latency_s * 1e6:g} us each")


def default_gflops(devices: Sequence[str]) -> dict[str, float]:
    """Speeds when neither the user nor the device says: the priority order is the user's
    statement of preference, so each device is assumed half as fast as the one before it."""
    return {d: 100.0 / (2**i) for i, d in enumerate(devices)}
