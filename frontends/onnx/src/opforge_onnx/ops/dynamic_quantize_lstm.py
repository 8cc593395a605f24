"""com.microsoft DynamicQuantizeLSTM (what ONNX Runtime's ``quantize_dynamic`` writes for an LSTM):
ONNX's LSTM with int8/uint8 weights. Inputs ``X, W, R, B, sequence_lens, initial_h, initial_c, P,
W_scale, W_zero_point, R_scale, R_zero_point``; attributes as LSTM's.

* ``W`` is [num_directions, input_size, 4 * hidden] and ``R`` [num_directions, hidden,
  4 * hidden]: transposed against LSTM's [num_directions, 4 * hidden, ..]; gate blocks i, o, f, c
  along the last axis, as LSTM's. Both u8 or both i8.
* Scales (f32) and zero points (W's type, required, as ONNX Runtime requires them) per direction
  ([num_directions]) or per column of W / R ([num_directions, 4 * hidden]); a zero point has its
  scale's shape.

Translated as OpenVINO translates it: the weights are dequantized, ``(f32(q) - f32(z)) * s``,
transposed to LSTM's layout, and the node becomes the standard LSTM (LSTMSequence-5, or the
unrolled cell with peepholes; :mod:`opforge_onnx.ops.lstm`). The constant weights fold while
compiling, so the model means an f32 LSTM with the quantized weights' values. ONNX Runtime instead
quantizes X and h to u8 (dynamically) and multiplies on the integers, which rounds the
activations too: the two differ by that rounding (frontends/onnx/README.md). The sequence node
also carries W's and R's row scales in its ``rt_info`` (``DYNAMIC_QUANTIZED_INPUT`` /
``DYNAMIC_QUANTIZED_RECURRENCE``, in the sequence's gate order), so that a device may multiply on
the integers as ONNX Runtime does (the CPU does: plugin-cpu/docs/kernels.md "Recurrent sequences").
Bad shapes or types are refused with the node named."""

from __future__ import annotations

from typing import Any

import numpy as np
from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext
from opforge.graph import Output
from opforge.opset._rnn import DYNAMIC_QUANTIZED_INPUT, DYNAMIC_QUANTIZED_RECURRENCE

from opforge_onnx.ops._helpers import const_value, etype, i64, out, rank, translator
from opforge_onnx.ops._lstm_peephole import convert_lstm_peephole
from opforge_onnx.ops._qlinear import MS_DOMAIN, QTYPES
from opforge_onnx.ops._recurrent import LSTM_GATE_ORDER, convert_recurrent


def _static_dims(ctx: NodeContext, v: Output, index: int, what: str) -> tuple[int, ...]:
    ps = v.partial_shape
    if not ps.is_static:
        raise ctx.error(f"input {index} ({what}) needs a static shape, got {ps}")
    return tuple(int(d) for d in ps.to_tuple())


def _dequantized(ctx: NodeContext, index: int, what: str, rows: int, nd: int, cols: int,
                 qtype: Type | None) -> Output:
    """Input ``index`` (``W``: 1, its scale and zero point inputs 8 and 9; ``R``: 2, with 10 and
    11; [nd, rows, cols] of u8/i8) dequantized and transposed to [nd, cols, rows]."""
    if not ctx.has_input(index):
        raise ctx.error(f"input {index} ({what}) is missing")
    q = ctx.get_input(index)
    if etype(q) not in QTYPES or (qtype is not None and etype(q) is not qtype):
        want = "u8 or i8" if qtype is None else f"{qtype}, W's type"
        raise ctx.error(f"input {index} ({what}) is {etype(q)}; expected {want}")
    dims = _static_dims(ctx, q, index, what)
    if dims != (nd, rows, cols):
        raise ctx.error(f"input {index} ({what}) has shape {list(dims)}; expected [num_directions, "
                        f"{'input_size' if index == 1 else 'hidden_size'}, 4 * hidden_size] = [{nd}, {rows}, {cols}]")
    s_index = 8 if index == 1 else 10
    z_index = s_index + 1
    s_what, z_what = f"{what}_scale", f"{what}_zero_point"
    if not ctx.has_input(s_index):
        raise ctx.error(f"input {s_index} ({s_what}) is missing")
    if not ctx.has_input(z_index):
        raise ctx.error(f"input {z_index} ({z_what}) is missing (ONNX Runtime requires it; 0 for symmetric weights)")
    s, z = ctx.get_input(s_index), ctx.get_input(z_index)
    if etype(s) is not Type.f32:
        raise ctx.error(f"input {s_index} ({s_what}) is {etype(s)}; scales are f32")
    if etype(z) is not etype(q):
        raise ctx.error(f"input {z_index} ({z_what}) is {etype(z)}; expected {etype(q)}, {what}'s type")
    s_dims = _static_dims(ctx, s, s_index, s_what)
    if s_dims not in ((nd,), (nd, cols)):
        raise ctx.error(f"input {s_index} ({s_what}) has shape {list(s_dims)}; expected [{nd}] (per direction) "
                        f"or [{nd}, {cols}] (per column)")
    z_dims = _static_dims(ctx, z, z_index, z_what)
    if z_dims != s_dims:
        raise ctx.error(f"input {z_index} ({z_what}) has shape {list(z_dims)}; expected {list(s_dims)}, "
                        f"its scale's shape")
    # [nd] -> [nd, 1, 1]; [nd, cols] -> [nd, 1, cols]: broadcast over W's rows
    along = [nd, 1, 1] if len(s_dims) == 1 else [nd, 1, cols]
    s3 = out(ctx.op("Reshape", s, i64(ctx, along), special_zero=False))
    qf = out(ctx.op("Convert", q, destination_type=Type.f32))
    zv = const_value(z)
    if zv is None or np.any(zv != 0):
        z3 = out(ctx.op("Reshape", ctx.op("Convert", z, destination_type=Type.f32), i64(ctx, along), special_zero=False))
        qf = out(ctx.op("Subtract", qf, z3))
    deq = out(ctx.op("Multiply", qf, s3))
    return out(ctx.op("Transpose", deq, i64(ctx, [0, 2, 1])))


