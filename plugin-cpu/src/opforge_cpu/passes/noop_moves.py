"""Data-movement nodes that move nothing (a Slice that keeps every element, a Pad by zero, an
identity Transpose) are taken out of the graph: their readers read the input itself.

GhostNet's ghost module ends in ``Concat(primary, cheap)[:, :oup]``, and with timm's channel
counts the ``Slice`` keeps all ``oup`` channels (32 such Slices in timm_ghostnet_100). The
emitter lowered it to an ``Identity`` copy, which the planner turns into an alias, but the copy
kernel reads plain data only: the Concat in front of it could not keep its inputs' layout, so
it reordered each channels-last convolution output to plain (``reorder+memcpy``), and every
reader of the copy (the next 1x1 convolution, the residual Add, the squeeze-excitation) got a
plain tensor (convolutions on ``x64:gemm:jit``, Adds and Multiplies on ``ref``). With the Slice
gone the Concat runs ``concat_nhwc`` and everything after it stays channels-last (Zen 5, f32,
1 thread: the profiled steps 4.78 -> 2.90 ms; bf16 3.92 -> 1.78 ms).

A node qualifies when it is a standard op that only rearranges its input 0
(``Op.rearranges_input``), its other inputs are constants, its output has the input's static
shape and type, and evaluated on the element indices it maps every element to itself
(``index_image``, the evaluation the emitter's IndexMap lowering uses). A node read by a model
output is left alone (the output keeps its own tensor). OPFORGE_CPU_NOOP_MOVES=0 turns the pass
off (read at each compile); the emitter then lowers such a node to an Identity copy as before.
"""

from __future__ import annotations

import os
from typing import ClassVar

import numpy as np
from opforge.graph import Model, Node
from opforge.transformations.base import Transformation

#: the largest tensor (elements) whose index image moves_nothing evaluates
MAX_INDEX_IMAGE = 1 << 24


def index_image(node: Node) -> np.ndarray | None:
    """For a standard data-movement ``node`` (``Op.rearranges_input``) whose inputs after the
    first are constants: the flat index into input 0 of the element each output element takes,
    in the output's C order, -1 where the output holds a padding value. None when a parameter is
    not a constant, the op refuses int64 data, or the result does not have the output's shape.
    Computed by evaluating the op itself on the indices of its input (plus one, so that 0 marks
    padding)."""
    params = [i.node.constant_value() for i in node.inputs[1:]]
    if node.type_name == "Pad":
        params = params[:2]  # (the pad value is not a position)
    if any(p is None for p in params):
        return None
    data = node.inputs[0]
    n = int(np.prod(data.shape, dtype=np.int64))
    idx = (np.arange(n, dtype=np.int64) + 1).reshape(data.shape)
    args: list[np.ndarray] = [idx, *params]  # type: ignore[list-item]
    if node.type_name == "Pad" and node.attrs.pad_mode == "constant":  # type: ignore[attr-defined]
        args.append(np.zeros((), np.int64))
    try:
        mapped = node.op.evaluate(node.attrs, args)[0]
    except Exception:  # noqa: BLE001 - the op refused int64 data: no index image
        return None
    if tuple(mapped.shape) != tuple(node.output(0).shape):
        return None
    return np.asarray(mapped, np.int64).reshape(-1) - 1


def moves_nothing(node: Node) -> bool:
    """Whether ``node`` is a standard data-movement op whose output equals its input 0 element for
    element (same static shape and type, every element taken from its own place)."""
    if not node.op.is_standard or not node.op.rearranges_input or len(node.outputs()) != 1 or not node.inputs:
        return False
    src, out = node.inputs[0], node.output(0)
    if not (src.partial_shape.is_static and out.partial_shape.is_static) or src.element_type != out.element_type:
        return False
    if tuple(src.shape) != tuple(out.shape):
        return False
    # (the index image is an int64 array of the tensor's size, evaluated at compile time: above
    # 16M elements, 128 MiB, the move is left to its kernel rather than cost that much memory)
    if int(np.prod(src.shape, dtype=np.int64)) > MAX_INDEX_IMAGE:
        return False
    flat = index_image(node)
    return flat is not None and np.array_equal(flat, np.arange(flat.size, dtype=np.int64))


class NoopMoveElimination(Transformation):
    """Readers of a data-movement node that moves nothing read its input instead."""

    name: ClassVar[str] = "cpu_noop_moves"
    stage: ClassVar[str] = "middle"
    # after the int8 pass (cpu_int8_fusion, 100): in a QDQ model the Slice sits between a
    # Dequantize and a Quantize of one grid, which that pass turns into the Slice of the bytes
    # (passes/int8/movement.py), a no-op move taken out here in turn. Taken out before it, the
    # Slice left a Dequantize -> Quantize pair in its place that nothing folds (timm_ghostnet_100
    # int8, 1 thread: 32 Dequantize + 32 Quantize steps, 3.0 -> 4.3 ms).
    order: ClassVar[int] = 105

    def apply(self, model: Model) -> bool:
        if os.environ.get("OPFORGE_CPU_NOOP_MOVES", "1") == "0":
            return False
        uses = model.consumers()
        changed = False
        for node in model.get_ordered_ops():
            out = node.output(0) if node.outputs() else None
            readers = uses.get(out, []) if out is not None else []
            if not readers or any(r.type_name == "Result" for r, _ in readers) or not moves_nothing(node):
                continue
            model.replace_output(node.output(0), node.inputs[0])
            changed = True
        return changed
