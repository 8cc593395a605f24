"""Shape and data-movement ops: reshaping, transposing, slicing, splitting, concatenating,
padding, tiling, broadcasting, reversing, rolling, depth/space rearrangement, element type
conversion, and the ops that produce shapes or sequences (ShapeOf, Range, Eye)."""

from __future__ import annotations

import numpy as np

from opforge.testing.cases import OpCase, case
from opforge.testing.models import const, fixed, tensor

_X = tensor(2, 3, 4, 5)
_I = tensor(2, 3, 4, dtype="i32", low=-100, high=100)
CASES: list[OpCase] = [
    case("Reshape", _X, const([6, 20]), special_zero=False, label="f32_to_6x20"),
    case("Reshape", _X, const([0, -1, 5]), special_zero=True, label="f32_special_zero"),
    case("Reshape", _I, const([-1]), special_zero=False, label="i32_flatten"),
    case("Squeeze", tensor(2, 1, 3, 1), const([1]), label="f32_axis1"),
    case("Squeeze", tensor(2, 1, 3, 1), label="f32_all"),
    case("Unsqueeze", tensor(2, 3), const([0, 3]), label="f32_axes03"),
    case("Unsqueeze", tensor(2, 3, dtype="i64", low=-9, high=9), const([-1]), label="i64_last"),
    case("Transpose", _X, const([0, 2, 3, 1]), label="f32_nhwc"),
    case("Transpose", _X, const([3, 1, 0, 2]), label="f32_perm3102"),
    case("Transpose", tensor(3, 5, dtype="f16"), const([1, 0]), label="f16_2d"),
    case("Transpose", tensor(3, 5, dtype="boolean"), const([1, 0]), label="boolean_2d"),
    case("Concat", tensor(2, 3, 4), tensor(2, 1, 4), tensor(2, 2, 4), axis=1, label="f32_axis1_three"),
    case("Concat", tensor(2, 3), tensor(2, 3), axis=-1, label="f32_last_axis"),
    case("Concat", tensor(2, 3, dtype="i64", low=-9, high=9), tensor(1, 3, dtype="i64", low=-9, high=9), axis=0,
         label="i64_axis0"),
    case("Split", _X, const(1), num_splits=3, label="f32_axis1_3"),
    case("Split", tensor(4, 6, dtype="i32", low=-9, high=9), const(-1), num_splits=2, label="i32_last_2"),
    case("VariadicSplit", _X, const(3), const([1, -1, 2]), label="f32_axis3_1_rest_2"),
    case("VariadicSplit", tensor(6, 2), const(0), const([2, 4]), label="f32_axis0"),
    case("Slice", _X, const([0, 1]), const([2, 3]), const([1, 1]), const([1, 3]), label="f32_axes13"),
    case("Slice", _X, const([-1]), const([-5]), const([-2]), const([2]), label="f32_negative_step"),
    case("Slice", tensor(10), const([1]), const([9]), const([3]), label="f32_step3_default_axes"),
    case("StridedSlice", _X, const([0, 1, 0, 1]), const([2, 3, 4, 5]), const([1, 1, 2, 2]),
         begin_mask=[0, 0, 0, 0], end_mask=[0, 0, 0, 0], label="f32_strides"),
    case("StridedSlice", _X, const([1, 0]), const([0, 2]), const([1, 1]), begin_mask=[0, 1], end_mask=[1, 0],
         shrink_axis_mask=[1, 0], new_axis_mask=[0, 0], label="f32_shrink_masks"),
    case("StridedSlice", _X, const([0, 0]), const([0, 0]), const([1, 1]), begin_mask=[1, 1], end_mask=[1, 1],
         new_axis_mask=[0, 1], label="f32_new_axis"),
    case("StridedSlice", _X, const([0, -1]), const([0, -4]), const([1, -1]), begin_mask=[1, 0], end_mask=[1, 0],
         ellipsis_mask=[1, 0], label="f32_ellipsis_reverse"),
    case("Tile", tensor(2, 3), const([2, 3]), label="f32_2x3"),
    case("Tile", tensor(2, 3, dtype="i32", low=-9, high=9), const([2, 1, 2]), label="i32_more_repeats"),
    case("Broadcast", tensor(3, 1), const([2, 3, 4]), mode="numpy", label="f32_numpy"),
    case("Broadcast", tensor(3), const([2, 3, 4]), const([1]), mode="explicit", label="f32_explicit"),
    case("Broadcast", tensor(3, 1), const([2, 1, 4]), mode="bidirectional", label="f32_bidirectional"),
    case("Pad", _X, const([0, 1, 2, 0]), const([0, 2, 1, 1]), const(0.5, "f32"), pad_mode="constant",
         label="f32_constant"),
    case("Pad", _X, const([0, 0, 1, 2]), const([0, 0, 2, 1]), pad_mode="edge", label="f32_edge"),
    case("Pad", _X, const([0, 0, 2, 3]), const([0, 0, 1, 2]), pad_mode="reflect", label="f32_reflect"),
    case("Pad", _X, const([0, 0, 2, 3]), const([0, 0, 1, 2]), pad_mode="symmetric", label="f32_symmetric"),
    case("Pad", _I, const([1, 0, -1]), const([0, 1, 2]), pad_mode="constant", label="i32_negative_pad"),
    case("Reverse", _X, const([1, 3]), mode="index", label="f32_index"),
    case("Reverse", _X, const([True, False, True, False], "boolean"), mode="mask", label="f32_mask"),
    case("ReverseSequence", tensor(3, 5, 2), const([5, 2, 1], "i32"), batch_axis=0, seq_axis=1, label="f32_b0_s1"),
    case("ReverseSequence", tensor(4, 3, 2), const([1, 4, 3], "i64"), batch_axis=1, seq_axis=0, label="f32_b1_s0"),
    case("Roll", _X, const([2, -1]), const([1, 3]), label="f32_two_axes"),
    case("Roll", tensor(3, 4), const(5), const(0), label="f32_shift_over_size"),
    case("DepthToSpace", tensor(1, 8, 2, 3), block_size=2, mode="blocks_first", label="f32_blocks_first"),
    case("DepthToSpace", tensor(1, 8, 2, 3), block_size=2, mode="depth_first", label="f32_depth_first"),
    case("SpaceToDepth", tensor(1, 2, 4, 6), block_size=2, mode="blocks_first", label="f32_blocks_first"),
    case("SpaceToDepth", tensor(1, 2, 4, 6), block_size=2, mode="depth_first", label="f32_depth_first"),
    case("Identity", _X, label="f32"),
    case("ShapeOf", _X, label="f32_i64"),
    case("ShapeOf", tensor(3, 1, 2, dtype="u8", low=0, high=9), output_type="i32", label="u8_i32"),
    case("Convert", tensor(3, 4, low=-100, high=100), destination_type="i32", label="f32_to_i32"),
    case("Convert", tensor(3, 4), destination_type="f16", label="f32_to_f16", rtol=1e-3, atol=1e-3),
    case("Convert", tensor(3, 4, dtype="f16"), destination_type="f32", label="f16_to_f32"),
    case("Convert", tensor(3, 4, dtype="i32", low=-1000, high=1000), destination_type="f32", label="i32_to_f32"),
    case("Convert", tensor(3, 4, dtype="i64", low=-1000, high=1000), destination_type="i32", label="i64_to_i32"),
    case("Convert", tensor(3, 4, dtype="u8", low=0, high=255), destination_type="f32", label="u8_to_f32"),
    case("Convert", tensor(3, 4, low=-2, high=2), destination_type="boolean", label="f32_to_boolean"),
    case("Convert", tensor(3, 4, dtype="boolean"), destination_type="f32", label="boolean_to_f32"),
    case("Convert", fixed([0.0, -0.0, 1.5, -1.5, 0.25, 1e-30]), destination_type="boolean",
         label="f32_zeros_to_boolean", expect=lambda xs: [xs[0] != 0]),
    case("ConvertLike", tensor(3, 4, low=-100, high=100), tensor(1, dtype="i32"), label="f32_like_i32"),
    case("ConvertLike", tensor(3, 4, dtype="i32", low=-9, high=9), tensor(2, dtype="f16"), label="i32_like_f16"),
    case("Range", const(1.0, "f32"), const(4.0, "f32"), const(0.5, "f32"), output_type="f32",
         label="f32_const"),
    case("Range", fixed(np.int64(2), "i64"), fixed(np.int64(-7), "i64"), fixed(np.int64(-3), "i64"),
         output_type="i64", label="i64_fed_negative_step"),
    case("Range", const(0, "i32"), const(10, "i32"), const(3, "i32"), output_type="i32", label="i32_const"),
    case("Eye", const(3), const(4), const(1), output_type="f32", label="f32_3x4_diag1"),
    case("Eye", const(4, "i32"), const(3, "i32"), const(-1, "i32"), const([2], "i32"), output_type="i32",
         label="i32_batch2"),
    case("Constant", label="f32", value=np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5),
    case("Constant", label="i64", value=np.array([3, -1, 7], dtype=np.int64)),
    case("BitCast", tensor(2, 3), version="opset16", destination_type="i32", label="f32_to_i32"),
    case("BitCast", tensor(2, 3, dtype="u8", low=0, high=255), version="opset16", destination_type="i8", label="u8_to_i8"),
]

