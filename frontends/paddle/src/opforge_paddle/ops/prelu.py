"""prelu (X, Alpha -> Out): x if x > 0 else alpha * x; ``mode`` all (one slope), channel (one per
channel) or element (one per element of a sample)."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import i64, out, rank, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    x, alpha = ctx.get_input("X"), ctx.get_input("Alpha")
    r = rank(ctx, x, "input 'X'")
    mode = str(ctx.get_attribute("mode", "all"))
    fmt = str(ctx.get_attribute("data_format", "NCHW"))
    if mode == "channel":
        # a [C] slope lined up with the channel axis, for numpy broadcasting
        shape = [-1] + [1] * (r - 2) if fmt.startswith("NC") else [-1]
    elif mode == "element":
        # one slope per element of a sample: [1, *X.shape[1:]]
        if out(alpha).partial_shape.rank == r:
            return {"Out": out(ctx.op("PRelu", x, alpha))}
        dims = x.partial_shape.dims[1:]
        if any(d is None for d in dims):
            raise ctx.error("mode='element' needs the static shape of input 'X'")
        shape = [1, *(int(d) for d in dims if d is not None)]
    else:
        shape = [1]
    slope = ctx.op("Reshape", alpha, i64(ctx, shape), special_zero=False)
    return {"Out": out(ctx.op("PRelu", x, slope))}


EXTENSION = translator("prelu", convert)

PIR = PirOp("prelu", "prelu", (Arg("X"), Arg("Alpha")))
