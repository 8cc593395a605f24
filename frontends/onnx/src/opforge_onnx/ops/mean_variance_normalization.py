"""MeanVarianceNormalization: MVN over ``axes`` (default N, H, W), eps 1e-9 outside the root
(the ONNX function body adds it to the standard deviation)."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import i64, translator


def convert(ctx: NodeContext) -> ConversionResult:
    axes = list(ctx.get_attribute("axes", [0, 2, 3]))
    return [ctx.op("MVN", ctx.get_input(0), i64(ctx, axes), normalize_variance=True, eps=1e-9,
                   eps_mode="outside_sqrt")]


EXTENSION = translator("MeanVarianceNormalization", convert)
