"""ConvTranspose: ConvolutionBackpropData (GroupConvolutionBackpropData when group > 1).

ONNX derives pads from ``output_shape`` or SAME auto-padding; they are computed here, with
explicit pads, so the result does not depend on two specs agreeing on how to split odd totals.
"""

from __future__ import annotations

from typing import Any

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import out, require_rank, reshape_for_channel, translator
from opforge_onnx.ops.conv import grouped_filters


def convert(ctx: NodeContext) -> ConversionResult:
    x, w = ctx.get_input(0), ctx.get_input(1)
    r = require_rank(ctx, w, "the filter")
    n = r - 2
    strides = list(ctx.get_attribute("strides", [1] * n))
    dilations = list(ctx.get_attribute("dilations", [1] * n))
    out_pad = list(ctx.get_attribute("output_padding", [0] * n))
    pads = list(ctx.get_attribute("pads", [0] * (2 * n)))
    auto_pad = str(ctx.get_attribute("auto_pad", "NOTSET"))
    kernel = list(ctx.get_attribute("kernel_shape", [])) or list(out(w).partial_shape.dims[2:])
    output_shape = ctx.get_attribute("output_shape", None)
    if output_shape is not None or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        in_sp = list(out(x).partial_shape.dims[2:]) if out(x).partial_shape.rank is not None else [None] * n
        if any(d is None for d in in_sp) or any(k is None for k in kernel):
            raise ctx.error("output_shape / SAME padding need static spatial input dims and kernel shape")
        sp = [int(d) for d in in_sp if d is not None]
        target = list(output_shape)[-n:] if output_shape is not None else [d * s for d, s in zip(sp, strides)]
        begins, ends = [], []
        for i in range(n):
            total = strides[i] * (sp[i] - 1) + out_pad[i] + (kernel[i] - 1) * dilations[i] + 1 - target[i]
            if auto_pad == "SAME_UPPER":
                b, e = total // 2, total - total // 2
            else:
                b, e = total - total // 2, total // 2
            if e < 0:  # a larger output than the default: grow it at the end
                out_pad[i] -= e
                e = 0
            begins.append(b)
            ends.append(e)
        pads = begins + ends
    attrs: dict[str, Any] = {"strides": strides, "dilations": dilations, "pads_begin": pads[:n], "pads_end": pads[n:],
             "output_padding": out_pad, "auto_pad": "explicit"}
    group = int(ctx.get_attribute("group", 1))
    if group == 1:
        y = ctx.op("ConvolutionBackpropData", x, w, **attrs)
    else:
        y = ctx.op("GroupConvolutionBackpropData", x, grouped_filters(ctx, w, group), **attrs)
    if ctx.has_input(2):
        y = ctx.op("Add", y, reshape_for_channel(ctx, ctx.get_input(2), r))
    return [y]


EXTENSION = translator("ConvTranspose", convert)
