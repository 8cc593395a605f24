"""MaxPool: MaxPool-8 (values and flattened indices).

OpenVINO's ceil rounding keeps a last window that starts in the end padding, which ONNX drops:
then (static shapes) the op rounds down over end padding sized to give ONNX's count, which for a
maximum changes nothing else. ``storage_order=1`` (column-major indices, 2-D) is computed from
the row-major ones.
"""

from __future__ import annotations

from opforge.element_type import Type
from opforge.frontend.extensions import ConversionResult
from opforge.frontend.node_context import NodeContext
from opforge.graph import Output

from opforge_onnx.ops._helpers import auto_pad, i64, out, require_rank, spatial_attrs, translator
from opforge_onnx.ops._window_sum import ceil_differs, onnx_ceil_size


def _column_major(ctx: NodeContext, idx: Output, x: Output) -> Output:
    """Row-major flat indices of a [N, C, H, W] tensor as ONNX's column-major ones:
    (n * C + c) * H * W + w * H + h."""
    dims = x.partial_shape.dims
    if len(dims) != 4 or dims[2] is None or dims[3] is None:
        raise ctx.error("storage_order=1 needs a 2-D pooling with static spatial dimensions")
    h, w = int(dims[2]), int(dims[3])
    plane = ctx.op("FloorMod", idx, i64(ctx, h * w))
    base = ctx.op("Subtract", idx, plane)
    row = ctx.op("Divide", plane, i64(ctx, w), m_pythondiv=True)
    col = ctx.op("FloorMod", plane, i64(ctx, w))
    return out(ctx.op("Add", base, ctx.op("Add", ctx.op("Multiply", col, i64(ctx, h)), row)))


def convert(ctx: NodeContext) -> ConversionResult:
    x = ctx.get_input(0)
    n = require_rank(ctx, x) - 2
    attrs = spatial_attrs(ctx, n)
    kernel = list(ctx.get_attribute("kernel_shape"))
    ceil = bool(int(ctx.get_attribute("ceil_mode", 0)))
    pad = auto_pad(ctx)
    dims = out(x).partial_shape.dims[2:]
    if ceil and pad == "explicit" and ceil_differs(dims, kernel, attrs["strides"], attrs["dilations"],
                                                   attrs["pads_begin"], attrs["pads_end"]):
        ends = []
        for i, d in enumerate(dims):
            s, dil, pb = attrs["strides"][i], attrs["dilations"][i], attrs["pads_begin"][i]
            size = onnx_ceil_size(int(d), kernel[i], s, dil, pb, attrs["pads_end"][i])  # type: ignore[arg-type]
            # the end padding that floor rounding turns into exactly `size` windows (a negative
            # one is never needed: floor rounding never counts more windows than ONNX's ceil)
            ends.append(max((size - 1) * s + (kernel[i] - 1) * dil + 1 - int(d) - pb, 0))  # type: ignore[arg-type]
        attrs["pads_end"] = ends
        ceil = False
    node = ctx.op("MaxPool", x, kernel=kernel, auto_pad=pad, rounding_type="ceil" if ceil else "floor",
                  index_element_type=Type.i64, axis=0, **attrs)
    idx = node.output(1)
    if int(ctx.get_attribute("storage_order", 0)) != 0:
        idx = _column_major(ctx, idx, out(x))
    return [node.output(0), idx]


EXTENSION = translator("MaxPool", convert)