def _quantized_rt_info(ctx: NodeContext, nd: int, hidden: int) -> dict[str, Any] | None:
    """``W_scale`` and ``R_scale`` (inputs 8, 10) as one scale per row of LSTMSequence's W and R,
    gate blocks in the sequence's order (``DYNAMIC_QUANTIZED_INPUT`` / ``_RECURRENCE``: a device
    may then multiply on the integers, as ONNX Runtime does); None where either is not constant."""
    info: dict[str, Any] = {}
    for key, index in ((DYNAMIC_QUANTIZED_INPUT, 8), (DYNAMIC_QUANTIZED_RECURRENCE, 10)):
        s = const_value(ctx.get_input(index))
        if s is None:
            return None
        cols = np.broadcast_to(np.asarray(s, np.float32).reshape(nd, -1), (nd, 4 * hidden))
        rows = np.concatenate([cols[:, g * hidden:(g + 1) * hidden] for g in LSTM_GATE_ORDER], axis=1)
        info[key] = [float(v) for v in rows.reshape(-1)]
    return info


def convert(ctx: NodeContext) -> ConversionResult:
    hidden = int(ctx.get_attribute("hidden_size", 0))
    if hidden <= 0:
        raise ctx.error("hidden_size must be given and positive")
    direction = str(ctx.get_attribute("direction", "forward")).lower()
    if direction not in ("forward", "reverse", "bidirectional"):
        raise ctx.error(f"direction {direction!r} is not one of forward, reverse, bidirectional")
    nd = 2 if direction == "bidirectional" else 1
    x = ctx.get_input(0)
    if etype(x) is not Type.f32:
        raise ctx.error(f"input 0 (X) is {etype(x)}; DynamicQuantizeLSTM's X is f32")
    if rank(x) != 3:
        raise ctx.error(f"input 0 (X) must have rank 3, got {x.partial_shape}")
    w_dims = ctx.get_input(1).partial_shape if ctx.has_input(1) else None
    if w_dims is None or w_dims.rank != 3 or w_dims.dims[1] is None:
        raise ctx.error(f"input 1 (W) must be a rank-3 tensor with a static input_size, got {w_dims}")
    # input_size is X's last dimension where that is static (so that W in LSTM's layout,
    # [nd, 4 * hidden, input_size], is refused by the shape check below, naming both layouts)
    x_in = x.partial_shape.dims[2]
    input_size = int(x_in) if x_in is not None else int(w_dims.dims[1])
    w = _dequantized(ctx, 1, "W", input_size, nd, 4 * hidden, None)
    r = _dequantized(ctx, 2, "R", hidden, nd, 4 * hidden, etype(ctx.get_input(1)))
    if ctx.has_input(7):
        p = const_value(ctx.get_input(7))
        if p is None or np.any(p != 0):
            return convert_lstm_peephole(ctx, (w, r))
    return convert_recurrent(ctx, "LSTM", (w, r), _quantized_rt_info(ctx, nd, hidden))


EXTENSION = translator("DynamicQuantizeLSTM", convert, domain=MS_DOMAIN)
