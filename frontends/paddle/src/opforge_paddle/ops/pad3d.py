"""pad3d (X, Paddings -> Out): pad the three spatial dims of NCDHW data by ``paddings``
[left, right, top, bottom, front, back]; constant (``value``), reflect or replicate."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import i64, int_list, out, rank, scalar_like, translator
from opforge_paddle.pir_signatures import Arg, PirOp

_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("X")
    if rank(ctx, x, "input 'X'") != 5:
        raise ctx.error("input 'X' must be 5-D")
    fmt = str(ctx.get_attribute("data_format", "NCDHW"))
    mode = str(ctx.get_attribute("mode", "constant"))
    if mode not in _MODES:
        raise ctx.error(f"mode='{mode}' is not supported ({', '.join(_MODES)})")
    p = int_list(ctx, "paddings", ("Paddings",), [0] * 6)
    if len(p) != 6:
        raise ctx.error(f"has {len(p)} paddings, expected 6")
    # [w_begin, w_end, h_begin, h_end, d_begin, d_end] -> per-dim begins and ends
    spatial_b, spatial_e = [p[4], p[2], p[0]], [p[5], p[3], p[1]]
    if fmt == "NCDHW":
        begin, end = [0, 0, *spatial_b], [0, 0, *spatial_e]
    elif fmt == "NDHWC":
        begin, end = [0, *spatial_b, 0], [0, *spatial_e, 0]
    else:
        raise ctx.error(f"data_format='{fmt}' is not supported")
    args = [x, i64(ctx, begin), i64(ctx, end)]
    if mode == "constant":
        args.append(scalar_like(ctx, float(ctx.get_attribute("value", 0.0)), x))
    return {"Out": out(ctx.op("Pad", *args, pad_mode=_MODES[mode]))}


EXTENSION = translator("pad3d", convert)

PIR = PirOp("pad3d", "pad3d", (Arg("X"), Arg("Paddings", attr="paddings")), ("Out",), {"pad_value": "value"})
