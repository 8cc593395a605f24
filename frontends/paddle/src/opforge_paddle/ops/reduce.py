"""reduce_mean / reduce_sum / reduce_max / reduce_min / reduce_prod (X -> Out) over ``dim``
(all axes when empty or ``reduce_all``), keeping them when ``keep_dim``."""

from __future__ import annotations

from collections.abc import Callable

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.lowering import Arg, PirOp
from opforge_paddle.ops._helpers import i64, int_list, out, rank, translator

_OPS = {"reduce_mean": "ReduceMean", "reduce_sum": "ReduceSum", "reduce_max": "ReduceMax",
        "reduce_min": "ReduceMin", "reduce_prod": "ReduceProd"}


def _reduce(target: str) -> Callable[[NodeContext], ConversionResult]:
    def convert(ctx: NodeContext) -> ConversionResult:
        x = ctx.get_input("X")
        dims = int_list(ctx, "dim", ("AxisTensor",), [])
        if bool(ctx.get_attribute("reduce_all", False)) or not dims:
            dims = list(range(rank(ctx, x, "input 'X'")))
        return {"Out": out(ctx.op(target, x, i64(ctx, dims), keep_dims=bool(ctx.get_attribute("keep_dim", False))))}
    convert.__name__ = convert.__qualname__ = f"convert_{target.lower()}"
    return convert


TRANSLATORS = [translator(op, _reduce(target)) for op, target in _OPS.items()]

_RENAME = {"keepdim": "keep_dim"}
PIR = [
    PirOp(pir, legacy, (Arg("X"), Arg("AxisTensor", attr="dim")), ("Out",), _RENAME)
    for pir, legacy in (("mean", "reduce_mean"), ("sum", "reduce_sum"), ("max", "reduce_max"),
                        ("min", "reduce_min"), ("prod", "reduce_prod"))
]
