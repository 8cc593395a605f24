"""ONNX LSTM with peephole weights (input ``P``), unrolled over the time steps into plain ops.

LSTMSequence-5 has no peepholes, so an LSTM with non-zero (or run-time) ``P`` becomes, per
direction and time step, the cell of ONNX's specification (gate order i, o, f, c; P holds
i, o, f):

    i = f(x W_i^T + h R_i^T + P_i * c + b_i)      f' = f(x W_f^T + h R_f^T + P_f * c + b_f)
    c~ = g(x W_c^T + h R_c^T + b_c)              c' = f' * c + i * c~
    o = f(x W_o^T + h R_o^T + P_o * c' + b_o)     h' = o * h(c')

with ``clip`` applied before each activation. ``sequence_lens`` may come at run time: a step
``t >= len[b]`` keeps batch ``b``'s state and writes zeros to ``Y``, which also makes the reverse
direction start at each sequence's own last element. Needs a static sequence length (the
number of steps to unroll).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_onnx.ops._helpers import etype, i64, out

_ACT = {"Sigmoid": "Sigmoid", "Tanh": "Tanh", "Relu": "Relu"}


def _gate(ctx: NodeContext, pre: Output, act: str, clip: float) -> Output:
    if clip > 0:
        pre = out(ctx.op("Clamp", pre, min=-clip, max=clip))
    return out(ctx.op(_ACT[act], pre))


def _cols(ctx: NodeContext, v: Output, k: int, hidden: int) -> Output:
    """Block ``k`` of size ``hidden`` along the last axis."""
    return out(ctx.op("Slice", v, i64(ctx, [k * hidden]), i64(ctx, [(k + 1) * hidden]), i64(ctx, [1]),
                      i64(ctx, [-1])))


def _row(ctx: NodeContext, v: Output, d: int) -> Output:
    """``v[d]`` (drops the direction axis)."""
    return out(ctx.op("Gather", v, i64(ctx, d), i64(ctx, 0), batch_dims=0))


def convert_lstm_peephole(ctx: NodeContext, weights: tuple[Output, Output] | None = None) -> ConversionResult:
    """``weights``: W and R in ONNX's layout to use instead of inputs 1 and 2 (see
    :func:`opforge_onnx.ops._recurrent.convert_recurrent`)."""
    hidden = int(ctx.get_attribute("hidden_size"))
    direction = str(ctx.get_attribute("direction", "forward")).lower()
    layout = int(ctx.get_attribute("layout", 0))
    clip = float(ctx.get_attribute("clip", 0.0))
    if int(ctx.get_attribute("input_forget", 0)):
        raise ctx.error("input_forget=1 (coupled input and forget gates) is not supported")
    if ctx.has_attribute("activation_alpha") or ctx.has_attribute("activation_beta"):
        raise ctx.error("activation_alpha/activation_beta are not supported (only parameterless activations)")
    nd = 2 if direction == "bidirectional" else 1
    acts = [str(a) for a in ctx.get_attribute("activations", [])] or ["Sigmoid", "Tanh", "Tanh"] * nd
    if len(acts) == 3:
        acts = acts * nd
    if len(acts) != 3 * nd or any(a not in _ACT for a in acts):
        raise ctx.error(f"activations {acts} are not supported (3 per direction of {', '.join(_ACT)})")
    x = ctx.get_input(0)
    if layout == 1:
        x = out(ctx.op("Transpose", x, i64(ctx, [1, 0, 2])))  # -> [seq, batch, input]
    ps = x.partial_shape
    if ps.rank != 3 or ps.dims[0] is None:
        raise ctx.error("an LSTM with peepholes is unrolled over time and needs a static sequence length, "
                        f"got X of shape {ps}")
    seq = int(ps.dims[0])
    ft = etype(x)
    w, r = weights if weights is not None else (ctx.get_input(1), ctx.get_input(2))
    b = ctx.get_input(3) if ctx.has_input(3) else None
    p = ctx.get_input(7)
    batch_shape = out(ctx.op("Gather", ctx.op("ShapeOf", x, output_type=Type.i64), i64(ctx, [1]), i64(ctx, 0),
                             batch_dims=0))
    state_shape = out(ctx.op("Concat", batch_shape, i64(ctx, [hidden]), axis=0))
    zeros = out(ctx.op("Broadcast", ctx.const(np.zeros((), ft.np)), state_shape, mode="numpy"))
    lengths = None
    if ctx.has_input(4):
        lengths = out(ctx.op("Unsqueeze", ctx.op("Convert", ctx.get_input(4), destination_type=Type.i64),
                             i64(ctx, [1])))  # [batch, 1]

    def initial(idx: int, d: int) -> Output:
        if not ctx.has_input(idx):
            return zeros
        s = ctx.get_input(idx)
        return _row(ctx, s, d) if layout == 0 else out(ctx.op("Gather", s, i64(ctx, d), i64(ctx, 1), batch_dims=0))

    ys: list[Output] = []
    finals_h: list[Output] = []
    finals_c: list[Output] = []
    for d in range(nd):
        f_act, g_act, h_act = acts[3 * d: 3 * d + 3]
        wd, rd, pd = _row(ctx, w, d), _row(ctx, r, d), _row(ctx, p, d)
        bias = None
        if b is not None:
            bd = _row(ctx, b, d)
            bias = out(ctx.op("Add", _cols(ctx, bd, 0, 4 * hidden), _cols(ctx, bd, 1, 4 * hidden)))
        p_i, p_o, p_f = (_cols(ctx, pd, k, hidden) for k in range(3))
        h, c = initial(5, d), initial(6, d)
        steps: dict[int, Output] = {}
        reverse = direction == "reverse" or d == 1
        for t in (range(seq - 1, -1, -1) if reverse else range(seq)):
            xt = out(ctx.op("Gather", x, i64(ctx, t), i64(ctx, 0), batch_dims=0))
            g = out(ctx.op("Add", ctx.op("MatMul", xt, wd, transpose_b=True), ctx.op("MatMul", h, rd, transpose_b=True)))
            if bias is not None:
                g = out(ctx.op("Add", g, bias))
            gi, go, gf, gc = (_cols(ctx, g, k, hidden) for k in range(4))
            i_t = _gate(ctx, out(ctx.op("Add", gi, ctx.op("Multiply", p_i, c))), f_act, clip)
            f_t = _gate(ctx, out(ctx.op("Add", gf, ctx.op("Multiply", p_f, c))), f_act, clip)
            c_hat = _gate(ctx, gc, g_act, clip)
            c_new = out(ctx.op("Add", ctx.op("Multiply", f_t, c), ctx.op("Multiply", i_t, c_hat)))
            o_t = _gate(ctx, out(ctx.op("Add", go, ctx.op("Multiply", p_o, c_new))), f_act, clip)
            h_new = out(ctx.op("Multiply", o_t, ctx.op(_ACT[h_act], c_new)))
            if lengths is not None:
                valid = out(ctx.op("Less", i64(ctx, t), lengths))  # [batch, 1]
                h_new = out(ctx.op("Select", valid, h_new, h))
                c_new = out(ctx.op("Select", valid, c_new, c))
                steps[t] = out(ctx.op("Select", valid, h_new, zeros))
            else:
                steps[t] = h_new
            h, c = h_new, c_new
        # Y of this direction: [seq, 1, batch, hidden]
        ys.append(out(ctx.op("Concat", *[ctx.op("Unsqueeze", steps[t], i64(ctx, [0, 1])) for t in range(seq)], axis=0)))
        finals_h.append(out(ctx.op("Unsqueeze", h, i64(ctx, [0]))))
        finals_c.append(out(ctx.op("Unsqueeze", c, i64(ctx, [0]))))
    y = ys[0] if nd == 1 else out(ctx.op("Concat", *ys, axis=1))
    yh = finals_h[0] if nd == 1 else out(ctx.op("Concat", *finals_h, axis=0))
    yc = finals_c[0] if nd == 1 else out(ctx.op("Concat", *finals_c, axis=0))
    if layout == 1:
        perm: Any = [2, 0, 1, 3]
        y = out(ctx.op("Transpose", y, i64(ctx, perm)))
        yh = out(ctx.op("Transpose", yh, i64(ctx, [1, 0, 2])))
        yc = out(ctx.op("Transpose", yc, i64(ctx, [1, 0, 2])))
    return [y, yh, yc]
