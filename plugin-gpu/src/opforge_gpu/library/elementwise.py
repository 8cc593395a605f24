"""Element-wise operations: unary functions, binary operations with NumPy broadcasting,
comparisons and logic, Select, Convert, PRelu and a per-channel BatchNormInference."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from opforge.element_type import Type
from opforge.graph import Node

from opforge_gpu.library import kernel
from opforge_gpu.storage import Storage, float_bits, supported_type

if TYPE_CHECKING:
    from opforge_gpu.lowering import Epilogue, Lowering
    from opforge_gpu.plan import Tensor

FILE = "elementwise.cl"
WG = 256

# --- unary -------------------------------------------------------------------------------------
# Expressions over x (compute type CT) and the float parameters p0, p1. "float": the op exists for
# floating-point inputs only here (integer forms are rare and have their own rounding rules).
_UNARY: dict[str, tuple[str, bool]] = {
    # NaN propagates (ONNX, IEEE 754): OpenCL's fmax/fmin return the other operand for a NaN,
    # so the clamping ops test for NaN themselves and Relu compares the other way round.
    "Relu": ("((x) < 0 ? (CT)0 : (x))", False),
    "Abs": ("((x) < 0 ? -(x) : (x))", False),
    "Negative": ("(-(x))", False),
    "Sigmoid": ("(1.0f / (1.0f + exp(-(x))))", True),
    "Tanh": ("tanh(x)", True),
    "Exp": ("exp(x)", True),
    "Log": ("log(x)", True),
    "Sqrt": ("sqrt(x)", True),
    "Erf": ("erf(x)", True),
    "Sin": ("sin(x)", True),
    "Cos": ("cos(x)", True),
    "Tan": ("tan(x)", True),
    "Asin": ("asin(x)", True),
    "Acos": ("acos(x)", True),
    "Atan": ("atan(x)", True),
    "Sinh": ("sinh(x)", True),
    "Cosh": ("cosh(x)", True),
    "Asinh": ("asinh(x)", True),
    "Acosh": ("acosh(x)", True),
    "Atanh": ("atanh(x)", True),
    "Floor": ("floor(x)", True),
    "Ceiling": ("ceil(x)", True),
    "Sign": ("(isnan(x) ? (x) : (CT)(((x) > 0) - ((x) < 0)))", True),
    "SoftPlus": ("((x) > 20.0f ? (x) : log1p(exp(x)))", True),
    "SoftSign": ("((x) / (1.0f + fabs(x)))", True),
    "HSwish": ("((x) * fmin(fmax((x) + 3.0f, 0.0f), 6.0f) / 6.0f)", True),
    "HSigmoid": ("(isnan(x) ? (x) : fmin(fmax((x) + 3.0f, 0.0f), 6.0f) / 6.0f)", True),
    "Mish": ("((x) * tanh((x) > 20.0f ? (x) : log1p(exp(x))))", True),
    "Swish": ("((x) / (1.0f + exp(-p0 * (x))))", True),
    "Elu": ("((x) > 0 ? (x) : p0 * expm1(x))", True),
    "Selu": ("(p1 * ((x) > 0 ? (x) : p0 * expm1(x)))", True),
    "Clamp": ("(isnan(x) ? (x) : fmin(fmax((x), p0), p1))", True),
    "Gelu": ("(0.5f * (x) * (1.0f + erf((x) * 0.7071067811865476f)))", True),
    "Round": ("rint(x)", True),
    "IsNaN": ("isnan(x)", True),
    "IsFinite": ("isfinite(x)", True),
    "IsInf": ("((isinf(x) && (x) > 0 && p0 != 0.0f) || (isinf(x) && (x) < 0 && p1 != 0.0f))", True),
    "LogicalNot": ("(!(x))", False),
    "BitwiseNot": ("(~(x))", False),
}

_GELU_TANH = "(0.5f * (x) * (1.0f + tanh(0.7978845608028654f * ((x) + 0.044715f * (x) * (x) * (x)))))"


def _const_scalar(node: Node, i: int) -> float | None:
    if len(node.inputs) <= i:
        return None
    v = node.inputs[i].node.constant_value()
    if v is None or np.asarray(v).size != 1:
        return None
    return float(np.asarray(v).reshape(-1)[0])


def _types(node: Node) -> list[Type]:
    return [i.element_type for i in node.inputs] + [s.type for s in node.output_specs]


def _unary_supports(node: Node) -> str | None:
    t = node.inputs[0].element_type
    if not all(supported_type(x) for x in _types(node)):
        return f"element type {t} is not supported on GPU"
    float_only = _UNARY[node.type_name][1]
    if float_only and not t.is_float:
        return f"{node.type_name} of {t} has no GPU kernel (floating-point types only)"
    if node.type_name == "LogicalNot" and t is not Type.boolean:
        return "LogicalNot needs a boolean input"
    if node.type_name == "BitwiseNot" and t.is_float:
        return "BitwiseNot needs an integer or boolean input"
    if node.type_name == "Swish" and len(node.inputs) > 1 and _const_scalar(node, 1) is None:
        return "Swish with a non-constant beta has no GPU kernel"
    if node.type_name == "Selu" and (_const_scalar(node, 1) is None or _const_scalar(node, 2) is None):
        return "Selu with non-constant alpha/lambda has no GPU kernel"
    return None


def unary_params(node: Node) -> tuple[str, float, float]:
    expr, _ = _UNARY[node.type_name]
    a = node.attrs
    t = node.type_name
    p0 = p1 = 0.0
    if t == "Swish":
        p0 = _const_scalar(node, 1) if len(node.inputs) > 1 else 1.0  # type: ignore[assignment]
    elif t == "Elu":
        p0 = float(a.alpha)  # type: ignore[attr-defined]
    elif t == "Selu":
        p0, p1 = _const_scalar(node, 1), _const_scalar(node, 2)  # type: ignore[assignment]
    elif t == "Clamp":
        p0, p1 = float(a.min), float(a.max)  # type: ignore[attr-defined]
    elif t == "Gelu" and str(getattr(a, "approximation_mode", "ERF")).upper() == "TANH":
        expr = _GELU_TANH
    elif t == "Round" and getattr(a, "mode", "half_to_even") != "half_to_even":
        expr = "round(x)"
    elif t == "IsInf":
        p0 = 1.0 if getattr(a, "detect_positive", True) else 0.0
        p1 = 1.0 if getattr(a, "detect_negative", True) else 0.0
    elif t == "BitwiseNot" and node.inputs[0].element_type is Type.boolean:
        expr = "(!(x))"
    return expr, p0, p1


@kernel(*_UNARY, supports=_unary_supports)
def lower_unary(node: Node, lw: Lowering, epilogue: Epilogue | None = None) -> None:
    expr, p0, p1 = unary_params(node)
    x = lw.input(node, 0)
    y = lw.new_output(node)
    run_unary(lw, node, x, y, expr, p0, p1)


def run_unary(lw: Lowering, node: Node, x: Tensor, y: Tensor, expr: str, p0: float = 0.0, p1: float = 0.0) -> None:
    defines: dict[str, Any] = {"UNARY_OP(x)": expr, "CT": x.storage.compute}
    defines.update(x.storage.macros("A"))
    defines.update(y.storage.macros("Y"))
    prm = lw.params([y.size, float_bits(p0), float_bits(p1)])
    lw.launch(FILE, "unary", defines, [x, y, prm], [y.size], [WG], node=node)


# --- binary ------------------------------------------------------------------------------------
_ARITH: dict[str, str] = {
    "Add": "((a) + (b))",
    "Subtract": "((a) - (b))",
    "Multiply": "((a) * (b))",
    # a NaN in either input gives NaN (``a != a`` only for a NaN a; a NaN b falls through)
    "Maximum": "((a) > (b) || (a) != (a) ? (a) : (b))",
    "Minimum": "((a) < (b) || (a) != (a) ? (a) : (b))",
    "SquaredDifference": "(((a) - (b)) * ((a) - (b)))",
}
_FLOAT_ONLY: dict[str, str] = {
    "Power": "pow((a), (b))",
}
_CMP: dict[str, str] = {
    "Equal": "((a) == (b))",
    "NotEqual": "((a) != (b))",
    "Less": "((a) < (b))",
    "LessEqual": "((a) <= (b))",
    "Greater": "((a) > (b))",
    "GreaterEqual": "((a) >= (b))",
}
_LOGIC: dict[str, str] = {
    "LogicalAnd": "((a) && (b))",
    "LogicalOr": "((a) || (b))",
    "LogicalXor": "(((a) != 0) != ((b) != 0))",
}
_BITWISE: dict[str, str] = {
    "BitwiseAnd": "((a) & (b))",
    "BitwiseOr": "((a) | (b))",
    "BitwiseXor": "((a) ^ (b))",
}
_SHIFT = ("BitwiseLeftShift", "BitwiseRightShift")
_SPECIAL = ("Divide", "FloorMod", "Mod", *_SHIFT)
_BINARY = [*_ARITH, *_FLOAT_ONLY, *_CMP, *_LOGIC, *_BITWISE, *_SPECIAL]


def _binary_supports(node: Node) -> str | None:
    if not all(supported_type(x) for x in _types(node)):
        return "an element type of this node is not supported on GPU"
    t = node.inputs[0].element_type
    name = node.type_name
    if getattr(node.attrs, "auto_broadcast", "numpy") == "pdpd":
        return "auto_broadcast='pdpd' has no GPU kernel"
    if name in _FLOAT_ONLY and not t.is_float and (t.ir == "boolean" or node.inputs[1].element_type != t):
        return f"{name} of {t} has no GPU kernel"
    if name in _LOGIC and t is not Type.boolean:
        return f"{name} needs boolean inputs"
    if name in _BITWISE and t.is_float:
        return f"{name} needs integer or boolean inputs"
    if name in _SHIFT and (t.is_float or t.ir == "boolean"):
        return f"{name} needs integer inputs"
    if name in _ARITH and t is Type.boolean:
        return f"{name} of booleans has no GPU kernel"
    return None


def binary_expr(node: Node) -> str:
    name = node.type_name
    t = node.inputs[0].element_type
    if name == "Power" and not t.is_float:
        return "ipow((a), (b))"  # exact and wrapping for exponents >= 0 (elementwise.cl)
    for table in (_ARITH, _FLOAT_ONLY, _CMP, _LOGIC, _BITWISE):
        if name in table:
            return table[name]
    flt = t.is_float
    if name in _SHIFT:
        # shifts by [0, width) only; larger or negative ones shift every bit out (ONNX BitShift-28)
        w = t.bitwidth
        if name == "BitwiseLeftShift":
            return f"(((b) >= 0 && (b) < {w}) ? ((a) << (b)) : 0)"
        return f"(((b) >= 0 && (b) < {w}) ? ((a) >> (b)) : ((a) < 0 ? -1 : 0))"
    if name == "Divide":
        if flt:
            return "((a) / (b))"
        if getattr(node.attrs, "m_pythondiv", True) and t.is_signed:
            # floor division; an integer division by zero gives 0 as the reference does
            return "((b) == 0 ? 0 : ((a) / (b) - ((((a) % (b)) != 0) && (((a) < 0) != ((b) < 0)))))"
        return "((b) == 0 ? 0 : (a) / (b))"
    if name == "FloorMod":
        if flt:
            return "(fmod((a), (b)) != 0 && ((fmod((a), (b)) < 0) != ((b) < 0)) ? fmod((a), (b)) + (b) : fmod((a), (b)))"
        return ("((b) == 0 ? 0 : (((a) % (b)) != 0 && ((((a) % (b)) < 0) != ((b) < 0)) ? "
                "((a) % (b)) + (b) : ((a) % (b))))")
    # Mod: the sign of the dividend (C's fmod / %)
    return "fmod((a), (b))" if flt else "((b) == 0 ? 0 : (a) % (b))"


def broadcast_strides(in_shape: Sequence[int], out_shape: Sequence[int]) -> list[int]:
    """Element strides of a contiguous ``in_shape`` tensor read at ``out_shape`` (0 = broadcast)."""
    rank = len(out_shape)
    full = [1] * (rank - len(in_shape)) + list(in_shape)
    strides = [0] * rank
    acc = 1
    for d in range(rank - 1, -1, -1):
        strides[d] = 0 if full[d] == 1 and out_shape[d] != 1 else acc
        acc *= full[d]
    return strides


def broadcast_block(out_shape: Sequence[int], ins: Sequence[Sequence[int]]) -> list[int]:
    """[n, rank, dims..., strides of each input...] for the BCAST_OFFSETS macro."""
    shape = list(out_shape) or [1]
    block = [int(np.prod(shape)), len(shape), *shape]
    for s in ins:
        block += broadcast_strides(s, shape) if out_shape else [0]
    return block


@kernel(*_BINARY, supports=_binary_supports)
def lower_binary(node: Node, lw: Lowering, epilogue: Epilogue | None = None) -> None:
    a, b = lw.input(node, 0), lw.input(node, 1)
    y = lw.new_output(node)
    run_binary(lw, node, a, b, y, binary_expr(node))


def run_binary(lw: Lowering, node: Node, a: Tensor, b: Tensor, y: Tensor, expr: str) -> None:
    defines: dict[str, Any] = {"BINARY_OP(a, b)": expr, "CT": a.storage.compute}
    if a.storage.is_float or a.storage.type.ir == "boolean":
        defines["CT_IS_FLOAT"] = 1  # (also: no integer helpers to compile)
    defines.update(a.storage.macros("A"))
    defines.update(b.storage.macros("B"))
    defines.update(y.storage.macros("Y"))
    if a.shape == y.shape and b.shape == y.shape:
        defines["SAME_SHAPE"] = 1
        prm = lw.params([y.size])
    elif a.shape == y.shape and b.size == 1:
        defines["B_SCALAR"] = 1
        prm = lw.params([y.size])
    elif b.shape == y.shape and a.size == 1:
        defines["A_SCALAR"] = 1
        prm = lw.params([y.size])
    else:
        prm = lw.params(broadcast_block(y.shape, [a.shape, b.shape]))
    lw.launch(FILE, "binary", defines, [a, b, y, prm], [y.size], [WG], node=node)


# --- Select, Convert, PRelu, BatchNormInference ------------------------------------------------
def _all_types_supported(node: Node) -> str | None:
    if not all(supported_type(x) for x in _types(node)):
        return "an element type of this node is not supported on GPU"
    if getattr(node.attrs, "auto_broadcast", "numpy") == "pdpd":
        return "auto_broadcast='pdpd' has no GPU kernel"
    return None


@kernel("Select", supports=_all_types_supported)
def lower_select(node: Node, lw: Lowering, epilogue: Epilogue | None = None) -> None:
    c, t, e = (lw.input(node, i) for i in range(3))
    y = lw.new_output(node)
    defines: dict[str, Any] = {"SELECT": 1}
    for name, x in (("A", c), ("B", t), ("C", e), ("Y", y)):
        defines.update(x.storage.macros(name))
    prm = lw.params(broadcast_block(y.shape, [c.shape, t.shape, e.shape]))
    lw.launch(FILE, "select_op", defines, [c, t, e, y, prm], [y.size], [WG], node=node)


def _convert_supports(node: Node) -> str | None:
    return _all_types_supported(node)


def convert_expr(src: Storage, dst: Storage) -> str:
    """Float to integer as x86 C++ static_cast (opforge's reference): truncation, the minimum
    integer for NaN and out-of-range values of the 32-bit (64-bit for i64/u32) conversion,
    then wrap-around to narrower types; everything else is a C cast."""
    if not src.is_float or dst.is_float or dst.type is Type.boolean:
        return "(x)"
    if dst.ctype == "ulong":
        return ("(((x) >= 0 && (x) < 1.8446744073709552e19) ? (ulong)(x) : "
                "(((x) < 0 && (x) >= -9.223372036854775808e18) ? (ulong)(long)(x) : (ulong)0x8000000000000000UL))")
    if dst.ctype in ("long", "uint"):
        return ("(" + dst.ctype + ")((isnan(x) || (x) < -9.223372036854775807e18 || (x) >= 9.223372036854775807e18) "
                "? LONG_MIN : (long)(x))")
    return "((isnan(x) || (x) < -2147483648.0f || (x) >= 2147483648.0f) ? INT_MIN : (int)(x))"


@kernel("Convert", "ConvertLike", supports=_convert_supports)
def lower_convert(node: Node, lw: Lowering, epilogue: Epilogue | None = None) -> None:
    x = lw.input(node, 0)
    y = lw.new_output(node)
    if x.storage == y.storage:
        lw.set_output(node, 0, lw.view(x, y.shape))
        return
    src, dst = x.storage, y.storage
    defines: dict[str, Any] = {"UNARY_OP(x)": convert_expr(src, dst), "CT": src.compute}
    defines.update(src.macros("A"))
    defines.update(dst.macros("Y"))
    prm = lw.params([y.size, 0, 0])
    lw.launch(FILE, "unary", defines, [x, y, prm], [y.size], [WG], node=node)


def _float_only(node: Node) -> str | None:
    bad = _all_types_supported(node)
    if bad:
        return bad
    if not node.inputs[0].element_type.is_float:
        return f"{node.type_name} of {node.inputs[0].element_type} has no GPU kernel"
    return None


@kernel("PRelu", supports=_float_only)
def lower_prelu(node: Node, lw: Lowering, epilogue: Epilogue | None = None) -> None:
    x, s = lw.input(node, 0), lw.input(node, 1)
    y = lw.new_output(node)
    s_shape = list(s.shape)
    if len(s_shape) == 1 and len(y.shape) >= 2 and s_shape[0] == y.shape[1] and s_shape[0] != y.shape[-1]:
        # OpenVINO aligns a 1-D slope with the channel axis
        s_shape = [1, s_shape[0]] + [1] * (len(y.shape) - 2)
    defines: dict[str, Any] = {"PRELU": 1}
    defines.update(x.storage.macros("A"))
    defines.update(s.storage.macros("B"))
    defines.update(y.storage.macros("Y"))
    prm = lw.params(broadcast_block(y.shape, [x.shape, s_shape]))
    lw.launch(FILE, "prelu", defines, [x, s, y, prm], [y.size], [WG], node=node)


def _bn_supports(node: Node) -> str | None:
    from opforge_gpu.epilogue import batch_norm_affine

    bad = _float_only(node)
    if bad:
        return bad
    if batch_norm_affine(node) is None and any(i.partial_shape.rank != 1 for i in _bn_params(node)):
        return "BatchNormInference with run-time gamma/beta/mean/variance needs them 1-D"
    return None


def _bn_params(node: Node) -> list[Any]:
    """The gamma, beta, mean and variance inputs (opset1 puts the data third)."""
    return [node.inputs[i] for i in ((0, 1, 3, 4) if node.version == "opset1" else (1, 2, 3, 4))]


@kernel("BatchNormInference", supports=_bn_supports)
def lower_batch_norm(node: Node, lw: Lowering, epilogue: Epilogue | None = None) -> None:
    from opforge_gpu.epilogue import batch_norm_affine

    folded = batch_norm_affine(node)
    if folded is None:
        _batch_norm_at_run_time(node, lw)
        return
    scale, shift, di = folded
    x = lw.input(node, di)
    y = lw.new_output(node)
    shape = [1, len(scale)] + [1] * (len(y.shape) - 2)
    t = node.output_specs[0].type
    s = lw.const_tensor(scale.astype(np.float32).reshape(shape), t)
    b = lw.const_tensor(shift.astype(np.float32).reshape(shape), t)
    tmp = lw.temp(y.shape, y.storage)
    run_binary(lw, node, x, s, tmp, "((a) * (b))")
    run_binary(lw, node, tmp, b, y, "((a) + (b))")


def _batch_norm_at_run_time(node: Node, lw: Lowering) -> None:
    """``(x - mean) / sqrt(var + eps) * gamma + beta`` per channel (axis 1), parameters fed at run
    time (viewed [1, C, 1, ...] to broadcast), in the order ONNX's reference computes it."""
    x = lw.input(node, 2 if node.version == "opset1" else 0)
    y = lw.new_output(node)
    per_channel = [1, y.shape[1]] + [1] * (len(y.shape) - 2)
    g, b, m, v = (lw.view(lw.input_of(i, node), per_channel) for i in _bn_params(node))
    eps = float(node.attrs.epsilon)  # type: ignore[attr-defined]
    ct = y.storage.compute
    std = lw.temp(per_channel, y.storage)
    run_unary(lw, node, v, std, f"sqrt((x) + ({ct})({eps!r}))")
    t1, t2 = lw.temp(y.shape, y.storage), lw.temp(y.shape, y.storage)
    run_binary(lw, node, x, m, t1, "((a) - (b))")
    run_binary(lw, node, t1, std, t2, "((a) / (b))")
    run_binary(lw, node, t2, g, t1, "((a) * (b))")
    run_binary(lw, node, t1, b, y, "((a) + (b))")
