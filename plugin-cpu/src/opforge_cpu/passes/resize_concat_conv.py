"""A 1x1 convolution over a Concat of upsampled maps -> the convolution before each upsampling.

SegFormer's all-MLP decode head (and heads built like it) projects each encoder stage to D
channels, resizes every stage bilinearly to the largest map, concatenates the four and mixes them
with a 1x1 convolution: ``Conv1x1(Concat(Resize(x_0), ..., Resize(x_3)), W)`` over 4 D channels at
the full resolution. hf_segformer (D 256, 64x64) spends 11 ms of its 26 (f32, 1 thread, Zen 5) in
that one convolution, 2.15 GFLOP. Both a 1x1 convolution (a per-pixel channel mix) and every
Interpolate mode that resizes the spatial axes only (nearest, linear, cubic: each output pixel a
fixed combination of input pixels of the same channel; zero padding included) are linear maps
acting on different axes, so they commute:

    Conv1x1(Concat_i(Resize_i(x_i)), W) = sum_i Resize_i(Conv1x1(x_i, W_i))

with ``W_i`` the columns of ``W`` that read branch i. Each branch's convolution then runs at the
branch's own resolution (SegFormer-B0: 64x64, 32x32, 16x16, 8x8; 0.71 GFLOP in all instead of
2.15), and the Resize moves D output channels instead of the branch's. A bias Add and an
activation after the convolution stay after the sum. :class:`ConvThroughResize` does this when the
multiply-adds it saves exceed 16 times the elements its extra Adds and wider Resizes touch.

Two passes around it:

- :class:`IdentityInterpolate`: an Interpolate whose output shape equals its input shape is the
  identity for the modes and coordinate rules where output pixel x reads input pixel x with weight
  1 (nearest, linear; half_pixel, pytorch_half_pixel, asymmetric, align_corners; no padding), so it
  goes. SegFormer resizes its stage-0 map to its own size: 0.55 ms (f32), more in bf16.
- :class:`ConvIntoTokenMatMul`: a 1x1 convolution of a token projection viewed channels-first,
  ``Conv1x1(Reshape(Transpose(MatMul(a, Wm) + b, [0, 2, 1]), [B, C, H, W]), W)``, is one
  projection ``MatMul(a, Wm W^T) + b W^T`` viewed the same way (the weights multiplied once, in
  float64). After :class:`ConvThroughResize`, SegFormer's per-stage convolutions are such: its
  ``linear_c`` MLPs feed them, so each stage is projected straight from its encoder width (32, 64,
  160, 256) to the mixed D channels. Only when the merged weights are not larger work per row
  (K Cout <= K C + C Cout).

The results differ from the unfused graph by rounding only (sums in another order; f32 outputs of
hf_segformer within 2e-6 of ONNX Runtime's relative to their range). OPFORGE_CPU_CONV_THROUGH_RESIZE=0
turns the three passes off."""

from __future__ import annotations

import os
from typing import ClassVar

import numpy as np
from opforge.element_type import Type
from opforge.graph import Model, Node, Output
from opforge.opset.add import Add
from opforge.opset.concat import Concat
from opforge.opset.constant import Constant
from opforge.opset.convolution import Convolution
from opforge.opset.interpolate import Interpolate
from opforge.opset.mat_mul import MatMul
from opforge.opset.reshape import Reshape
from opforge.opset.transpose import Transpose
from opforge.transformations import pattern as p
from opforge.transformations.merge_transposes import permutation

Uses = dict[Output, list[tuple[Node, int]]]

# Interpolate modes that are linear in the data and act on each (n, c) plane alike.
_LINEAR_MODES = ("nearest", "linear", "linear_onnx", "cubic", "bilinear_pillow", "bicubic_pillow")
# Coordinate rules under which a same-size resize maps output x to input x exactly (tf_half_pixel_for_nn
# maps x to x + 0.5, which round_prefer_ceil / ceil round to x + 1).
_IDENTITY_COORDS = ("half_pixel", "pytorch_half_pixel", "asymmetric", "align_corners")
# Saved multiply-adds per added element (an Add pass or a wider Resize) before the split pays.
_MIN_SAVING = 16


