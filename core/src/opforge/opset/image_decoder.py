"""ImageDecoder: a JPEG/PNG/BMP/TIFF/WebP/PNM/JPEG 2000 byte stream decoded into an
``[H, W, C]`` u8 image (ONNX ImageDecoder-20), RGB, BGR or Grayscale (C = 1).

Not an OpenVINO operation: opforge's own standard op (listed under opset16, see
:mod:`opforge.opset.bit_cast`). The height and width come from the data, so the output shape is
dynamic; decoding is done on the host with Pillow (the image library ONNX's reference uses, so
lossy formats decode to the same pixels), by :func:`decode_image`, which devices call for this
op (see each device's documentation). Pillow is a dependency of ``opforge-onnx``.
"""

from __future__ import annotations

import io
from typing import Any, Literal

import numpy as np

from opforge.element_type import Type
from opforge.errors import KernelError, UnsupportedOpError
from opforge.op import InferContext, Op, OpAttrs, TensorSpec
from opforge.shape import PartialShape


class ImageDecoderAttrs(OpAttrs):
    pixel_format: Literal["RGB", "BGR", "Grayscale"] = "RGB"


def decode_image(encoded: np.ndarray, pixel_format: str, where: str = "ImageDecoder") -> np.ndarray:
    """The bytes of ``encoded`` (u8, 1-D) decoded into a u8 ``[H, W, 3]`` (RGB/BGR) or
    ``[H, W, 1]`` (Grayscale) array. ``where`` names the node in errors."""
    try:
        import PIL.Image
    except ImportError as err:  # pragma: no cover - Pillow comes with opforge-onnx
        raise UnsupportedOpError(f"{where}: decoding images needs Pillow (pip install pillow)") from err
    data = np.ascontiguousarray(encoded, dtype=np.uint8).tobytes()
    try:
        with PIL.Image.open(io.BytesIO(data)) as img:
            img.load()
            if pixel_format == "Grayscale":
                return np.asarray(img.convert("L"), dtype=np.uint8)[:, :, None].copy()
            rgb = np.asarray(img.convert("RGB"), dtype=np.uint8)
    except (OSError, ValueError, SyntaxError) as err:  # Pillow's errors for unreadable data
        raise KernelError(f"{where}: the input ({len(data)} bytes) is not an image Pillow can decode: {err}") from err
    return np.ascontiguousarray(rgb[:, :, ::-1] if pixel_format == "BGR" else rgb)


class ImageDecoder(Op):
    type_name = "ImageDecoder"
    data_dependent_shape = True
    host_stage = True
    version = "opset16"
    Attrs = ImageDecoderAttrs

    @classmethod
    def infer(cls, ctx: InferContext) -> list[TensorSpec]:
        a: ImageDecoderAttrs = ctx.attrs  # type: ignore[assignment]
        if ctx.input_type(0) not in (Type.u8, Type.dynamic):
            raise ctx.error(f"the encoded stream must be u8, got {ctx.input_type(0)}")
        r = ctx.input_shape(0).rank
        if r is not None and r != 1:
            raise ctx.error(f"the encoded stream must be 1-D, got rank {r}")
        channels = 1 if a.pixel_format == "Grayscale" else 3
        v = ctx.input_value(0)
        if v is not None:  # a constant image: its size is known now
            h, w, _ = decode_image(v, a.pixel_format, f"node '{ctx.node_name}' (ImageDecoder)").shape
            return [TensorSpec(Type.u8, PartialShape([h, w, channels]))]
        return [TensorSpec(Type.u8, PartialShape([None, None, channels]))]

    @classmethod
    def evaluate(cls, attrs: ImageDecoderAttrs, inputs: list[np.ndarray]) -> list[np.ndarray]:
        return [decode_image(inputs[0], attrs.pixel_format)]

    @classmethod
    def run_host_stage(cls, attrs: ImageDecoderAttrs, inputs: list[np.ndarray], run_subgraph: Any,
                       where: str) -> list[np.ndarray]:
        return [decode_image(inputs[0], attrs.pixel_format, where)]