# edges: empty and rank-6 tensors, saturation at the ends of the destination type
CASES += [
    case("Concat", tensor(2, 0), tensor(2, 3), axis=1, label="f32_empty_part"),
    case("Transpose", tensor(2, 3, 2, 1, 3, 2), const([5, 4, 3, 2, 1, 0]), label="f32_rank6"),
    case("Convert", fixed([300.0, -5.0, 2.7, 255.5]), destination_type="u8", label="f32_to_u8_out_of_range"),
    case("Convert", fixed([70000.0, -70000.0, 1e-8, 65504.0]), destination_type="f16", label="f32_to_f16_range",
         expect=lambda xs: [xs[0].astype(np.float16)]),
]

# Conversions to and from 64-bit types and float to narrow integers (out of range and NaN: the
# reference defines the result, every device must agree), an i64 and an attention-head transpose,
# and Identity on scalars, empty tensors, i64 and booleans.
_NARROW = [0.5, -1.7, 255.9, 300.2, -300.0, 70000.5, float("nan"), 3e9]
CASES += [
    case("Convert", tensor(3, 7, low=-100, high=100), destination_type="i64", label="f32_to_i64"),
    case("Convert", tensor(3, 7, dtype="i32", low=-1000, high=1000), destination_type="i64", label="i32_to_i64"),
    case("Convert", tensor(3, 7, dtype="i64", low=-1000, high=1000), destination_type="f32", label="i64_to_f32"),
    case("Convert", tensor(3, 7), destination_type="f64", label="f32_to_f64"),
    *(case("Convert", fixed(_NARROW), destination_type=_dst, label=f"f32_to_{_dst}_out_of_range")
      for _dst in ("i8", "u16", "u32", "u64")),
    case("Transpose", tensor(2, 3, 4, dtype="i64", low=-9, high=9), const([2, 0, 1]), label="i64_perm201"),
    case("Transpose", tensor(1, 16, 4, 8), const([0, 2, 1, 3]), label="f32_attention_heads"),
    case("Identity", tensor(4, dtype="i64", low=-9, high=9), label="i64"),
    case("Identity", tensor(), label="f32_scalar"),
    case("Identity", tensor(2, 0, 3), label="f32_empty"),
    case("Identity", tensor(3, 2, dtype="boolean"), label="boolean"),
]

# Reverse over no axis, Roll with one shift for several axes, repeated axes and shifts beyond the size
CASES += [
    case("Reverse", tensor(2, 3, 4), const([], "i64"), mode="index", label="f32_no_axes"),
    case("Reverse", tensor(2, 3), const([False, False], "boolean"), mode="mask", label="f32_mask_none"),
    case("Reverse", tensor(5), const([0]), mode="index", label="f32_1d"),
    case("Roll", tensor(2, 3, 4), const(1), const([0, 2]), label="f32_one_shift_two_axes"),
    case("Roll", tensor(3, 4), const([1, 2, 3]), const([0, 1, -2]), label="f32_repeated_axes"),
    case("Roll", tensor(5), const([-7]), const([0]), label="f32_1d_negative_beyond_size"),
]
CASES += [case("Convert", tensor(3, 4, dtype="f64"), destination_type="f32", label="f64_to_f32")]
