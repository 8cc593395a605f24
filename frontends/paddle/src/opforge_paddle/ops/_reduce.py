"""reduce_* (X -> Out) over ``dim`` (all axes when empty or ``reduce_all``), keeping them when
``keep_dim``; PIR passes the axes as an operand (``full_int_array``) and calls it ``keepdim``."""

from __future__ import annotations

from collections.abc import Callable

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import i64, int_list, out, rank
from opforge_paddle.pir_signatures import Arg, PirOp


def reduce(target: str) -> Callable[[NodeContext], ConversionResult]:
    def convert(ctx: NodeContext) -> ConversionResult:
        x = ctx.get_input("X")
        dims = int_list(ctx, "dim", ("AxisTensor",), [])
        if bool(ctx.get_attribute("reduce_all", False)) or not dims:
            dims = list(range(rank(ctx, x, "input 'X'")))
        return {"Out": out(ctx.op(target, x, i64(ctx, dims), keep_dims=bool(ctx.get_attribute("keep_dim", False))))}
    convert.__name__ = convert.__qualname__ = f"convert_{target.lower()}"
    return convert


def pir_reduce(pir: str, legacy: str) -> PirOp:
    return PirOp(pir, legacy, (Arg("X"), Arg("AxisTensor", attr="dim")), ("Out",), {"keepdim": "keep_dim"})
