"""Element-wise ONNX ops that map one-to-one onto an opforge op with no attributes to translate.

They are a table rather than one module each because every entry is the same two lines; an
op with any translation logic (Div, Pow, Mod, Clip, ...) has its own module.
"""

from __future__ import annotations

from collections.abc import Callable

from opforge.frontend.extensions import ConversionExtension, ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import translator

#: ONNX op type -> opforge op type, for unary ops
UNARY = {
    "Abs": "Abs", "Acos": "Acos", "Acosh": "Acosh", "Asin": "Asin", "Asinh": "Asinh", "Atan": "Atan",
    "Atanh": "Atanh", "Ceil": "Ceiling", "Cos": "Cos", "Cosh": "Cosh", "Erf": "Erf", "Exp": "Exp",
    "Floor": "Floor", "Log": "Log", "Neg": "Negative", "Relu": "Relu", "Sigmoid": "Sigmoid",
    "Sign": "Sign", "Sin": "Sin", "Sinh": "Sinh", "Sqrt": "Sqrt", "Tan": "Tan", "Tanh": "Tanh",
    "Not": "LogicalNot", "BitwiseNot": "BitwiseNot", "Softsign": "SoftSign", "Softplus": "SoftPlus",
    "Mish": "Mish", "HardSwish": "HSwish", "IsNaN": "IsNaN", "Round": "Round",
}

#: ONNX op type -> opforge op type, for binary ops with numpy broadcasting
BINARY = {
    "Add": "Add", "Sub": "Subtract", "Mul": "Multiply", "And": "LogicalAnd", "Or": "LogicalOr",
    "Xor": "LogicalXor", "Equal": "Equal", "Greater": "Greater", "Less": "Less",
    "GreaterOrEqual": "GreaterEqual", "LessOrEqual": "LessEqual", "BitwiseAnd": "BitwiseAnd",
    "BitwiseOr": "BitwiseOr", "BitwiseXor": "BitwiseXor",
}


def _unary(target: str) -> Callable[[NodeContext], ConversionResult]:
    def convert(ctx: NodeContext) -> ConversionResult:
        return [ctx.op(target, ctx.get_input(0))]
    convert.__qualname__ = f"convert_{target}"
    return convert


def _binary(target: str) -> Callable[[NodeContext], ConversionResult]:
    def convert(ctx: NodeContext) -> ConversionResult:
        return [ctx.op(target, ctx.get_input(0), ctx.get_input(1))]
    convert.__qualname__ = f"convert_{target}"
    return convert


EXTENSIONS: list[ConversionExtension] = [
    *(translator(k, _unary(v)) for k, v in UNARY.items()),
    *(translator(k, _binary(v)) for k, v in BINARY.items()),
]
