"""lookup_table_v2 (Ids, W -> Out): rows of W; ids equal to ``padding_idx`` give zero rows."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import etype, i64, out, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def convert(ctx: NodeContext) -> ConversionResult:
    ids, w = ctx.get_input("Ids"), ctx.get_input("W")
    rows = ctx.op("Gather", w, ids, i64(ctx, 0))
    pad = int(ctx.get_attribute("padding_idx", -1))
    if pad == -1:
        return {"Out": out(rows)}
    if pad < 0:
        vocab = w.partial_shape[0]
        if vocab is None:
            raise ctx.error("a negative padding_idx needs a static vocabulary size")
        pad += int(vocab)
    keep = ctx.op("NotEqual", ids, ctx.const(pad, etype(ids)))
    mask = ctx.op("Unsqueeze", ctx.op("Convert", keep, destination_type=etype(w)), i64(ctx, -1))
    return {"Out": out(ctx.op("Multiply", rows, mask))}


EXTENSION = translator("lookup_table_v2", convert)

PIR = PirOp("embedding", "lookup_table_v2", (Arg("Ids"), Arg("W")))