def _enabled() -> bool:
    return os.environ.get("OPFORGE_CPU_CONV_THROUGH_RESIZE", "1") != "0"


def _static(out: Output) -> tuple[int, ...] | None:
    shape = out.partial_shape
    return tuple(int(d) for d in shape.to_tuple()) if shape.is_static else None


def _sole_reader(uses: Uses, out: Output) -> Node | None:
    readers = uses.get(out, [])
    if len(readers) != 1 or readers[0][0].type_name == "Result":
        return None
    return readers[0][0]


def _const(out: Output) -> np.ndarray | None:
    return out.node.constant_value()


def _no_pads(node: Node) -> bool:
    a = node.attrs
    return not any(a.pads_begin) and not any(a.pads_end)  # type: ignore[attr-defined]


def _pointwise_conv(node: Node) -> np.ndarray | None:
    """The [Cout, Cin] f32 weights of a standard 2-D 1x1 convolution with unit strides and no
    padding (the per-pixel channel mix), else None."""
    if node.type_name != "Convolution" or not node.op.is_standard:
        return None
    w = _const(node.inputs[1])
    a = node.attrs
    if w is None or w.dtype != np.float32 or w.ndim != 4 or w.shape[2:] != (1, 1):
        return None
    # A 1x1 kernel at unit strides pads nothing under any auto_pad rule.
    if any(s != 1 for s in a.strides) or any(d != 1 for d in a.dilations) or not _no_pads(node):  # type: ignore[attr-defined]
        return None
    if node.output(0).element_type is not Type.f32 or _static(node.inputs[0]) is None:
        return None
    return w[:, :, 0, 0]


def _spatial_resize(node: Node) -> bool:
    """A standard Interpolate of a static rank-4 f32 tensor that keeps N and C, with constant
    sizes/scales (and axes), no padding, in a mode that is linear per channel plane."""
    if node.type_name != "Interpolate" or not node.op.is_standard:
        return False
    a = node.attrs
    src, dst = _static(node.inputs[0]), _static(node.output(0))
    if src is None or dst is None or len(src) != 4 or src[:2] != dst[:2]:
        return False
    if node.output(0).element_type is not Type.f32 or a.mode not in _LINEAR_MODES or not _no_pads(node):  # type: ignore[attr-defined]
        return False
    return all(_const(v) is not None for v in node.inputs[1:])


def _identity_resize(node: Node) -> bool:
    a = node.attrs
    return (_spatial_resize(node) and _static(node.inputs[0]) == _static(node.output(0))
            and a.mode in ("nearest", "linear", "linear_onnx")  # type: ignore[attr-defined]
            and not a.antialias and a.coordinate_transformation_mode in _IDENTITY_COORDS)  # type: ignore[attr-defined]


def _constant(value: np.ndarray, name: str) -> Output:
    return Node.create(Constant, [], {"value": value}, name=name).output(0)


def _conv(x: Output, w: np.ndarray, like: Node, name: str) -> Output:
    """A copy of pointwise convolution ``like`` (its attributes) with weights ``w`` [Cout, Cin]."""
    weights = _constant(np.ascontiguousarray(w, np.float32)[:, :, None, None], f"{name}/weights")
    return Node(Convolution, [x, weights], like.attrs, name).output(0)


def _resize_to_channels(node: Node, x: Output, channels: int, name: str) -> Output:
    """Interpolate ``node`` applied to ``x``, which has ``channels`` channels: a "sizes" input
    that names axis 1 gets that count."""
    inputs = list(node.inputs)
    a = node.attrs
    if a.shape_calculation_mode == "sizes":  # type: ignore[attr-defined]
        values = np.array(_const(inputs[1]))
        axes = [int(v) for v in _const(inputs[2]).reshape(-1)] if len(inputs) > 2 else list(range(4))  # type: ignore[union-attr]
        if 1 in axes:
            values.reshape(-1)[axes.index(1)] = channels
            inputs[1] = _constant(values, f"{name}/sizes")
    return Node(Interpolate, [x, *inputs[1:]], a, name).output(0)


