"""Unary activations (X -> Out): a table of one-to-one mappings plus the few that need arithmetic."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_paddle.lowering import Arg, PirOp, unary
from opforge_paddle.ops._helpers import out, scalar_like, translator

#: Paddle op -> opforge op with the same semantics and no attributes
_PLAIN = {
    "relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "exp": "Exp", "sqrt": "Sqrt", "abs": "Abs",
    "log": "Log", "floor": "Floor", "ceil": "Ceiling", "sin": "Sin", "cos": "Cos", "erf": "Erf",
    "softsign": "SoftSign", "mish": "Mish", "silu": "Swish", "sign": "Sign",
}


def _plain(target: str) -> Callable[[NodeContext], ConversionResult]:
    def convert(ctx: NodeContext) -> ConversionResult:
        return {"Out": out(ctx.op(target, ctx.get_input("X")))}
    convert.__name__ = convert.__qualname__ = f"convert_{target.lower()}"
    return convert


def relu6(ctx: NodeContext) -> ConversionResult:
    return {"Out": out(ctx.op("Clamp", ctx.get_input("X"), min=0.0,
                              max=float(ctx.get_attribute("threshold", 6.0))))}


def hard_swish(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("X")
    threshold = float(ctx.get_attribute("threshold", 6.0))
    scale = float(ctx.get_attribute("scale", 6.0))
    offset = float(ctx.get_attribute("offset", 3.0))
    if (threshold, scale, offset) == (6.0, 6.0, 3.0):
        return {"Out": out(ctx.op("HSwish", x))}
    # x * min(max(x + offset, 0), threshold) / scale
    gate = ctx.op("Clamp", ctx.op("Add", x, scalar_like(ctx, offset, x)), min=0.0, max=threshold)
    return {"Out": out(ctx.op("Divide", ctx.op("Multiply", x, gate), scalar_like(ctx, scale, x)))}


def hard_sigmoid(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("X")
    slope = float(ctx.get_attribute("slope", 0.2))
    offset = float(ctx.get_attribute("offset", 0.5))
    # clip(x * slope + offset, 0, 1); HSigmoid is the slope = 1/6 case (paddle stores 1/6 as f32)
    lin = ctx.op("Add", ctx.op("Multiply", x, scalar_like(ctx, slope, x)), scalar_like(ctx, offset, x))
    return {"Out": out(ctx.op("Clamp", lin, min=0.0, max=1.0))}


def swish(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("X")
    beta = float(ctx.get_attribute("beta", 1.0))
    if beta == 1.0:
        return {"Out": out(ctx.op("Swish", x))}
    return {"Out": out(ctx.op("Swish", x, scalar_like(ctx, beta, x)))}


def gelu(ctx: NodeContext) -> ConversionResult:
    mode = "TANH" if bool(ctx.get_attribute("approximate", False)) else "ERF"
    return {"Out": out(ctx.op("Gelu", ctx.get_input("X"), approximation_mode=mode))}


def leaky_relu(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("X")
    alpha = float(ctx.get_attribute("alpha", 0.02))
    neg = ctx.op("Multiply", x, scalar_like(ctx, alpha, x))
    positive = ctx.op("Greater", x, scalar_like(ctx, 0.0, x))
    return {"Out": out(ctx.op("Select", positive, x, neg))}


def elu(ctx: NodeContext) -> ConversionResult:
    return {"Out": out(ctx.op("Elu", ctx.get_input("X"), alpha=float(ctx.get_attribute("alpha", 1.0))))}


def softplus(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("X")
    beta = float(ctx.get_attribute("beta", 1.0))
    if beta == 1.0:
        return {"Out": out(ctx.op("SoftPlus", x))}
    scaled = ctx.op("SoftPlus", ctx.op("Multiply", x, scalar_like(ctx, beta, x)))
    return {"Out": out(ctx.op("Divide", scaled, scalar_like(ctx, beta, x)))}


def reciprocal(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("X")
    return {"Out": out(ctx.op("Divide", scalar_like(ctx, 1.0, x), x))}


def square(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input("X")
    return {"Out": out(ctx.op("Multiply", x, x))}


def rsqrt(ctx: NodeContext) -> ConversionResult:
    x: Output = ctx.get_input("X")
    return {"Out": out(ctx.op("Divide", scalar_like(ctx, np.float32(1.0), x), ctx.op("Sqrt", x)))}


TRANSLATORS = [translator(op, _plain(target)) for op, target in _PLAIN.items()] + [
    translator("relu6", relu6), translator("hard_swish", hard_swish), translator("hard_sigmoid", hard_sigmoid),
    translator("swish", swish), translator("gelu", gelu), translator("leaky_relu", leaky_relu),
    translator("elu", elu), translator("softplus", softplus), translator("reciprocal", reciprocal),
    translator("square", square), translator("rsqrt", rsqrt),
]

PIR = [unary(op) for op in _PLAIN] + [
    unary("relu6", threshold=6.0), unary("hardswish", "hard_swish"), unary("hardsigmoid", "hard_sigmoid"),
    unary("swish", beta=1.0), unary("gelu"), unary("elu"), unary("softplus"), unary("reciprocal"),
    unary("square"), unary("rsqrt"),
    # PIR names the slope 'negative_slope'; the legacy op calls it 'alpha'
    PirOp("leaky_relu", "leaky_relu", (Arg("X"),), ("Out",), {"negative_slope": "alpha"}),
]
