"""conv2d_transpose / depthwise_conv2d_transpose (Input, Filter -> Output) ->
ConvolutionBackpropData or GroupConvolutionBackpropData.

Paddle's filter is [C_in, C_out / groups, k...], which is ConvolutionBackpropData's layout; grouped
ones take it reshaped to [groups, C_in / groups, C_out / groups, k...]. An explicit
``output_size`` picks one of the ``stride`` sizes the input maps to: it becomes output_padding.
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
    groups = int(ctx.get_attribute("groups", 1) or 1)
    strides = [int(s) for s in ctx.get_attribute("strides", [1] * n)]
    dilations = [int(d) for d in ctx.get_attribute("dilations", [1] * n)]
    pb, pe = spatial_pads(ctx, ctx.get_attribute("paddings", [0] * n), n)
    pad_mode = auto_pad(ctx)
    output_padding = [int(p) for p in ctx.get_attribute("output_padding", []) or []]
    output_size = [int(s) for s in ctx.get_attribute("output_size", []) or []]
    ws = out(w).partial_shape
    if not ws.is_static:
        raise ctx.error(f"the filter needs a static shape, got {ws}")
    c_in, c_out_g, *kernel = ws.to_tuple()
    if output_size:
        dims = out(x).partial_shape.dims[2:]
        if pad_mode != "explicit" or any(d is None for d in dims):
            raise ctx.error("'output_size' needs explicit paddings and static spatial input dims")
        smallest = [strides[i] * (int(dims[i]) - 1) + dilations[i] * (kernel[i] - 1) + 1 - pb[i] - pe[i]  # type: ignore[arg-type]
                    for i in range(n)]
        output_padding = [int(output_size[i]) - smallest[i] for i in range(n)]
        if any(not 0 <= p < max(strides[i], dilations[i]) for i, p in enumerate(output_padding)):
            raise ctx.error(f"output_size {output_size} is not reachable from input sizes {list(dims)} "
                            f"(the smallest output is {smallest})")
    attrs: dict[str, Any] = {"strides": strides, "dilations": dilations, "pads_begin": pb, "pads_end": pe,
                             "auto_pad": pad_mode}
    if any(output_padding):
        attrs["output_padding"] = output_padding
    if groups == 1:
        r = ctx.op("ConvolutionBackpropData", x, w, **attrs)
    else:
        if c_in % groups:
            raise ctx.error(f"filter input channels {c_in} are not divisible by groups={groups}")
        wg = ctx.op("Reshape", w, i64(ctx, [groups, c_in // groups, c_out_g, *kernel]), special_zero=False)
        r = ctx.op("GroupConvolutionBackpropData", x, wg, **attrs)
    if ctx.has_input("Bias"):
        bias = ctx.op("Reshape", ctx.get_input("Bias"), i64(ctx, [-1] + [1] * n), special_zero=False)
        r = ctx.op("Add", r, bias)
    return {"Output": out(r)}


def pir_conv_transpose(name: str) -> PirOp:
    """PIR passes output_size as an operand (a full_int_array)."""
    return PirOp(name, name, (Arg("Input"), Arg("Filter"), Arg("OutputSize", attr="output_size")), ("Output",))
