"""LSTM: LSTMSequence-5 (see :mod:`opforge_onnx.ops._recurrent` for the layout mapping); with
peephole weights, unrolled into plain ops (:mod:`opforge_onnx.ops._lstm_peephole`)."""

from __future__ import annotations

import numpy as np
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import const_value, translator
from opforge_onnx.ops._lstm_peephole import convert_lstm_peephole
from opforge_onnx.ops._recurrent import convert_recurrent


def convert(ctx: NodeContext) -> ConversionResult:
    if ctx.has_input(7):
        p = const_value(ctx.get_input(7))
        if p is None or np.any(p != 0):
            return convert_lstm_peephole(ctx)
    return convert_recurrent(ctx, "LSTM")


EXTENSION = translator("LSTM", convert)
