"""Convolution/GroupConvolution/ConvolutionBackpropData/MatMul of a quantized input and constant
weights, with its bias, activation and quantize tail -> one QuantizedConvolution /
QuantizedConvolutionBackpropData / QuantizedMatMul."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from opforge.element_type import Type
from opforge.graph import Model, Node
from opforge.opset.constant import Constant
from opforge.transformations import pattern as p

from opforge_cpu.ops._quantized import QuantizedOp
from opforge_cpu.ops.quantized_convolution import QuantizedConvolution
from opforge_cpu.ops.quantized_convolution_backprop_data import QuantizedConvolutionBackpropData
from opforge_cpu.ops.quantized_mat_mul import QuantizedMatMul
from opforge_cpu.passes.int8.no_vnni import DW_EXACT, PAIR_SAFE_WEIGHT, SEVEN_BIT, pairs_saturate, seven_bit
from opforge_cpu.passes.int8.qdq_patterns import (
    QuantizedInput,
    Requantize,
    centred,
    channel_vector,
    dequantized,
    dequantized_constant,
    is_standard,
    quantize_after,
    requantize_after,
    single_user,
)
from opforge_cpu.passes.int8.weights import int8_weights


def _depthwise(node: Node) -> bool:
    """A GroupConvolution of one input and one output channel per group: oneDNN's int8 depthwise
    kernels multiply in int32 (vpmulld), with no int16 pairs to saturate."""
    w = node.inputs[1].shape
    return node.type_name == "GroupConvolution" and len(w) >= 3 and w[1] == 1 and w[2] == 1


class QuantizedOpFusion(p.MatcherPass):
    """Convolution/GroupConvolution/MatMul of a dequantized (or zero-point-centred) u8/i8 input
    and constant weights, with its tail -> one QuantizedConvolution/QuantizedMatMul; a
    ConvolutionBackpropData (ConvTranspose) of a dequantized input, without an output_shape
    input -> QuantizedConvolutionBackpropData."""

    name: ClassVar[str] = "cpu_int8_quantized_ops"

    def pattern(self) -> p.PatternNode:
        return p.op(["Convolution", "GroupConvolution", "ConvolutionBackpropData", "MatMul"], p.capture("x"), p.capture("w"),
                    predicate=lambda out: out.node.op.is_standard and out.partial_shape.is_static)

    def callback(self, match: p.Match, model: Model) -> bool:
        node = match.root.node
        x = match["x"]
        if not x.partial_shape.is_static:
            return False
        integer = x.element_type is Type.i32
        src = centred(x) if integer else dequantized(x)
        if src is None:
            return False
        is_mm = node.type_name == "MatMul"
        deconv = node.type_name == "ConvolutionBackpropData"
        wv = match["w"].node.constant_value()
        if deconv and (integer or wv is None or wv.ndim != len(x.shape)):
            return False  # (no QLinear form; weights folded by the frontend only; not grouped)
        if wv is None:
            return self._dequantized_weights(match, model, src)
        w = wv
        if is_mm:
            if node.attrs.transpose_a or w.ndim != 2 or len(x.shape) < 2:  # type: ignore[attr-defined]
                return False
            w = w if node.attrs.transpose_b else w.T  # type: ignore[attr-defined]
            rows = w  # [N, K]: one row per output column
        elif deconv:
            # [C_in, C_out, k...]: the output channels are axis 1
            rows = np.moveaxis(w, 1, 0).reshape(w.shape[1], -1)
        else:
            rows = w.reshape(-1, int(np.prod(w.shape[2:] if node.type_name == "GroupConvolution" else w.shape[1:])))
        channels = rows.shape[0]
        if integer:
            got = self._integer_weights(rows)
        else:
            got = int8_weights(rows)
        if got is None:
            return False
        q_rows, w_scale = got
        if is_mm:
            q_w = np.ascontiguousarray(q_rows.T)
        elif deconv:
            q_w = np.ascontiguousarray(np.moveaxis(q_rows.reshape((w.shape[1], w.shape[0], *w.shape[2:])), 0, 1))
        else:
            q_w = q_rows.reshape(w.shape)
        return self._replace(match, model, src, q_w, w_scale, channels, integer)

    def _dequantized_weights(self, match: p.Match, model: Model, src: QuantizedInput) -> bool:
        """Weights still computed at run time as DequantizeLinear of a constant s8 tensor: those
        too large to fold while converting (a VGG's 100M-weight FC layers), where the int8
        values and scales are there to read."""
        node = match.root.node
        got = dequantized_constant(match["w"])
        if got is None or node.type_name == "GroupConvolution":
            return False
        q, scale = got
        if node.type_name == "MatMul":
            if node.attrs.transpose_a or q.ndim != 2 or len(match["x"].shape) < 2:  # type: ignore[attr-defined]
                return False
            axis = 0 if node.attrs.transpose_b else 1  # type: ignore[attr-defined]
            q_w = np.ascontiguousarray(q.T if node.attrs.transpose_b else q)  # type: ignore[attr-defined]
        else:
            axis, q_w = 0, q
        channels = q.shape[axis]
        s = np.asarray(scale, np.float64)
        s = s.reshape((1,) * (q.ndim - s.ndim) + s.shape)
        if any(d != 1 for i, d in enumerate(s.shape) if i != axis) or s.shape[axis] not in (1, channels):
            return False
        w_scale = np.broadcast_to(s.reshape(-1), (channels,)).astype(np.float32)
        return self._replace(match, model, src, q_w, w_scale, channels, False)

    def _replace(self, match: p.Match, model: Model, src: QuantizedInput, q_w: np.ndarray, w_scale: np.ndarray,
                 channels: int, integer: bool) -> bool:
        node = match.root.node
        is_mm = node.type_name == "MatMul"
        if (pairs_saturate() and not (DW_EXACT and _depthwise(node))
                and int(np.abs(q_w.astype(np.int16)).max(initial=0)) > PAIR_SAFE_WEIGHT):
            if not SEVEN_BIT:
                return False  # see NO_VNNI: the f32 path gives the right answer, full-range int8 would not
            axes = -1 if is_mm or node.type_name == "ConvolutionBackpropData" else 2 if node.type_name == "GroupConvolution" else 1
            q_w, w_scale = seven_bit(q_w, w_scale, axes)
        uses = model.consumers()
        fused = [node]
        cur = node.output(0)
        bias: np.ndarray | None = None
        post: list[tuple[str, dict[str, float]]] = []
        out: Requantize | None = None
        if integer:
            user = single_user(uses, cur)
            if user is not None and is_standard(user, "Add"):
                other = user.inputs[1] if user.inputs[0] == cur else user.inputs[0]
                bias = channel_vector(other.node.constant_value(), len(cur.shape), channels, conv=not is_mm)
                if bias is None or other.element_type is not Type.i32:
                    return False
                fused.append(user)
                cur = user.output(0)
            req = requantize_after(uses, cur, channels, conv=not is_mm)
            if req is None:
                return False  # an i32 result read as such: the exact integer kernels run it
            m, out = req
            w_scale = (w_scale * m).astype(np.float32)  # real units = acc * M
            if bias is not None:
                bias = bias * m
        else:
            while True:
                user = single_user(uses, cur)
                if user is None or user.output(0).element_type is not Type.f32 or tuple(user.output(0).shape) != tuple(cur.shape):
                    break
                if is_standard(user, "Add") and bias is None and not post:
                    other = user.inputs[1] if user.inputs[0] == cur else user.inputs[0]
                    bias = channel_vector(other.node.constant_value(), len(cur.shape), channels, conv=not is_mm)
                    if bias is None:
                        break
                elif is_standard(user, "Relu"):
                    post.append(("Relu", {}))
                elif is_standard(user, "Clamp"):
                    post.append(("Clamp", {"min": float(user.attrs.min), "max": float(user.attrs.max)}))  # type: ignore[attr-defined]
                else:
                    break
                fused.append(user)
                cur = user.output(0)
            out = quantize_after(uses, cur)
        attrs: dict[str, object] = {
            "src_scale": src.scale, "src_zero_point": src.zero_point, "post_ops": post,
            "output_type": "f32" if out is None else out.type.ir,
        }
        if out is not None:
            attrs |= {"dst_scale": out.scale, "dst_zero_point": out.zero_point}
        if not is_mm:
            attrs |= {k: getattr(node.attrs, k) for k in ("strides", "pads_begin", "pads_end", "dilations", "auto_pad")}
        if node.type_name == "ConvolutionBackpropData":
            attrs["output_padding"] = node.attrs.output_padding  # type: ignore[attr-defined]
        consts = [q_w, w_scale] + ([] if bias is None else [bias.astype(np.float32)])
        ins = [src.q] + [Node.create(Constant, [], {"value": np.ascontiguousarray(c)}, name=f"{node.name}/int8/{k}").output(0)
                         for k, c in zip(("weights", "weight_scales", "bias"), consts)]
        op: type[QuantizedOp] = QuantizedMatMul if is_mm else QuantizedConvolution
        if node.type_name == "ConvolutionBackpropData":
            op = QuantizedConvolutionBackpropData
        new = Node.create(op, ins, attrs, name=node.name if out is None else out.out.node.name)
        all_nodes = fused + ([] if out is None else out.nodes)
        new.rt_info["fused_names"] = [n.name for n in all_nodes]
        model.replace_output(cur if out is None else out.out, new.output(0))
        return True

    @staticmethod
    def _integer_weights(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """Centred QLinear weights: i32 values that fit int8 (scale 1; M carries the scales)."""
        if rows.dtype != np.int32 or rows.size == 0 or rows.min() < -128 or rows.max() > 127:
            return None
        return rows.astype(np.int8), np.ones(rows.shape[0], np.float32)
