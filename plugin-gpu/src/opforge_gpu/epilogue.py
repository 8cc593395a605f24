"""Epilogue fusion: a Convolution, GroupConvolution or MatMul applies the element-wise nodes after
it (per-channel scale and bias, a residual Add, Relu or Clamp) before storing its result, so they
cost no launch and no round trip through memory.

:class:`EpilogueFusion` is one of the GPU's planning passes (``GpuExecutable.planning_passes``):
run on every specialised model, it records each anchor's :class:`Epilogue` in the anchor's
``rt_info`` (:data:`EPILOGUE`); lowering reads it back with :func:`epilogue_of`. The pass changes
no node, so specialisation does not fold again after it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import ClassVar

import numpy as np
from opforge.graph import Model, Node, Output
from opforge.op import STRUCTURAL
from opforge.transformations import pattern as p
from opforge.transformations.pattern import Match, MatcherPass, PatternNode

#: the ``rt_info`` key of an anchor's epilogue
EPILOGUE = "gpu_epilogue"

ANCHORS = ("Convolution", "GroupConvolution", "MatMul")


@dataclasses.dataclass
class Epilogue:
    """What a Convolution/MatMul applies to its result before storing it, folded from the nodes
    after it: ``y = act(acc * scale + bias + residual)`` per output channel."""

    scale: np.ndarray | None = None
    bias: np.ndarray | None = None
    residual: Output | None = None
    act: int = 0  # 0 none, 1 relu, 2 clamp
    act_min: float = 0.0
    act_max: float = 0.0
    #: the nodes it absorbs, in order; the anchor's result is the last one's
    members: list[Node] = dataclasses.field(default_factory=list)

    @property
    def last(self) -> Node | None:
        return self.members[-1] if self.members else None


def epilogue_of(node: Node) -> Epilogue | None:
    """The epilogue :class:`EpilogueFusion` recorded for anchor ``node`` (None: it has none)."""
    ep = node.rt_info.get(EPILOGUE)
    return ep if isinstance(ep, Epilogue) and ep.members else None


def batch_norm_affine(node: Node) -> tuple[np.ndarray, np.ndarray, int] | None:
    """(scale, shift, data input index) of a BatchNormInference with constant parameters."""
    if node.version == "opset1":
        data_i, gi, bi, mi, vi = 2, 0, 1, 3, 4
    else:
        data_i, gi, bi, mi, vi = 0, 1, 2, 3, 4
    vals = [node.inputs[i].node.constant_value() for i in (gi, bi, mi, vi)]
    if any(v is None for v in vals):
        return None
    g, b, m, v = (np.asarray(x, dtype=np.float64).reshape(-1) for x in vals)  # type: ignore[arg-type]
    eps = float(node.attrs.epsilon)  # type: ignore[attr-defined]
    s = g / np.sqrt(v + eps)
    return s, b - m * s, data_i


def _channel_vector(value: np.ndarray, out_shape: tuple[int, ...], axis: int) -> np.ndarray | None:
    """``value`` as one number per channel of ``axis`` when it broadcasts that way, else None."""
    v = np.asarray(value)
    if v.ndim > len(out_shape):
        return None
    full = (1,) * (len(out_shape) - v.ndim) + v.shape
    ax = axis % len(out_shape)
    channels = out_shape[ax]
    for d, n in enumerate(full):
        if d != ax and n != 1:
            return None
    if full[ax] not in (1, channels):
        return None
    return np.broadcast_to(v.reshape(-1).astype(np.float64), (channels,)).copy()


def _anchor_output(out: Output) -> bool:
    spec = out.node.output_specs[0]
    return out.index == 0 and out.node.op.is_standard and spec.type.is_float and spec.shape.is_static \
        and len(spec.shape) >= 2


class EpilogueFusion(MatcherPass):
    """Records, per anchor that runs on a built-in kernel, the chain of nodes its epilogue absorbs.

    ``builtin(node)``: whether ``node`` runs on a built-in kernel. Only those take part: a custom
    (CONFIG_FILE or plugin) kernel neither applies an epilogue nor may be skipped into one."""

    name: ClassVar[str] = "gpu_epilogue_fusion"
    stage: ClassVar[str] = "back"

    def __init__(self, builtin: Callable[[Node], bool]) -> None:
        self.builtin = builtin
        self._claimed: set[int] = set()
        self._consumers: dict[Output, list[tuple[Node, int]]] = {}
        self._outputs: set[Output] = set()

    def pattern(self) -> PatternNode:
        return p.op(list(ANCHORS), predicate=_anchor_output)

    def apply(self, model: Model) -> bool:
        # a node joins one epilogue at most (two convolutions may meet at an Add)
        self._claimed = set()
        self._consumers = model.consumers()
        self._outputs = {r.inputs[0] for r in model.results}
        for node in model.get_ordered_ops():
            node.rt_info.pop(EPILOGUE, None)  # a clone of an earlier plan's model carries stale ones
        self.run(model)
        return False  # only rt_info changed: nothing to fold again

    def callback(self, match: Match, model: Model) -> bool:
        node = match.root.node
        if not self.builtin(node):
            return False
        ep = self._chain(node)
        if ep.members:
            self._claimed.update(m.id for m in ep.members)
            node.rt_info[EPILOGUE] = ep
        return False

    def _chain(self, node: Node) -> Epilogue:
        shape = node.output_specs[0].shape.to_tuple()
        axis = 1 if node.type_name != "MatMul" else -1
        ep = Epilogue()
        scale = np.ones(shape[axis])
        bias = np.zeros(shape[axis])
        affine = False
        cur = node.output(0)
        while True:
            users = self._consumers.get(cur, [])
            if len(users) != 1 or cur in self._outputs:
                break
            user, idx = users[0]
            if not user.op.is_standard or user.type_name in STRUCTURAL or user.id in self._claimed \
                    or not self.builtin(user):
                break
            if user.output_specs[0].shape != user.inputs[idx].partial_shape:
                break  # the follower broadcasts the result to a larger shape
            t = user.type_name
            other = user.inputs[1 - idx] if len(user.inputs) == 2 else None
            cval = other.node.constant_value() if other is not None else None
            scales = t in ("Multiply", "Divide", "BatchNormInference")
            if scales and (node.type_name == "MatMul" or node.inputs[1].node.constant_value() is None):
                break  # a MatMul's B may be a variable: there are no weights to fold a scale into
            if t in ("Add", "Subtract", "Multiply", "Divide") and cval is not None and ep.residual is None \
                    and ep.act == 0 and getattr(user.attrs, "auto_broadcast", "numpy") == "numpy":
                vec = _channel_vector(cval, shape, axis)
                if vec is None or (t in ("Subtract", "Divide") and idx != 0):
                    break
                if t == "Add":
                    bias = bias + vec
                elif t == "Subtract":
                    bias = bias - vec
                elif t == "Multiply":
                    scale, bias = scale * vec, bias * vec
                else:
                    scale, bias = scale / vec, bias / vec
                affine = True
            elif t == "BatchNormInference" and ep.residual is None and ep.act == 0:
                folded = batch_norm_affine(user)
                if folded is None or folded[2] != idx:
                    break
                s, b, _ = folded
                scale, bias = scale * s, bias * s + b
                affine = True
            elif t == "Add" and other is not None and cval is None and ep.residual is None and ep.act == 0:
                if other.partial_shape != cur.partial_shape or other.element_type != cur.element_type:
                    break
                ep.residual = other
            elif t == "Relu" and ep.act == 0:
                ep.act = 1
            elif t == "Clamp" and ep.act == 0:
                ep.act, ep.act_min, ep.act_max = 2, float(user.attrs.min), float(user.attrs.max)  # type: ignore[attr-defined]
            else:
                break
            ep.members.append(user)
            cur = user.output(0)
            if ep.act:
                break
        if affine:
            ep.scale, ep.bias = scale, bias
        return ep
