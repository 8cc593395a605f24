"""STFT: frames of the signal gathered with a run-time index grid (frame k starts at
k * frame_step), multiplied by the window, then transformed along the frame axis as DFT does
(RDFT for a one-sided transform of a real signal). Output [batch, frames, bins, 2]."""

from __future__ import annotations

from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import i64, out, require_rank, shape_of, to_i64, translator
from opforge_onnx.ops.dft import spectrum


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    if require_rank(ctx, x) != 3:
        raise ctx.error(f"the signal must be [batch, length, 1 | 2], got {out(x).partial_shape}")
    step = out(ctx.op("Reshape", to_i64(ctx, ctx.get_input(1)), i64(ctx, []), special_zero=False))
    window = ctx.get_input(2) if ctx.has_input(2) else None
    if window is not None:
        length = out(ctx.op("Gather", shape_of(ctx, window), i64(ctx, 0), i64(ctx, 0), batch_dims=0))
    elif ctx.has_input(3):
        length = out(ctx.op("Reshape", to_i64(ctx, ctx.get_input(3)), i64(ctx, []), special_zero=False))
    else:
        raise ctx.error("needs a window (input 2) or a frame_length (input 3)")
    total = ctx.op("Gather", shape_of(ctx, x), i64(ctx, 1), i64(ctx, 0), batch_dims=0)
    frames = ctx.op("Add", ctx.op("Divide", ctx.op("Subtract", total, length), step, m_pythondiv=True), i64(ctx, 1))
    starts = ctx.op("Multiply", ctx.op("Range", i64(ctx, 0), frames, i64(ctx, 1), output_type=Type.i64), step)
    offsets = ctx.op("Range", i64(ctx, 0), length, i64(ctx, 1), output_type=Type.i64)
    grid = ctx.op("Add", ctx.op("Unsqueeze", starts, i64(ctx, [1])), ctx.op("Unsqueeze", offsets, i64(ctx, [0])))
    framed = out(ctx.op("Gather", x, grid, i64(ctx, 1), batch_dims=0))  # [batch, frames, length, 1 | 2]
    if window is not None:
        framed = out(ctx.op("Multiply", framed, ctx.op("Reshape", window, i64(ctx, [1, 1, -1, 1]), special_zero=False)))
    return [spectrum(ctx, framed, i64(ctx, [2]), None, inverse=False,
                     onesided=bool(int(ctx.get_attribute("onesided", 1))))]


EXTENSION = translator("STFT", convert)
