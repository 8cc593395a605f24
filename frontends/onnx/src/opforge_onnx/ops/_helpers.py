"""Small building blocks shared by translators. They use only the public NodeContext API."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from opforge.element_type import Type
from opforge.frontend.extensions import ConversionExtension, ConversionResult
from opforge.frontend.node_context import NodeContext

# Re-exported: the translators of this package import them from here.
from opforge.frontend.translator_helpers import Port as Port
from opforge.frontend.translator_helpers import etype as etype
from opforge.frontend.translator_helpers import i64 as i64
from opforge.frontend.translator_helpers import norm_axis as norm_axis
from opforge.frontend.translator_helpers import out as out
from opforge.frontend.translator_helpers import rank_of
from opforge.frontend.translator_helpers import require_rank as require_rank
from opforge.frontend.translator_helpers import scalar_like as scalar_like
from opforge.graph import Node as Node
from opforge.graph import Output as Output
from opforge.graph import as_output as as_output

#: ONNX's spelling of "up to the end" in Slice ends
INT_MAX = np.iinfo(np.int64).max

#: the name this package's translators use
rank = rank_of


def translator(op_type: str, fn: Callable[[NodeContext], ConversionResult], domain: str = "") -> ConversionExtension:
    """A standard translator: a ConversionExtension like any third party would write."""
    return ConversionExtension(op_type, fn, framework="onnx", domain=domain)
















def const_value(v: Port) -> np.ndarray | None:
    return out(v).node.constant_value()


def to_i64(ctx: NodeContext, v: Port) -> Output:
    if etype(v) is Type.i64:
        return out(v)
    return out(ctx.op("Convert", v, destination_type=Type.i64))


def shape_of(ctx: NodeContext, v: Port) -> Output:
    ps = out(v).partial_shape
    if ps.is_static:
        return i64(ctx, list(ps.to_tuple()))
    return out(ctx.op("ShapeOf", v, output_type=Type.i64))


def auto_pad(ctx: NodeContext) -> str:
    v = str(ctx.get_attribute("auto_pad", "NOTSET"))
    return {"NOTSET": "explicit", "SAME_UPPER": "same_upper", "SAME_LOWER": "same_lower",
            "VALID": "valid"}.get(v, "explicit")


def spatial_attrs(ctx: NodeContext, n: int) -> dict[str, Any]:
    """strides, dilations, pads_begin, pads_end of a conv/pool node with ``n`` spatial dims."""
    pads = list(ctx.get_attribute("pads", [0] * (2 * n)))
    if len(pads) != 2 * n:
        raise ctx.error(f"attribute 'pads' has {len(pads)} values, expected {2 * n}")
    return {
        "strides": list(ctx.get_attribute("strides", [1] * n)),
        "dilations": list(ctx.get_attribute("dilations", [1] * n)),
        "pads_begin": pads[:n],
        "pads_end": pads[n:],
    }


def reshape_for_channel(ctx: NodeContext, v: Port, r: int) -> Output:
    """Reshape a per-channel vector [C] to [1, C, 1, ...] for broadcasting against rank ``r``."""
    return out(ctx.op("Reshape", v, i64(ctx, [1, -1] + [1] * (r - 2)), special_zero=False))


def fold_binary(ctx: NodeContext, op: str, values: Sequence[Port]) -> Output:
    acc = out(values[0])
    for v in values[1:]:
        acc = out(ctx.op(op, acc, v))
    return acc


def axes_from(ctx: NodeContext, attr_since_input: int, input_index: int) -> list[int] | None:
    """Axes given as an attribute before opset ``attr_since_input`` and as an input after."""
    version = ctx.get_opset_version() or attr_since_input
    if version < attr_since_input:
        a = ctx.get_attribute("axes", None)
        return None if a is None else [int(x) for x in a]
    if ctx.has_input(input_index):
        return [int(x) for x in np.asarray(ctx.get_values_from_const_input(input_index)).reshape(-1)]
    return None
