"""Mod: fmod=0 takes the divisor's sign (FloorMod, also for floats as ONNX Runtime and the
reference do), fmod=1 the dividend's (Mod, C fmod)."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import translator


def convert(ctx: NodeContext) -> ConversionResult:
    a, b = ctx.get_input(0), ctx.get_input(1)
    fmod = int(ctx.get_attribute("fmod", 0))
    return [ctx.op("Mod" if fmod else "FloorMod", a, b)]


EXTENSION = translator("Mod", convert)
