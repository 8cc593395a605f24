"""GridSample: GridSample-9, 2-D or (beyond OpenVINO) volumetric 5-D. ONNX 20 renamed the modes
``linear``/``cubic``; both spellings are accepted."""

from __future__ import annotations

from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext

from opforge_onnx.ops._helpers import rank, translator

_MODES = {"bilinear": "bilinear", "linear": "bilinear", "bicubic": "bicubic", "cubic": "bicubic",
          "nearest": "nearest"}


def convert(ctx: NodeContext) -> ConversionResult:
    x, grid = ctx.get_input(0), ctx.get_input(1)
    if rank(x) not in (None, 4, 5):
        raise ctx.error(f"only 2-D and 3-D sampling (4-D or 5-D input) is supported, got rank {rank(x)}")
    mode = str(ctx.get_attribute("mode", "bilinear"))
    if mode not in _MODES:
        raise ctx.error(f"mode '{mode}' is not supported (supported: {', '.join(_MODES)})")
    return [ctx.op("GridSample", x, grid, mode=_MODES[mode],
                   padding_mode=str(ctx.get_attribute("padding_mode", "zeros")),
                   align_corners=bool(int(ctx.get_attribute("align_corners", 0))))]


EXTENSION = translator("GridSample", convert)