class IdentityInterpolate(p.MatcherPass):
    """Interpolate to its own input's shape (nearest/linear, no padding) -> its input."""

    name: ClassVar[str] = "cpu_identity_interpolate"
    order: ClassVar[int] = 105  # after the CPU's chain passes (101-104); before cpu_conv_through_resize

    def pattern(self) -> p.PatternNode:
        return p.op("Interpolate")

    def callback(self, match: p.Match, model: Model) -> bool:
        node = match.root.node
        if not _enabled() or not _identity_resize(node):
            return False
        out = node.output(0)
        if any(r.type_name == "Result" for r, _ in model.consumers().get(out, [])):
            return False  # a model output keeps its own tensor (and name)
        model.replace_output(out, node.inputs[0])
        return True


class ConvThroughResize(p.MatcherPass):
    """Conv1x1(Concat(axis 1) of upsampled and plain maps) -> the sum of per-branch 1x1
    convolutions, each upsampled branch's convolution taken before its Interpolate."""

    name: ClassVar[str] = "cpu_conv_through_resize"
    order: ClassVar[int] = 106

    def pattern(self) -> p.PatternNode:
        return p.op("Convolution")

    def callback(self, match: p.Match, model: Model) -> bool:
        conv = match.root.node
        w = _pointwise_conv(conv) if _enabled() else None
        cat = conv.inputs[0].node
        if w is None or cat.type_name != "Concat" or not cat.op.is_standard:
            return False
        uses = model.consumers()
        if _sole_reader(uses, cat.output(0)) is not conv or cat.attrs.axis not in (1, -3):  # type: ignore[attr-defined]
            return False
        out = _static(conv.output(0))
        if out is None or len(out) != 4:
            return False
        cout, pixels = out[1], out[2] * out[3]
        plain: list[tuple[Output, int, int]] = []  # (source, first column of W, channels)
        resized: list[tuple[Node, int, int, int]] = []  # (Interpolate, first column, channels, its input's pixels)
        offset = 0
        for x in cat.inputs:
            shape = _static(x)
            if shape is None or len(shape) != 4:
                return False
            n = x.node
            if (_spatial_resize(n) and _sole_reader(uses, x) is cat
                    and (src := _static(n.inputs[0])) is not None and src[2] * src[3] < pixels):
                resized.append((n, offset, shape[1], src[2] * src[3]))
            else:
                plain.append((x, offset, shape[1]))
            offset += shape[1]
        if not resized or offset != w.shape[1]:
            return False
        # Work saved: each upsampled branch's convolution over its own pixels instead of the full
        # map. Work added: an Add of the full output per branch after the first, and each
        # Resize writing Cout channels instead of the branch's own.
        saved = sum(c * cout * (pixels - src_pixels) for _, _, c, src_pixels in resized)
        added = sum(cout * pixels + max(cout - c, 0) * pixels for _, _, c, _ in resized)
        if saved < _MIN_SAVING * added:
            return False
        terms: list[Output] = []
        if plain:
            srcs = [x for x, _, _ in plain]
            cols = np.concatenate([w[:, o:o + c] for _, o, c in plain], axis=1)
            x = srcs[0] if len(srcs) == 1 else Node.create(Concat, srcs, {"axis": 1}, name=f"{cat.name}/plain").output(0)
            terms.append(_conv(x, cols, conv, f"{conv.name}/plain"))
        for k, (n, o, c, _) in enumerate(resized):
            branch = _conv(n.inputs[0], w[:, o:o + c], conv, f"{conv.name}/branch{k}")
            terms.append(_resize_to_channels(n, branch, cout, f"{n.name}/after_conv"))
        # The full-resolution (plain) term first: the emitter fuses the Adds that follow into it
        # as a sum post-op where it can; the upsampled terms are added to it one by one.
        total = terms[0]
        for k, t in enumerate(terms[1:]):
            total = Node.create(Add, [total, t], name=f"{conv.name}/sum{k}").output(0)
        model.replace_output(conv.output(0), total)
        return True


