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
from opforge.frontend.translator_helpers import require_rank
from opforge.frontend.translator_helpers import scalar_like as scalar_like
from opforge.graph import Node as Node
from opforge.graph import Output as Output
from opforge.graph import as_output as as_output

from opforge_paddle.program import DTYPE_NAMES, VARTYPE_TO_TYPE

#: the name this package's translators use
rank = require_rank


def translator(op_type: str, fn: Callable[[NodeContext], ConversionResult]) -> ConversionExtension:
    """A standard translator: a ConversionExtension like any third party would write."""
    return ConversionExtension(op_type, fn, framework="paddle")














def dtype_attr(ctx: NodeContext, name: str, default: Type | None = None) -> Type:
    """A dtype attribute: a VarType number (.pdmodel) or a dtype name (PIR)."""
    v = ctx.get_attribute(name, None)
    if v is None:
        if default is None:
            raise ctx.error(f"has no attribute '{name}'")
        return default
    t = DTYPE_NAMES.get(v) if isinstance(v, str) else VARTYPE_TO_TYPE.get(int(v))
    if t is None:
        raise ctx.error(f"attribute '{name}' = {v!r} is not a supported Paddle data type")
    return t


def const_input(ctx: NodeContext, port: str) -> np.ndarray | None:
    """The value of named input ``port`` when it is a constant (one tensor or a list of scalars)."""
    n = ctx.get_input_size(port)
    if n == 0 or not ctx.has_input(port):
        return None
    parts = []
    for i in range(n):
        value = ctx.get_input(port, i).node.constant_value()
        if value is None:
            return None
        parts.append(np.asarray(value).reshape(-1))
    return np.concatenate(parts)


def int_list(ctx: NodeContext, attr: str, tensor_ports: Sequence[str] = (), default: Any = None) -> list[int]:
    """An integer-list argument given as a constant tensor input (preferred, as Paddle does) or an attribute."""
    for port in tensor_ports:
        if ctx.get_input_size(port):
            value = const_input(ctx, port)
            if value is None:
                raise ctx.error(f"input '{port}' must be a constant while converting, but it is computed at run time")
            return [int(x) for x in value]
    v = ctx.get_attribute(attr, default)
    if v is None:
        raise ctx.error(f"has no attribute '{attr}'")
    return [int(x) for x in (v if isinstance(v, (list, tuple)) else [v])]


def single_output(port: str, fn: Callable[[NodeContext], Port]) -> Callable[[NodeContext], ConversionResult]:
    def convert(ctx: NodeContext) -> ConversionResult:
        return {port: out(fn(ctx))}
    convert.__name__ = convert.__qualname__ = getattr(fn, "__name__", "convert")
    return convert


def spatial_pads(ctx: NodeContext, paddings: Sequence[int], n: int) -> tuple[list[int], list[int]]:
    """Paddle's paddings: n values (symmetric) or 2n values (begin, end per spatial dim)."""
    p = [int(x) for x in paddings]
    if len(p) == n:
        return p, list(p)
    if len(p) == 2 * n:
        return p[0::2], p[1::2]
    raise ctx.error(f"attribute 'paddings' has {len(p)} values; expected {n} or {2 * n}")


def auto_pad(ctx: NodeContext) -> str:
    algo = str(ctx.get_attribute("padding_algorithm", "EXPLICIT")).upper()
    return {"SAME": "same_upper", "VALID": "valid"}.get(algo, "explicit")


def check_nchw(ctx: NodeContext, attr: str = "data_format") -> None:
    fmt = str(ctx.get_attribute(attr, "NCHW"))
    if fmt not in ("NCHW", "AnyLayout", "NCDHW", "NCL"):
        raise ctx.error(f"{attr}='{fmt}' is not supported; opforge reads channel-first (NCHW) Paddle models")
