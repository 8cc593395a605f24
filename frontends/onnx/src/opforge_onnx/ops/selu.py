"""Selu: Selu with alpha and gamma (opforge's lambda) as constant inputs."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import scalar_like, translator


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    alpha = float(ctx.get_attribute("alpha", 1.67326319217681884765625))
    gamma = float(ctx.get_attribute("gamma", 1.05070102214813232421875))
    return [ctx.op("Selu", x, scalar_like(ctx, alpha, x), scalar_like(ctx, gamma, x))]


EXTENSION = translator("Selu", convert)
