"""pool2d (X -> Out): max/avg, global, adaptive, ceil mode, exclusive (padding not counted)."""

from __future__ import annotations

from typing import Any

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import auto_pad, check_nchw, i64, out, rank, spatial_pads, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    check_nchw(ctx)
    x = ctx.get_input("X")
    n = rank(ctx, x, "input 'X'") - 2
    kind = str(ctx.get_attribute("pooling_type", "max"))
    if kind not in ("max", "avg"):
        raise ctx.error(f"pooling_type='{kind}' is not supported (max, avg)")
    ksize = [int(k) for k in ctx.get_attribute("ksize", [1] * n)]
    spatial = list(range(2, n + 2))
    reduce_op = "ReduceMax" if kind == "max" else "ReduceMean"
    if bool(ctx.get_attribute("global_pooling", False)) or (
            bool(ctx.get_attribute("adaptive", False)) and all(k == 1 for k in ksize)):
        return {"Out": out(ctx.op(reduce_op, x, i64(ctx, spatial), keep_dims=True))}
    if bool(ctx.get_attribute("adaptive", False)):
        size = i64(ctx, ksize)
        if kind == "avg":
            return {"Out": out(ctx.op("AdaptiveAvgPool", x, size))}
        return {"Out": ctx.op("AdaptiveMaxPool", x, size).output(0)}
    pb, pe = spatial_pads(ctx, ctx.get_attribute("paddings", [0] * n), n)
    attrs: dict[str, Any] = {
        "kernel": ksize, "strides": [int(s) for s in ctx.get_attribute("strides", [1] * n)],
        "pads_begin": pb, "pads_end": pe, "auto_pad": auto_pad(ctx),
        "rounding_type": "ceil" if bool(ctx.get_attribute("ceil_mode", False)) else "floor",
    }
    if kind == "max":
        return {"Out": ctx.op("MaxPool", x, dilations=[1] * n, **attrs).output(0)}
    return {"Out": out(ctx.op("AvgPool", x, exclude_pad=bool(ctx.get_attribute("exclusive", True)), **attrs))}


EXTENSION = translator("pool2d", convert)

PIR = PirOp("pool2d", "pool2d", (Arg("X"), Arg("KernelSize", attr="ksize")))
