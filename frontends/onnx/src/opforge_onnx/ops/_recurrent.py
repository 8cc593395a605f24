"""Shared conversion of ONNX's RNN, GRU and LSTM to RNNSequence-5, GRUSequence-5 and LSTMSequence-5.

ONNX and OpenVINO differ in layout and packing, and each difference is resolved here with plain
ops, so the weights may be computed at run time (the node tests feed them as inputs):

* ``X``: ONNX ``layout=0`` is [seq, batch, input], OpenVINO [batch, seq, input];
* states: ONNX [num_directions, batch, hidden] (``layout=1``: [batch, num_directions, hidden]),
  OpenVINO [batch, num_directions, hidden];
* ``B``: ONNX packs the input and recurrent biases [num_directions, 2 * gates * hidden]; OpenVINO
  takes their sum (GRU with ``linear_before_reset`` keeps h's two biases apart);
* LSTM gate blocks: ONNX i, o, f, c; OpenVINO f, i, c, o;
* ``Y``: OpenVINO [batch, num_directions, seq, hidden]; ONNX [seq, num_directions, batch, hidden]
  (``layout=1``: [batch, seq, num_directions, hidden]).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_onnx.ops._helpers import INT_MAX, const_value, etype, i64, out, shape_of

#: ONNX activation names OpenVINO's recurrent cells implement
_ACTIVATIONS = {"Sigmoid": "sigmoid", "Tanh": "tanh", "Relu": "relu"}


def _activations(ctx: NodeContext, defaults: Sequence[str], nd: int) -> list[str]:
    given = [str(a) for a in ctx.get_attribute("activations", [])]
    n = len(defaults)
    if not given:
        return list(defaults)
    if len(given) not in (n, n * nd):
        raise ctx.error(f"activations has {len(given)} entries, expected {n} per direction")
    if nd == 2 and len(given) == 2 * n and given[:n] != given[n:]:
        raise ctx.error(f"activations differ between the two directions ({given}); OpenVINO's "
                        "sequence ops use one set for both")
    bad = [a for a in given[:n] if a not in _ACTIVATIONS]
    if bad:
        raise ctx.error(f"activation(s) {bad} are not supported (supported: {', '.join(_ACTIVATIONS)})")
    if ctx.has_attribute("activation_alpha") or ctx.has_attribute("activation_beta"):
        raise ctx.error("activation_alpha/activation_beta are not supported (only parameterless activations)")
    return [_ACTIVATIONS[a] for a in given[:n]]


def _dim(ctx: NodeContext, v: Output, axis: int) -> Output:
    """Dimension ``axis`` of ``v`` as a [1] i64 tensor (a constant when static)."""
    ps = v.partial_shape
    if ps.rank is not None and ps.dims[axis] is not None:
        return i64(ctx, [ps.dims[axis]])
    return out(ctx.op("Gather", shape_of(ctx, v), i64(ctx, [axis]), i64(ctx, 0), batch_dims=0))


def _zeros(ctx: NodeContext, like: Output, dims: Sequence[Output]) -> Output:
    shape = out(ctx.op("Concat", *dims, axis=0))
    return out(ctx.op("Broadcast", ctx.const(np.zeros((), etype(like).np)), shape, mode="numpy"))


def _blocks(ctx: NodeContext, v: Output, order: Sequence[int], gates: int, hidden: int, axis: int) -> Output:
    """Reorder the ``gates`` blocks of size ``hidden`` along ``axis``."""
    if list(order) == list(range(gates)):
        return v
    idx = np.concatenate([np.arange(g * hidden, (g + 1) * hidden) for g in order])
    return out(ctx.op("Gather", v, i64(ctx, idx), i64(ctx, axis), batch_dims=0))


def _slice(ctx: NodeContext, v: Output, start: int, stop: int, axis: int) -> Output:
    return out(ctx.op("Slice", v, i64(ctx, [start]), i64(ctx, [stop]), i64(ctx, [1]), i64(ctx, [axis])))


#: OpenVINO's LSTM gate blocks f, i, c, o as indices of ONNX's i, o, f, c
LSTM_GATE_ORDER = [2, 0, 3, 1]


def convert_recurrent(ctx: NodeContext, kind: str, weights: tuple[Output, Output] | None = None,
                      rt_info: dict[str, Any] | None = None) -> ConversionResult:
    """``kind``: ``"RNN"``, ``"GRU"`` or ``"LSTM"``. ``weights``: W and R in ONNX's layout
    ([num_directions, gates * hidden, input] and [.., hidden]) to use instead of inputs 1 and 2
    (com.microsoft DynamicQuantizeLSTM passes its dequantized, transposed weights). ``rt_info``:
    set on the sequence node (DynamicQuantizeLSTM's row scales of R, in the sequence's order)."""
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    hidden = int(ctx.get_attribute("hidden_size"))
    direction = str(ctx.get_attribute("direction", "forward")).lower()
    nd = 2 if direction == "bidirectional" else 1
    layout = int(ctx.get_attribute("layout", 0))
    clip = float(ctx.get_attribute("clip", 0.0))
    defaults = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}[kind]
    attrs: dict[str, Any] = {"hidden_size": hidden, "direction": direction, "clip": clip,
                             "activations": _activations(ctx, defaults, nd)}
    lbr = kind == "GRU" and bool(int(ctx.get_attribute("linear_before_reset", 0)))
    if kind == "GRU":
        attrs["linear_before_reset"] = lbr
    if kind == "LSTM":
        if int(ctx.get_attribute("input_forget", 0)):
            raise ctx.error("input_forget=1 (coupled input and forget gates) is not supported")
        if ctx.has_input(7):
            p = const_value(ctx.get_input(7))
            if p is None or np.any(p != 0):
                raise ctx.error("peephole weights (input P) are not supported by LSTMSequence-5")
    x = ctx.get_input(0)
    if layout == 0:
        x = out(ctx.op("Transpose", x, i64(ctx, [1, 0, 2])))
    w, r = weights if weights is not None else (ctx.get_input(1), ctx.get_input(2))
    batch = _dim(ctx, x, 0)
    seq = _dim(ctx, x, 1)
    # OpenVINO's LSTM gate order f, i, c, o from ONNX's i, o, f, c
    order = LSTM_GATE_ORDER if kind == "LSTM" else list(range(gates))
    w = _blocks(ctx, w, order, gates, hidden, 1)
    r = _blocks(ctx, r, order, gates, hidden, 1)
    if ctx.has_input(3):
        b = ctx.get_input(3)
        wb = _slice(ctx, b, 0, gates * hidden, 1)
        rb = _slice(ctx, b, gates * hidden, 2 * gates * hidden, 1)
        if lbr:
            zr = ctx.op("Add", _slice(ctx, wb, 0, 2 * hidden, 1), _slice(ctx, rb, 0, 2 * hidden, 1))
            bias = out(ctx.op("Concat", zr, _slice(ctx, wb, 2 * hidden, INT_MAX, 1),
                              _slice(ctx, rb, 2 * hidden, INT_MAX, 1), axis=1))
        else:
            bias = _blocks(ctx, out(ctx.op("Add", wb, rb)), order, gates, hidden, 1)
    else:
        n_bias = (4 if lbr else gates) * hidden
        bias = ctx.const(np.zeros((nd, n_bias), etype(w).np))
    if ctx.has_input(4):
        lengths = out(ctx.op("Convert", ctx.get_input(4), destination_type=Type.i32))
    else:
        lengths = out(ctx.op("Broadcast", ctx.op("Convert", seq, destination_type=Type.i32), batch, mode="numpy"))
    states = []
    for k in range(2 if kind == "LSTM" else 1):
        idx = 5 + k
        if ctx.has_input(idx):
            s = ctx.get_input(idx)
            states.append(out(ctx.op("Transpose", s, i64(ctx, [1, 0, 2]))) if layout == 0 else s)
        else:
            states.append(_zeros(ctx, x, [batch, i64(ctx, [nd]), i64(ctx, [hidden])]))
    node = ctx.op(f"{kind}Sequence", x, *states, lengths, w, r, bias, **attrs)
    if rt_info:
        node.rt_info.update(rt_info)
    y = node.output(0)
    y = out(ctx.op("Transpose", y, i64(ctx, [2, 1, 0, 3] if layout == 0 else [0, 2, 1, 3])))
    finals = [node.output(1 + k) for k in range(len(states))]
    if layout == 0:
        finals = [out(ctx.op("Transpose", f, i64(ctx, [1, 0, 2]))) for f in finals]
    return [y, *finals]
