"""RNN: RNNSequence-5 (see :mod:`opforge_onnx.ops._recurrent` for the layout mapping)."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import translator
from opforge_onnx.ops._recurrent import convert_recurrent


def convert(ctx: NodeContext) -> ConversionResult:
    return convert_recurrent(ctx, "RNN")


EXTENSION = translator("RNN", convert)
