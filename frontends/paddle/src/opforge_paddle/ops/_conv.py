"""conv2d / depthwise_conv2d / conv3d (Input, Filter -> Output) -> Convolution or GroupConvolution.

Paddle's filter is [C_out, C_in / groups, k...]; grouped convolutions take it reshaped to
[groups, C_out / groups, C_in / groups, k...]. The bias is a separate elementwise_add.
"""

from __future__ import annotations

from typing import Any

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import auto_pad, check_nchw, i64, out, rank, spatial_pads
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    check_nchw(ctx)
    x, w = ctx.get_input("Input"), ctx.get_input("Filter")
    n = rank(ctx, x, "input 'Input'") - 2
    groups = int(ctx.get_attribute("groups", 1))
    pb, pe = spatial_pads(ctx, ctx.get_attribute("paddings", [0] * n), n)
    attrs: dict[str, Any] = {
        "strides": [int(s) for s in ctx.get_attribute("strides", [1] * n)],
        "dilations": [int(d) for d in ctx.get_attribute("dilations", [1] * n)],
        "pads_begin": pb, "pads_end": pe, "auto_pad": auto_pad(ctx),
    }
    if groups == 1:
        return {"Output": out(ctx.op("Convolution", x, w, **attrs))}
    ws = out(w).partial_shape
    if not ws.is_static:
        raise ctx.error(f"the filter of a grouped convolution needs a static shape, got {ws}")
    c_out, *rest = ws.to_tuple()
    if c_out % groups:
        raise ctx.error(f"filter output channels {c_out} are not divisible by groups={groups}")
    wg = ctx.op("Reshape", w, i64(ctx, [groups, c_out // groups, *rest]), special_zero=False)
    return {"Output": out(ctx.op("GroupConvolution", x, wg, **attrs))}


def pir_conv(name: str) -> PirOp:
    return PirOp(name, name, (Arg("Input"), Arg("Filter")), ("Output",))
