"""ROIAlign and GridSample: images sampled at computed positions, bilinear, bicubic or
nearest (``kernels/sampling.cl``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from opforge.graph import Node

from opforge_gpu.library import kernel
from opforge_gpu.storage import float_bits, supported_type

if TYPE_CHECKING:
    from opforge_gpu.lowering import Epilogue, Lowering

FILE = "sampling.cl"
WG = 128


def _roi_supports(node: Node) -> str | None:
    for i in (0, 1):
        t = node.inputs[i].element_type
        if not t.is_float or not supported_type(t):
            return f"ROIAlign of {t} has no GPU kernel"
    if not supported_type(node.inputs[2].element_type):
        return f"batch indices of {node.inputs[2].element_type} are not supported on GPU"
    return None


@kernel("ROIAlign", supports=_roi_supports)
def lower_roi_align(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    a: Any = node.attrs
    x, rois, bidx = (lw.input(node, i) for i in range(3))
    y = lw.new_output(node)
    n_img, c, h, w = x.shape
    defines: dict[str, Any] = {"ROI_ALIGN": 1, "INDEX_ERRORS": 1, "I_T": bidx.storage.ctype}
    defines.update(x.storage.macros("X"))
    defines.update(rois.storage.macros("R"))
    defines.update(y.storage.macros("Y"))
    aligned = {"asymmetric": 0, "half_pixel_for_nn": 1, "half_pixel": 2}[a.aligned_mode]
    prm = lw.params([y.size, c, h, w, a.pooled_h, a.pooled_w, a.sampling_ratio, aligned, {"avg": 0, "max": 1, "onnx_max": 2}[a.mode],
                     float_bits(float(a.spatial_scale)), n_img])
    check = lw.index_check("batch index {value} of roi {which} is out of range (expected {low}..{high})",
                           negative=False)
    lw.launch(FILE, "roi_align", defines, [x, rois, bidx, y, prm, *check], [y.size], [WG], node=node)


def _grid_supports(node: Node) -> str | None:
    for i in (0, 1):
        t = node.inputs[i].element_type
        if not t.is_float or not supported_type(t):
            return f"GridSample of {t} has no GPU kernel (floating-point data and grid only)"
    return None


@kernel("GridSample", supports=_grid_supports)
def lower_grid_sample(node: Node, lw: Lowering, ep: Epilogue | None = None) -> None:
    a: Any = node.attrs
    x, grid = lw.input(node, 0), lw.input(node, 1)
    y = lw.new_output(node)
    defines: dict[str, Any] = {"GRID_SAMPLE": 1}
    defines.update(x.storage.macros("X"))
    defines.update(grid.storage.macros("G"))
    defines.update(y.storage.macros("Y"))
    mode = {"bilinear": 0, "bicubic": 1, "nearest": 2}[a.mode]
    pad = {"zeros": 0, "border": 1, "reflection": 2}[a.padding_mode]
    if len(x.shape) == 5:  # volumetric: nearest or trilinear (shape inference refuses bicubic)
        prm = lw.params([y.size, *x.shape[1:], *y.shape[2:], int(bool(a.align_corners)), mode, pad])
        lw.launch(FILE, "grid_sample_3d", defines, [x, grid, y, prm], [y.size], [WG], node=node)
        return
    _, c, h, w = x.shape
    prm = lw.params([y.size, c, h, w, y.shape[2], y.shape[3], int(bool(a.align_corners)), mode, pad])
    lw.launch(FILE, "grid_sample", defines, [x, grid, y, prm], [y.size], [WG], node=node)
