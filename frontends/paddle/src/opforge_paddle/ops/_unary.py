"""Unary ops that map one-to-one onto an opforge op without attributes (X -> Out)."""

from __future__ import annotations

from collections.abc import Callable

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import out


def plain(target: str) -> Callable[[NodeContext], ConversionResult]:
    def convert(ctx: NodeContext) -> ConversionResult:
        return {"Out": out(ctx.op(target, ctx.get_input("X")))}
    convert.__name__ = convert.__qualname__ = f"convert_{target.lower()}"
    return convert
