"""Convolutions (plain, grouped, depthwise, transposed, deformable), pooling (max with indices,
average with and without padding, adaptive) and Interpolate / Col2Im: small 1-D and 2-D
shapes with strides, padding and dilation other than 1."""

from __future__ import annotations

from typing import Any

import numpy as np

from opforge.testing.cases import OpCase, case
from opforge.testing.models import Input, const, tensor

_C: dict[str, Any] = {"rtol": 1e-4, "atol": 1e-4}
_P1: dict[str, Any] = {"strides": [1, 1], "pads_begin": [0, 0], "pads_end": [0, 0], "dilations": [1, 1]}
_P2: dict[str, Any] = {"strides": [2, 1], "pads_begin": [1, 0], "pads_end": [1, 2], "dilations": [1, 2]}

CASES: list[OpCase] = [
    case("Convolution", tensor(1, 2, 6, 6), tensor(3, 2, 3, 3), label="f32_3x3", **_P1, **_C),
    case("Convolution", tensor(2, 3, 7, 6), tensor(4, 3, 3, 2), label="f32_stride_pad_dilation", **_P2, **_C),
    case("Convolution", tensor(1, 2, 5, 5), tensor(2, 2, 3, 3), label="f32_same_upper", strides=[2, 2],
         pads_begin=[0, 0], pads_end=[0, 0], dilations=[1, 1], auto_pad="same_upper", **_C),
    case("Convolution", tensor(1, 3, 9), tensor(2, 3, 3), label="f32_1d", strides=[2], pads_begin=[1],
         pads_end=[1], dilations=[1], **_C),
    case("Convolution", tensor(1, 2, 6, 6, dtype="f16"), tensor(3, 2, 3, 3, dtype="f16"), label="f16_3x3",
         **_P1, rtol=5e-3, atol=5e-3),
    case("Convolution", tensor(1, 2, 4, 4, 4), tensor(2, 2, 2, 2, 2), label="f32_3d", strides=[1, 1, 1],
         pads_begin=[0, 0, 0], pads_end=[0, 0, 0], dilations=[1, 1, 1], **_C),
    case("GroupConvolution", tensor(1, 4, 6, 6), tensor(2, 3, 2, 3, 3), label="f32_groups2", **_P1, **_C),
    case("GroupConvolution", tensor(1, 3, 7, 7), tensor(3, 1, 1, 3, 3), label="f32_depthwise", **_P2, **_C),
    case("ConvolutionBackpropData", tensor(1, 2, 4, 4), tensor(2, 3, 3, 3), label="f32_stride2", strides=[2, 2],
         pads_begin=[1, 1], pads_end=[1, 1], dilations=[1, 1], output_padding=[1, 1], **_C),
    case("ConvolutionBackpropData", tensor(1, 2, 5), tensor(2, 3, 3), label="f32_1d", strides=[1],
         pads_begin=[0], pads_end=[0], dilations=[2], **_C),
    case("ConvolutionBackpropData", tensor(1, 2, 3, 3), tensor(2, 1, 2, 2), const([6, 7]),
         label="f32_output_shape", strides=[2, 2], pads_begin=[0, 0], pads_end=[0, 0], dilations=[1, 1],
         auto_pad="same_upper", **_C),
    case("GroupConvolutionBackpropData", tensor(1, 4, 3, 3), tensor(2, 2, 3, 2, 2), label="f32_groups2",
         strides=[2, 2], pads_begin=[0, 0], pads_end=[0, 0], dilations=[1, 1], **_C),
    case("DeformableConvolution", tensor(1, 2, 5, 5), tensor(1, 18, 3, 3, low=-1, high=1), tensor(3, 2, 3, 3),
         label="f32_offsets", **_P1, **_C),
    case("DeformableConvolution", tensor(1, 4, 5, 5), tensor(1, 16, 4, 4, low=-1, high=1), tensor(2, 2, 2, 2),
         tensor(1, 8, 4, 4, low=0, high=1), label="f32_mask_groups", group=2, deformable_group=2,
         bilinear_interpolation_pad=True, **_P1, **_C),

    case("MaxPool", tensor(1, 2, 6, 7), label="f32_2x2", kernel=[2, 2], strides=[2, 2], dilations=[1, 1],
         pads_begin=[0, 0], pads_end=[0, 0]),
    case("MaxPool", tensor(2, 3, 7, 7), label="f32_3x3_pad_ceil", kernel=[3, 3], strides=[2, 2], dilations=[1, 1],
         pads_begin=[1, 1], pads_end=[1, 1], rounding_type="ceil"),
    case("MaxPool", tensor(1, 2, 8, 8), label="f32_dilated_i32_index", kernel=[2, 2], strides=[1, 1],
         dilations=[2, 2], pads_begin=[0, 0], pads_end=[0, 0], index_element_type="i32"),
    case("MaxPool", tensor(1, 3, 9), label="f32_1d_same", kernel=[3], strides=[2], dilations=[1],
         pads_begin=[0], pads_end=[0], auto_pad="same_upper"),
    case("AvgPool", tensor(1, 2, 6, 7), label="f32_2x2", kernel=[2, 2], strides=[2, 2], pads_begin=[0, 0],
         pads_end=[0, 0], exclude_pad=False),
    case("AvgPool", tensor(2, 3, 7, 7), label="f32_pad_exclude", kernel=[3, 3], strides=[2, 2], pads_begin=[1, 1],
         pads_end=[1, 1], exclude_pad=True),
    case("AvgPool", tensor(2, 3, 7, 7), label="f32_pad_include_ceil", kernel=[3, 3], strides=[2, 2],
         pads_begin=[1, 1], pads_end=[1, 1], exclude_pad=False, rounding_type="ceil"),
    case("AdaptiveAvgPool", tensor(1, 2, 7, 9), const([3, 4]), label="f32_7x9_to_3x4"),
    case("AdaptiveAvgPool", tensor(2, 3, 10), const([4]), label="f32_1d"),
    case("AdaptiveMaxPool", tensor(1, 2, 7, 9), const([3, 4]), label="f32_7x9_to_3x4"),
    case("AdaptiveMaxPool", tensor(2, 3, 10), const([4]), label="f32_1d_i32_index", index_element_type="i32"),

    case("Interpolate", tensor(1, 2, 4, 5), const([8, 7]), const([2, 3]), label="f32_nearest_sizes",
         mode="nearest", shape_calculation_mode="sizes"),
    case("Interpolate", tensor(1, 2, 4, 5), const([2.0, 1.5], "f32"), const([2, 3]), label="f32_linear_onnx_scales",
         mode="linear_onnx", shape_calculation_mode="scales", coordinate_transformation_mode="half_pixel", **_C),
    case("Interpolate", tensor(1, 2, 4, 4), const([7, 6]), const([2, 3]), label="f32_cubic_align_corners",
         mode="cubic", shape_calculation_mode="sizes", coordinate_transformation_mode="align_corners", **_C),
    case("Interpolate", tensor(1, 2, 6, 6), const([3, 4]), const([2, 3]), label="f32_linear_downscale",
         mode="linear", shape_calculation_mode="sizes", coordinate_transformation_mode="asymmetric", **_C),
    case("Interpolate", tensor(1, 2, 3, 4), const([6, 8]), const([2, 3]), label="f32_nearest_asym_floor",
         mode="nearest", shape_calculation_mode="sizes", coordinate_transformation_mode="asymmetric",
         nearest_mode="floor"),

    # Col2Im: (N, C*kh*kw, L) blocks back into a (N, C, H, W) image
    case("Col2Im", tensor(1, 8, 9), const([4, 4]), const([2, 2]), label="f32_2x2_blocks", **_C),
    case("Col2Im", tensor(1, 9, 4), const([5, 5]), const([3, 3]), label="f32_stride2_pad", strides=[2, 2],
         pads_begin=[0, 0], pads_end=[0, 0], **_C),
]

