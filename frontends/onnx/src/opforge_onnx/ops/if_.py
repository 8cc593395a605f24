"""If: opforge has no conditional op yet, so the branch is chosen while converting when the
condition is a constant (the usual case after shape folding); otherwise both branches are
converted and their outputs selected element-wise, which is exact because ONNX branches have no
side effects (it needs both branches to produce outputs of broadcast-compatible shapes)."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import const_value, translator


def convert(ctx: NodeContext) -> ConversionResult:
    cond = ctx.get_input(0)
    sub = ctx.extra["subgraph"]
    value = const_value(cond)
    if value is not None:
        taken = "then_branch" if bool(value.reshape(-1)[0]) else "else_branch"
        return list(sub(ctx.get_attribute(taken), [], f"{ctx.get_name()}/{taken}/"))
    then_out = sub(ctx.get_attribute("then_branch"), [], f"{ctx.get_name()}/then_branch/")
    else_out = sub(ctx.get_attribute("else_branch"), [], f"{ctx.get_name()}/else_branch/")
    return [ctx.op("Select", cond, t, e, auto_broadcast="numpy") for t, e in zip(then_out, else_out)]


EXTENSION = translator("If", convert)
