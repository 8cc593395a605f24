"""arg_max / arg_min (X -> Out) along ``axis`` (or over the flattened input) -> TopK(k=1)."""

from __future__ import annotations

from collections.abc import Callable

from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import dtype_attr, i64, int_list, norm_axis, out, rank
from opforge_paddle.pir_signatures import Arg, PirOp


def arg_extreme(mode: str) -> Callable[[NodeContext], ConversionResult]:
    def convert(ctx: NodeContext) -> ConversionResult:
        x = ctx.get_input("X")
        keep = bool(ctx.get_attribute("keepdims", False))
        flatten = bool(ctx.get_attribute("flatten", False))
        r = rank(ctx, x, "input 'X'")
        if flatten:
            x = out(ctx.op("Reshape", x, i64(ctx, [-1]), special_zero=False))
            axis = 0
        else:
            axis = norm_axis(ctx, int_list(ctx, "axis", (), [-1])[0], r)
        t = dtype_attr(ctx, "dtype", Type.i64)
        if t not in (Type.i32, Type.i64):
            t = Type.i64
        top = ctx.op("TopK", x, ctx.const(1, Type.i64), axis=axis, mode=mode, sort="value",
                     index_element_type=t, stable=True)
        idx = top.output(1)
        if flatten:
            shape = [1] * r if keep else []
            return {"Out": out(ctx.op("Reshape", idx, i64(ctx, shape), special_zero=False))}
        if not keep:
            idx = out(ctx.op("Squeeze", idx, i64(ctx, [axis])))
        return {"Out": idx}
    convert.__name__ = convert.__qualname__ = f"convert_arg_{mode}"
    return convert


def pir_arg(pir: str, legacy: str) -> PirOp:
    return PirOp(pir, legacy, (Arg("X"), Arg("AxisTensor", attr="axis", scalar=True)))
