"""TfIdfVectorizer (opset 9): n-gram counting over an integer pool (``pool_int64s``); string pools
need string tensors, which opforge does not have."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import translator


def convert(ctx: NodeContext) -> ConversionResult:
    if ctx.has_attribute("pool_strings") or not ctx.has_attribute("pool_int64s"):
        raise ctx.error("only integer pools (pool_int64s) are supported: opforge has no string tensors")
    attrs = {
        "mode": ctx.get_attribute("mode", dtype=str),
        "min_gram_length": ctx.get_attribute("min_gram_length", dtype=int),
        "max_gram_length": ctx.get_attribute("max_gram_length", dtype=int),
        "max_skip_count": ctx.get_attribute("max_skip_count", dtype=int),
        "ngram_counts": [int(v) for v in ctx.get_attribute("ngram_counts", dtype=list)],
        "ngram_indexes": [int(v) for v in ctx.get_attribute("ngram_indexes", dtype=list)],
        "pool_int64s": [int(v) for v in ctx.get_attribute("pool_int64s", dtype=list)],
        "weights": [float(v) for v in ctx.get_attribute("weights", [], dtype=list)],
    }
    return [ctx.op("TfIdfVectorizer", ctx.get_input(0), **attrs)]


EXTENSION = translator("TfIdfVectorizer", convert)