# Weights as Constants (the form models have: devices pre-pack them, a different path from weights
# fed at run time), 1x1 and "valid"/dilated "same_upper" convolutions, 3-D and "same_upper"
# pooling, Interpolate over scales for each mode, with pads, and on integers.
_RNG = np.random.default_rng(11)


def _w(*shape: int) -> Input:
    return const(_RNG.uniform(-1, 1, shape), "f32")


CASES += [
    case("Convolution", tensor(1, 3, 9, 9), _w(8, 3, 3, 3), label="f32_const_weights_pad1", strides=[1, 1],
         pads_begin=[1, 1], pads_end=[1, 1], dilations=[1, 1], **_C),
    case("Convolution", tensor(1, 16, 6, 6), _w(8, 16, 1, 1), label="f32_const_weights_1x1", **_P1, **_C),
    case("Convolution", tensor(1, 3, 7, 7), _w(4, 3, 3, 3), label="f32_const_weights_valid", auto_pad="valid",
         **_P1, **_C),
    case("Convolution", tensor(1, 4, 11, 11), _w(4, 4, 3, 3), label="f32_const_weights_dilated_same_upper",
         strides=[2, 2], pads_begin=[0, 0], pads_end=[0, 0], dilations=[2, 2], auto_pad="same_upper", **_C),
    case("GroupConvolution", tensor(1, 8, 9, 9), _w(8, 1, 1, 3, 3), label="f32_const_weights_depthwise",
         strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1], dilations=[1, 1], **_C),
    case("GroupConvolution", tensor(2, 6, 7, 7), _w(3, 4, 2, 3, 3), label="f32_const_weights_groups3",
         strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1], dilations=[1, 1], **_C),
    case("ConvolutionBackpropData", tensor(1, 4, 5, 5), _w(4, 3, 3, 3), label="f32_const_weights_stride2",
         strides=[2, 2], pads_begin=[1, 1], pads_end=[1, 1], dilations=[1, 1], **_C),
    case("GroupConvolutionBackpropData", tensor(1, 4, 3, 5), _w(2, 2, 3, 3, 2), label="f32_const_weights_dilated",
         strides=[2, 1], pads_begin=[1, 0], pads_end=[0, 1], dilations=[1, 2], output_padding=[1, 0], **_C),
    case("MaxPool", tensor(1, 2, 5, 6, 4), label="f32_3d", kernel=[2, 2, 2], strides=[1, 2, 1],
         pads_begin=[0, 0, 0], pads_end=[1, 0, 1], dilations=[1, 1, 2]),
    case("AvgPool", tensor(1, 2, 5, 6, 4), label="f32_3d_pad_include", kernel=[3, 2, 2], strides=[2, 2, 2],
         pads_begin=[1, 0, 1], pads_end=[1, 1, 1], exclude_pad=False),
    case("AvgPool", tensor(1, 2, 7, 7), label="f32_same_upper", kernel=[2, 2], strides=[1, 1], pads_begin=[0, 0],
         pads_end=[0, 0], auto_pad="same_upper", exclude_pad=True),
    case("Interpolate", tensor(1, 1, 4, 4, dtype="i32", low=-50, high=50), const([7, 3]), const([2, 3]),
         label="i32_linear_sizes", mode="linear", shape_calculation_mode="sizes"),
    case("Interpolate", tensor(2, 3, 7, 5), const([2, 3, 4, 9]), label="f32_linear_pads", mode="linear",
         shape_calculation_mode="sizes", pads_begin=[0, 0, 1, 0], pads_end=[0, 0, 0, 2], **_C),
    case("Interpolate", tensor(2, 3, 7, 5), const([2, 3, 4, 9]), label="f32_linear_pads_antialias", mode="linear",
         shape_calculation_mode="sizes", antialias=True, pads_begin=[0, 0, 1, 0], pads_end=[0, 0, 0, 2], **_C),
]
for _mode, _ctm, _nearest in [("nearest", "asymmetric", "floor"), ("nearest", "half_pixel", "round_prefer_floor"),
                              ("nearest", "align_corners", "round_prefer_ceil"), ("linear", "half_pixel", "floor"),
                              ("linear_onnx", "align_corners", "floor"), ("linear_onnx", "pytorch_half_pixel", "floor"),
                              ("cubic", "half_pixel", "floor"), ("cubic", "asymmetric", "floor")]:
    for _scales in ((2.0, 1.5), (0.5, 0.75)):
        CASES.append(case("Interpolate", tensor(1, 2, 6, 8), const(_scales, "f32"), const([2, 3]),
                          label=f"f32_{_mode}_{_ctm}_scales{_scales[0]}x{_scales[1]}", mode=_mode,
                          shape_calculation_mode="scales", coordinate_transformation_mode=_ctm, nearest_mode=_nearest,
                          **_C))

