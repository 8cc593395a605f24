"""Custom ops of the legacy-MYRIAD-kernel tests, with NumPy references (``evaluate``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import opforge


class MvnAttrs(opforge.OpAttrs):
    eps: float = 1e-5
    gamma: list[float] = []


class VpuMvn(opforge.Op):
    """Per (batch, channel) normalization over Y, X, scaled per channel by ``gamma``."""

    type_name = "VpuMvn"
    version = "vpu_test"
    Attrs = MvnAttrs

    @classmethod
    def infer(cls, ctx: opforge.InferContext) -> list[opforge.TensorSpec]:
        return [opforge.TensorSpec(ctx.input_type(0), ctx.input_shape(0))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x = inputs[0].astype(np.float64)
        mean = x.mean(axis=(2, 3), keepdims=True)
        var = x.var(axis=(2, 3), keepdims=True)
        g = np.asarray(attrs.gamma, np.float64).reshape(1, -1, 1, 1)
        return [((x - mean) / np.sqrt(var + attrs.eps) * g).astype(inputs[0].dtype)]


class GrnAttrs(opforge.OpAttrs):
    bias: float = 1.0


class VpuGrn(opforge.Op):
    """OpenVINO's GRN: each pixel divided by the L2 norm of its channels (plus ``bias``)."""

    type_name = "VpuGrn"
    version = "vpu_test"
    Attrs = GrnAttrs

    @classmethod
    def infer(cls, ctx: opforge.InferContext) -> list[opforge.TensorSpec]:
        return [opforge.TensorSpec(ctx.input_type(0), ctx.input_shape(0))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x = inputs[0].astype(np.float64)
        return [(x / np.sqrt(attrs.bias + (x * x).sum(axis=1, keepdims=True))).astype(inputs[0].dtype)]


class DecodeAttrs(opforge.OpAttrs):
    blank_index: int = 0


class VpuGreedyDecode(opforge.Op):
    """[1, T, C] scores -> [1, T] classes: best class per step, repeats merged, blanks dropped, -1 padded."""

    type_name = "VpuGreedyDecode"
    version = "vpu_test"
    Attrs = DecodeAttrs

    @classmethod
    def infer(cls, ctx: opforge.InferContext) -> list[opforge.TensorSpec]:
        shape = ctx.input_shape(0)
        return [opforge.TensorSpec(ctx.input_type(0), opforge.PartialShape([shape[0], shape[1]]))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        best = inputs[0][0].argmax(axis=1)
        out, prev = [], -1
        for b in best:
            if b != prev and b != attrs.blank_index:
                out.append(float(b))
            prev = int(b)
        out += [-1.0] * (len(best) - len(out))
        return [np.asarray([out], inputs[0].dtype)]


class BoxAttrs(opforge.OpAttrs):
    kernel: list[int] = [3, 3]


class VpuBox(opforge.Op):
    """kernel [3, 3]: a zero-padded 3x3 mean; kernel [1, 1]: each channel f scaled by f + 1."""

    type_name = "VpuBox"
    version = "vpu_test"
    Attrs = BoxAttrs

    @classmethod
    def infer(cls, ctx: opforge.InferContext) -> list[opforge.TensorSpec]:
        return [opforge.TensorSpec(ctx.input_type(0), ctx.input_shape(0))]

    @classmethod
    def evaluate(cls, attrs: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        x = inputs[0].astype(np.float64)
        k = int(attrs.kernel[1])
        if k == 1:
            f = np.arange(1, x.shape[1] + 1, dtype=np.float64).reshape(1, -1, 1, 1)
            return [(x * f).astype(inputs[0].dtype)]
        r = k // 2
        pad = np.pad(x, ((0, 0), (0, 0), (r, r), (r, r)))
        out = np.zeros_like(x)
        for dy in range(k):
            for dx in range(k):
                out += pad[:, :, dy:dy + x.shape[2], dx:dx + x.shape[3]]
        return [(out / (k * k)).astype(inputs[0].dtype)]


ALL = (VpuMvn, VpuGrn, VpuGreedyDecode, VpuBox)
