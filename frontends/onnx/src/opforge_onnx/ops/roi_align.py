"""RoiAlign: ROIAlign-9. ONNX's ``half_pixel`` (the default since opset 16) shifts by half a pixel
after scaling, OpenVINO's ``half_pixel_for_nn``; ``output_half_pixel`` (opset 10's only
behaviour) is ``asymmetric``. ONNX's ``max`` (the largest weighted corner term of each sample)
is ROIAlign's ``onnx_max`` mode, not OpenVINO's ``max``."""

from __future__ import annotations

from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import translator

_ALIGNED = {"half_pixel": "half_pixel_for_nn", "output_half_pixel": "asymmetric"}
_MODES = {"max": "onnx_max"}


def convert(ctx: NodeContext) -> ConversionResult:
    default = "half_pixel" if (ctx.get_opset_version() or 16) >= 16 else "output_half_pixel"
    ctm = str(ctx.get_attribute("coordinate_transformation_mode", default))
    if ctm not in _ALIGNED:
        raise ctx.error(f"coordinate_transformation_mode '{ctm}' is not supported")
    mode = str(ctx.get_attribute("mode", "avg"))
    idx = ctx.op("Convert", ctx.get_input(2), destination_type=Type.i32)
    return [ctx.op("ROIAlign", ctx.get_input(0), ctx.get_input(1), idx,
                   pooled_h=int(ctx.get_attribute("output_height", 1)),
                   pooled_w=int(ctx.get_attribute("output_width", 1)),
                   sampling_ratio=int(ctx.get_attribute("sampling_ratio", 0)),
                   spatial_scale=float(ctx.get_attribute("spatial_scale", 1.0)),
                   mode=_MODES.get(mode, mode), aligned_mode=_ALIGNED[ctm])]


EXTENSION = translator("RoiAlign", convert)