# Col2Im without a batch axis (dilated, padded) and on integers; AdaptiveMaxPool on integers
CASES += [
    case("Col2Im", tensor(6, 15), const([5, 5]), const([3, 2]), label="f32_unbatched_dilated", strides=[2, 1],
         dilations=[1, 2], pads_begin=[1, 0], pads_end=[1, 2], **_C),
    case("Col2Im", tensor(2, 12, 12, dtype="i32", low=-9, high=9), const([6, 4]), const([2, 3]), label="i32_padded",
         strides=[2, 2], pads_begin=[1, 1], pads_end=[1, 2]),
    case("AdaptiveMaxPool", tensor(2, 3, 6, 5, dtype="i32", low=-9, high=9), const([3, 2]), label="i32_i64_index"),
]

# DeformableConvolution with deformable groups and a mask over a batch, depthwise with dilation,
# and "same_upper" padding
CASES += [
    case("DeformableConvolution", tensor(2, 4, 6, 7), tensor(2, 24, 4, 6, low=-1, high=1), tensor(4, 4, 3, 2),
         tensor(2, 12, 4, 6, low=0, high=1), label="f32_batch_deformable_groups_mask", deformable_group=2,
         **_P1, **_C),
    case("DeformableConvolution", tensor(1, 4, 8, 8), tensor(1, 32, 6, 6, low=-1, high=1), tensor(4, 1, 2, 2),
         label="f32_depthwise_dilated", group=4, deformable_group=4, strides=[1, 1], pads_begin=[0, 0],
         pads_end=[0, 0], dilations=[2, 2], **_C),
    case("DeformableConvolution", tensor(2, 2, 5, 6), tensor(2, 18, 5, 6, low=-1, high=1), tensor(2, 2, 3, 3),
         tensor(2, 9, 5, 6, low=0, high=1), label="f32_same_upper_mask", auto_pad="same_upper", **_P1, **_C),
]

# adaptive pooling to a larger, the same and a 1x1 size, and in 3-D
for _op in ("AdaptiveAvgPool", "AdaptiveMaxPool"):
    CASES += [
        case(_op, tensor(1, 2, 5, 6), const([7, 8]), label="f32_upsample"),
        case(_op, tensor(2, 3, 9), const([9]), label="f32_same_size"),
        case(_op, tensor(2, 3, 8, 8), const([1, 1]), label="f32_global"),
        case(_op, tensor(1, 2, 5, 6, 7), const([2, 3, 4]), label="f32_3d"),
    ]
