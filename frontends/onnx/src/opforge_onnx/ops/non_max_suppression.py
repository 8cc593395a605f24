"""NonMaxSuppression: NonMaxSuppression-9, ordered per batch and class as ONNX wants
(``sort_result_descending=false``). ONNX filters by score only when ``score_threshold`` is given,
so without it the threshold is the lowest float (every box is a candidate)."""

from __future__ import annotations

import numpy as np
from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_onnx.ops._helpers import etype, i64, out, translator


def _scalar(ctx: NodeContext, v: Output) -> Output:
    """ONNX passes [1] tensors; the OpenVINO op takes scalars."""
    return out(ctx.op("Reshape", v, i64(ctx, np.zeros(0, np.int64)), special_zero=False))


def convert(ctx: NodeContext) -> ConversionResult:
    boxes, scores = ctx.get_input(0), ctx.get_input(1)
    ft = etype(scores) if etype(scores) is not Type.dynamic else Type.f32
    max_out = _scalar(ctx, ctx.get_input(2)) if ctx.has_input(2) else i64(ctx, 0)
    iou = _scalar(ctx, ctx.get_input(3)) if ctx.has_input(3) else ctx.const(np.zeros((), ft.np))
    lowest = np.asarray(np.finfo(ft.np).min if ft.np.kind == "f" else -3.4e38, dtype=ft.np)
    score = _scalar(ctx, ctx.get_input(4)) if ctx.has_input(4) else ctx.const(lowest)
    node = ctx.op("NonMaxSuppression", boxes, scores, max_out, iou, score,
                  box_encoding="center" if int(ctx.get_attribute("center_point_box", 0)) else "corner",
                  sort_result_descending=False, output_type=Type.i64)
    return [node.output(0)]


EXTENSION = translator("NonMaxSuppression", convert)
