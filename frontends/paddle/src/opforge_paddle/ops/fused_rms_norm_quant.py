"""fused_rms_norm_quant (x, bias, residual, norm_weight, norm_bias -> out, residual_out, inv_var):
what ``paddle.incubate.nn.functional.fused_rms_norm`` saves. RMSNormalization over dims
``begin_norm_axis``.. of ``x`` (plus ``bias`` and ``residual`` when a residual is given, which is
then also ``residual_out``), times ``norm_weight``, plus ``norm_bias``. Weights are stored
flattened over the normalised dims.

Refused with an error rather than guessed: an int8 output (``quant_scale`` > 0), and ``bias``
without ``residual`` (paddle's CPU kernel then ignores ``bias``). ``inv_var`` is not produced:
inference graphs do not read it, and a model that does is refused naming the output.
"""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_paddle.ops._helpers import Output, etype, i64, norm_axis, out, rank, translator
from opforge_paddle.pir_signatures import Arg, PirOp


def _over_tail(ctx: NodeContext, port: str, shape: list[int], like: Output) -> Output:
    """Input ``port`` (flattened over the normalised dims) shaped to them, in ``like``'s type."""
    v = out(ctx.op("Reshape", ctx.get_input(port), i64(ctx, shape), special_zero=False))
    return v if etype(v) == etype(like) else out(ctx.op("Convert", v, destination_type=etype(like)))


def convert(ctx: NodeContext) -> ConversionResult:
    x = out(ctx.get_input("x"))
    r = rank(ctx, x, "input 'x'")
    begin = norm_axis(ctx, int(ctx.get_attribute("begin_norm_axis", 1)), r)
    if float(ctx.get_attribute("quant_scale", -1.0)) > 0:
        raise ctx.error("quant_scale > 0 (an int8 quantised output) is not supported; opforge converts the "
                        "floating-point form only")
    has_residual = ctx.has_input("residual")
    if ctx.has_input("bias") and not has_residual:
        raise ctx.error("input 'bias' is given without 'residual'; paddle adds bias only together with a "
                        "residual (its CPU kernel ignores it otherwise), so this form is not converted")
    tail = x.partial_shape.dims[begin:]
    if len(tail) > 1 and sum(d is None for d in tail) > 1:
        raise ctx.error(f"the normalised dims {list(tail)} of input 'x' have more than one dynamic size; "
                        "the flattened weights cannot be reshaped to them")
    # [-1] when the normalised dims are one, else their sizes (at most one unknown)
    shape = [int(d) if d is not None else -1 for d in tail] if len(tail) > 1 else [-1]
    if has_residual:
        if ctx.has_input("bias"):
            x = out(ctx.op("Add", x, _over_tail(ctx, "bias", shape, x)))
        x = out(ctx.op("Add", x, ctx.get_input("residual")))
    y = out(ctx.op("RMSNormalization", x, _over_tail(ctx, "norm_weight", shape, x), axis=begin,
                   epsilon=float(ctx.get_attribute("epsilon", 1e-5))))
    if ctx.has_input("norm_bias"):
        y = out(ctx.op("Add", y, _over_tail(ctx, "norm_bias", shape, y)))
    return {"out": y, "residual_out": x} if has_residual else {"out": y}


EXTENSION = translator("fused_rms_norm_quant", convert)

PIR = PirOp("fused_rms_norm_quant", "fused_rms_norm_quant",
            (Arg("x"), Arg("bias"), Arg("residual"), Arg("norm_weight"), Arg("norm_bias")),
            ("out", "residual_out", "inv_var"))