def _token_projection(uses: Uses, x: Output) -> tuple[Output, np.ndarray, np.ndarray | None] | None:
    """(a, Wm [K, C], bias [C] or None) when ``x`` is Reshape([B, C, L] -> [B, C, H, W]) of
    Transpose([0, 2, 1]) of MatMul(a [B, L, K], constant Wm) (+ a constant bias of C values),
    each read by the next alone."""
    reshape = x.node
    if reshape.type_name != "Reshape" or not reshape.op.is_standard:
        return None
    tr = reshape.inputs[0].node
    if tr.type_name != "Transpose" or not tr.op.is_standard or permutation(tr) != [0, 2, 1]:
        return None
    if _sole_reader(uses, tr.output(0)) is not reshape:
        return None
    tokens, view = _static(tr.inputs[0]), _static(x)
    if tokens is None or view is None or len(tokens) != 3 or len(view) != 4:
        return None
    if view[:2] != (tokens[0], tokens[2]) or view[2] * view[3] != tokens[1]:
        return None  # not the channels-first view of the tokens
    bias: np.ndarray | None = None
    mm = tr.inputs[0].node
    if mm.type_name == "Add" and mm.op.is_standard:
        add = mm
        if _sole_reader(uses, add.output(0)) is not tr:
            return None
        values = [_const(v) for v in add.inputs]
        bias_at = next((i for i in (0, 1) if values[i] is not None), None)
        if bias_at is None:
            return None
        bias = values[bias_at]
        if bias is None or bias.dtype != np.float32 or bias.size != tokens[2] or bias.shape[-1:] != (tokens[2],):
            return None  # a bias over the channels only (not per token)
        mm = add.inputs[1 - bias_at].node
        if _sole_reader(uses, mm.output(0)) is not add:
            return None
    elif _sole_reader(uses, mm.output(0)) is not tr:
        return None
    if mm.type_name != "MatMul" or not mm.op.is_standard or mm.attrs.transpose_a:  # type: ignore[attr-defined]
        return None
    wm = _const(mm.inputs[1])
    if wm is None or wm.dtype != np.float32 or wm.ndim != 2 or _static(mm.inputs[0]) is None:
        return None
    wm = wm.T if mm.attrs.transpose_b else wm  # type: ignore[attr-defined]
    return mm.inputs[0], wm, None if bias is None else bias.reshape(-1)


class ConvIntoTokenMatMul(p.MatcherPass):
    """Conv1x1 of a token projection viewed channels-first -> one projection, viewed the same way."""

    name: ClassVar[str] = "cpu_conv_into_token_matmul"
    order: ClassVar[int] = 107  # after cpu_conv_through_resize, whose branch convolutions it folds

    def pattern(self) -> p.PatternNode:
        return p.op("Convolution")

    def callback(self, match: p.Match, model: Model) -> bool:
        conv = match.root.node
        w = _pointwise_conv(conv) if _enabled() else None
        shape = _static(conv.output(0))
        found = None if w is None else _token_projection(model.consumers(), conv.inputs[0])
        if w is None or found is None or shape is None:
            return False
        a, wm, bias = found
        k, c = wm.shape
        cout = w.shape[0]
        if w.shape[1] != c or k * cout > k * c + c * cout:
            return False  # the merged projection would do more work per token than the two
        w64 = w.astype(np.float64)
        merged = (wm.astype(np.float64) @ w64.T).astype(np.float32)
        y = Node.create(MatMul, [a, _constant(merged, f"{conv.name}/merged_weights")], name=f"{conv.name}/matmul").output(0)
        if bias is not None:
            b = (bias.astype(np.float64) @ w64.T).astype(np.float32)
            y = Node.create(Add, [y, _constant(b, f"{conv.name}/merged_bias")], name=f"{conv.name}/bias").output(0)
        t = Node.create(Transpose, [y, _constant(np.array([0, 2, 1], np.int64), f"{conv.name}/perm")],
                        name=f"{conv.name}/transpose").output(0)
        view = Node.create(Reshape, [t, _constant(np.array(shape, np.int64), f"{conv.name}/shape")],
                           {"special_zero": False}, name=conv.name).output(0)
        model.replace_output(conv.output(0), view)
        return True
