"""Everything else: MatMul and Einsum, the spectral transforms (DFT, IDFT, RDFT, IRDFT),
detection and sampling ops (NonMaxSuppression, ROIAlign, GridSample), data-dependent outputs
(NonZero, Unique), TfIdfVectorizer, ImageDecoder, MelWeightMatrix and Loop."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from opforge.testing.cases import OpCase, case
from opforge.testing.models import const, fixed, tensor

_MM: dict[str, Any] = {"rtol": 1e-5, "atol": 1e-5}
_FFT: dict[str, Any] = {"rtol": 1e-4, "atol": 1e-4}
# boxes [1, 6, 4] as (y1, x1, y2, x2): two overlapping pairs and two lone boxes
_BOXES = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11], [0, 10.1, 1, 11.1],
                    [0, 100, 1, 101]]], dtype=np.float32)
_SCORES = np.array([[[0.9, 0.75, 0.6, 0.95, 0.5, 0.3], [0.2, 0.85, 0.4, 0.1, 0.7, 0.65]]], dtype=np.float32)



def bmp(pixels: np.ndarray) -> np.ndarray:
    """An uncompressed 24-bit BMP file of ``pixels`` (u8 [H, W, 3], RGB), as u8 bytes."""
    h, w, _ = pixels.shape
    stride = (3 * w + 3) // 4 * 4
    rows = b"".join(pixels[y, :, ::-1].tobytes().ljust(stride, b"\0") for y in range(h - 1, -1, -1))
    info = struct.pack("<IiiHHIIiiII", 40, w, h, 1, 24, 0, len(rows), 2835, 2835, 0, 0)
    head = struct.pack("<2sIHHI", b"BM", 14 + len(info) + len(rows), 0, 0, 14 + len(info))
    return np.frombuffer(head + info + rows, dtype=np.uint8).copy()


_PIXELS = np.random.default_rng(7).integers(0, 256, size=(3, 5, 3)).astype(np.uint8)
_IMAGE = bmp(_PIXELS)

CASES: list[OpCase] = [
    case("MatMul", tensor(3, 4), tensor(4, 5), label="f32_2d", **_MM),
    case("MatMul", tensor(2, 3, 4), tensor(4, 5), label="f32_batch_broadcast", **_MM),
    case("MatMul", tensor(2, 1, 3, 4), tensor(3, 5, 4), transpose_b=True, label="f32_batch_transpose_b", **_MM),
    case("MatMul", tensor(4, 3), tensor(4, 5), transpose_a=True, label="f32_transpose_a", **_MM),
    case("MatMul", tensor(4), tensor(2, 4, 3), label="f32_vector_matrix", **_MM),
    case("MatMul", tensor(2, 3, 4), tensor(4), label="f32_matrix_vector", **_MM),
    case("MatMul", tensor(8, 16, dtype="f16"), tensor(16, 8, dtype="f16"), label="f16_2d", rtol=5e-3, atol=5e-3),
    case("MatMul", tensor(3, 4, dtype="i32", low=-9, high=9), tensor(4, 2, dtype="i32", low=-9, high=9),
         label="i32_2d"),
    case("Einsum", tensor(3, 4), tensor(4, 5), equation="ij,jk->ik", label="f32_matmul", **_MM),
    case("Einsum", tensor(2, 3, 4), tensor(2, 4, 5), equation="bij,bjk->bik", label="f32_batched", **_MM),
    case("Einsum", tensor(2, 3, 4), equation="abc->cb", label="f32_reduce_transpose", **_MM),
    case("Einsum", tensor(4, 4), equation="ii->i", label="f32_diagonal", **_MM),
    case("Einsum", tensor(3), tensor(4), equation="i,j->ij", label="f32_outer", **_MM),

    case("DFT", tensor(2, 8, 2), const([1]), label="f32_axis1", **_FFT),
    case("DFT", tensor(2, 4, 6, 2), const([1, 2]), const([4, 8]), label="f32_2d_signal_size", **_FFT),
    case("IDFT", tensor(2, 8, 2), const([-2]), label="f32_axis1", **_FFT),
    case("IDFT", tensor(3, 5, 2), const([1]), const([3]), label="f32_cropped", **_FFT),
    case("RDFT", tensor(2, 8), const([1]), label="f32_axis1", **_FFT),
    case("RDFT", tensor(2, 4, 6), const([1, 2]), label="f32_2d", **_FFT),
    case("IRDFT", tensor(2, 5, 2), const([1]), label="f32_axis1", **_FFT),
    case("IRDFT", tensor(2, 4, 4, 2), const([1, 2]), const([4, 6]), label="f32_2d_signal_size", **_FFT),

    case("NonMaxSuppression", fixed(_BOXES), fixed(_SCORES), const(3), const(0.5, "f32"), const(0.0, "f32"),
         label="f32_corner"),
    case("NonMaxSuppression", fixed(_BOXES), fixed(_SCORES), const(2), const(0.3, "f32"), const(0.35, "f32"),
         sort_result_descending=False, output_type="i32", label="f32_score_threshold_i32"),
    case("ROIAlign", tensor(1, 2, 8, 8), const([[0, 0, 4, 4], [1.5, 2, 7, 6.5]], "f32"), const([0, 0], "i32"),
         pooled_h=2, pooled_w=3, sampling_ratio=2, spatial_scale=1.0, mode="avg", label="f32_avg", **_MM),
    case("ROIAlign", tensor(2, 2, 8, 8), const([[0, 0, 8, 8], [2, 2, 12, 10]], "f32"), const([1, 0], "i32"),
         pooled_h=2, pooled_w=2, sampling_ratio=1, spatial_scale=0.5, mode="max", aligned_mode="half_pixel",
         label="f32_max_half_pixel", **_MM),
    case("GridSample", tensor(1, 2, 4, 5), tensor(1, 3, 3, 2, low=-1.1, high=1.1), label="f32_bilinear_zeros",
         **_MM),
    case("GridSample", tensor(1, 2, 4, 5), tensor(1, 3, 3, 2, low=-1.2, high=1.2), mode="nearest",
         padding_mode="border", align_corners=True, label="f32_nearest_border", **_MM),
    case("GridSample", tensor(1, 1, 4, 4), tensor(1, 2, 3, 2, low=-1.3, high=1.3), mode="bicubic",
         padding_mode="reflection", label="f32_bicubic_reflection", rtol=1e-4, atol=1e-4),
    case("NonZero", tensor(3, 4, dtype="i32", low=0, high=1), label="i32"),
    case("NonZero", fixed([[0.0, 1.5, 0.0], [-0.0, 0.0, -2.0]]), output_type="i32", label="f32_signed_zero_i32"),
    case("Unique", tensor(10, dtype="i32", low=0, high=4), label="i32_sorted"),
    case("Unique", fixed([[3, 1, 3], [1, 2, 2], [3, 1, 3]], "i64"), const(0), sorted=False, label="i64_rows"),
    case("TfIdfVectorizer", fixed([[1, 2, 3, 2, 3, 1], [3, 3, 1, 2, 4, 2]], "i64"), version="opset16", mode="TF", min_gram_length=1,
         max_gram_length=2, max_skip_count=0, ngram_counts=[0, 3], ngram_indexes=[0, 1, 2, 3, 4],
         pool_int64s=[1, 2, 3, 1, 2, 2, 3], label="i64_tf"),
    case("TfIdfVectorizer", fixed([1, 2, 3, 2, 3, 1, 2], "i64"), version="opset16", mode="TFIDF", min_gram_length=2,
         max_gram_length=2, max_skip_count=1, ngram_counts=[0, 0], ngram_indexes=[0, 1],
         pool_int64s=[1, 2, 2, 3], weights=[0.5, 2.0], label="i64_tfidf_skip"),
    case("ImageDecoder", fixed(_IMAGE, "u8"), version="opset16", label="u8_bmp_rgb",
         expect=lambda xs: [_PIXELS]),
    case("ImageDecoder", fixed(_IMAGE, "u8"), version="opset16", pixel_format="BGR", label="u8_bmp_bgr"),
    case("ImageDecoder", fixed(_IMAGE, "u8"), version="opset16", pixel_format="Grayscale", label="u8_bmp_gray"),
    # every input is a constant: devices fold it at compile time, so this checks their folding
    case("MelWeightMatrix", const(8, "i32"), const(16, "i32"), const(8000, "i32"), const(0.0, "f32"),
         const(4000.0, "f32"), version="opset16", label="const_f32", rtol=1e-6, atol=1e-6),
]


def _loop_body() -> Any:
    """acc' = acc + x + row * iteration (row: one [1, 3] slice of xs per iteration); the condition
    is sum(acc') < 4; the scan output is acc' unsqueezed."""
    from opforge.graph import Model, Node

    def par(name: str, t: str, shape: list[int]) -> Node:
        return Node.create("Parameter", [], {"element_type": t, "shape": shape}, name=name)

    def c(v: Any) -> Node:
        return Node.create("Constant", [], {"value": np.asarray(v)})

    it, acc, x, row = par("it", "i64", []), par("acc", "f32", [3]), par("x", "f32", [3]), par("row", "f32", [1, 3])
    flat = Node.create("Reshape", [row, c(np.array([3], np.int64))], {"special_zero": False})
    step = Node.create("Multiply", [flat, Node.create("Convert", [it], {"destination_type": "f32"})])
    acc2 = Node.create("Add", [Node.create("Add", [acc, x]), step])
    total = Node.create("ReduceSum", [acc2, c(np.array([0], np.int64))], {"keep_dims": False})
    return Model([Node.create("Less", [total, c(np.float32(4))]), acc2,
                  Node.create("Unsqueeze", [acc2, c(np.array([0], np.int64))])], [it, acc, x, row], name="loop_body")


_LOOP: dict[str, Any] = {
    "input_descriptions": [
        {"kind": "merged", "external_port_id": 2, "body_parameter_index": 1, "back_edge_result_index": 1},
        {"kind": "invariant", "external_port_id": 3, "body_parameter_index": 2},
        {"kind": "sliced", "external_port_id": 4, "body_parameter_index": 3, "axis": 0},
    ],
    "output_descriptions": [{"external_port_id": 0, "body_result_index": 1},
                            {"external_port_id": 1, "body_result_index": 2, "axis": 0}],
    "current_iteration_input_idx": 0,
}
CASES += [
    # the trip count stops it (no body condition)
    case("Loop", fixed(4, "i64"), fixed(True, "boolean"), tensor(3), tensor(3, low=-1, high=1), tensor(6, 3),
         body=_loop_body(), **_LOOP, label="f32_trip_count"),
    # an unbounded loop that the body's condition stops (or the 6 slices)
    case("Loop", fixed(-1, "i64"), fixed(True, "boolean"), tensor(3), tensor(3, low=0, high=1), tensor(6, 3, low=0, high=1),
         body=_loop_body(), body_condition_output_idx=0, **_LOOP, label="f32_body_condition"),
]

# edges: an empty inner dimension, f64
CASES += [
    case("MatMul", tensor(3, 0), tensor(0, 4), label="f32_empty_k"),
    case("MatMul", tensor(3, 4, dtype="f64"), tensor(4, 2, dtype="f64"), rtol=1e-12, atol=1e-12),
]

# MatMul with constant weights (the form models have: devices pre-pack them), the Einsum forms
# with implicit outputs, traces and integers, padded/cropped single-axis spectra, several batches
# and classes of NMS with centre boxes and soft suppression, the third ROIAlign alignment with an
# adaptive sampling ratio, and the remaining GridSample padding modes.
_RNG = np.random.default_rng(5)


def _boxes(batches: int, n: int) -> np.ndarray:
    """Centre-encoded boxes [cx, cy, w, h]: overlapping clusters, every size positive."""
    centres = _RNG.uniform(0, 4, (batches, n, 2))
    sizes = _RNG.uniform(0.5, 2, (batches, n, 2))
    return np.concatenate([centres, sizes], -1).astype(np.float32)


def _scores(batches: int, classes: int, n: int) -> np.ndarray:
    """Distinct scores (ties would make the order of selected boxes a matter of convention)."""
    vals = _RNG.permutation(batches * classes * n) / (batches * classes * n)
    return vals.reshape(batches, classes, n).astype(np.float32)


CASES += [
    case("MatMul", tensor(4, 8), const(_RNG.uniform(-2, 2, (8, 5)), "f32"), label="f32_const_b", **_MM),
    case("MatMul", tensor(2, 3, 4, 8), const(_RNG.uniform(-2, 2, (5, 8)), "f32"), transpose_b=True,
         label="f32_const_b_transposed", **_MM),
    case("MatMul", tensor(8), const(_RNG.uniform(-2, 2, (8, 3)), "f32"), label="f32_vector_const_b", **_MM),
    case("Einsum", tensor(3, 3), equation="ii", label="f32_trace", **_MM),
    case("Einsum", tensor(3, 4), equation="ij->", label="f32_sum_all", **_MM),
    case("Einsum", tensor(6), tensor(6), equation="i,i", label="f32_dot_implicit", **_MM),
    case("Einsum", tensor(2, 1, 3, 4), tensor(3, 4, 2), equation="...ij,...jk", label="f32_ellipsis_implicit", **_MM),
    case("Einsum", tensor(2, 3, 3), equation="bii->bi", label="f32_batched_diagonal", **_MM),
    case("Einsum", tensor(2, 3, 4), tensor(4, 2), tensor(2, 3), equation="abc,cd,de->abe", label="f32_chain3",
         **_MM),
    case("Einsum", tensor(3, 4, dtype="i32", low=-5, high=5), tensor(4, 2, dtype="i32", low=-5, high=5),
         equation="ij,jk->ik", label="i32_matmul"),
    case("DFT", tensor(3, 5, 2), const([-1]), const([7]), label="f32_padded", **_FFT),
    case("DFT", tensor(3, 5, 2), const([1]), const([3]), label="f32_cropped", **_FFT),
    case("RDFT", tensor(3, 5), const([1]), const([6]), label="f32_padded", **_FFT),
    case("RDFT", tensor(3, 5), const([1]), const([3]), label="f32_cropped", **_FFT),
    case("NonMaxSuppression", fixed(_boxes(2, 10)), fixed(_scores(2, 2, 10)), const(10), const(0.5, "f32"),
         const(0.1, "f32"), const(0.5, "f32"), box_encoding="center", label="f32_center_soft_2x2"),
    case("NonMaxSuppression", fixed(_boxes(2, 8)), fixed(_scores(2, 3, 8)), const(4), const(0.3, "f32"),
         const(0.2, "f32"), box_encoding="center", sort_result_descending=False, output_type="i32",
         label="f32_center_2x3_i32"),
    case("ROIAlign", tensor(1, 2, 8, 8), const([[0, 0, 4, 4], [1.5, 2, 7, 6.5]], "f32"), const([0, 0], "i32"),
         pooled_h=2, pooled_w=3, sampling_ratio=0, spatial_scale=1.0, mode="avg", aligned_mode="half_pixel_for_nn",
         label="f32_avg_half_pixel_for_nn_adaptive", **_MM),
    case("GridSample", tensor(1, 2, 4, 5), tensor(1, 3, 3, 2, low=-1.3, high=1.3), padding_mode="reflection",
         align_corners=True, label="f32_bilinear_reflection_align", **_MM),
    case("GridSample", tensor(1, 2, 4, 5), tensor(1, 3, 3, 2, low=-1.3, high=1.3), padding_mode="border",
         label="f32_bilinear_border", **_MM),
    case("GridSample", tensor(1, 2, 4, 5), tensor(1, 3, 3, 2, low=-1.3, high=1.3), mode="nearest",
         padding_mode="reflection", label="f32_nearest_reflection", **_MM),
    case("GridSample", tensor(1, 1, 4, 4), tensor(1, 2, 3, 2, low=-1.3, high=1.3), mode="bicubic",
         padding_mode="zeros", align_corners=True, label="f32_bicubic_zeros_align", rtol=1e-4, atol=1e-4),
    case("Unique", tensor(4, 3, dtype="f32", low=-1, high=1), label="f32_flat_unsorted", sorted=False),
    case("Unique", fixed([[1, 0, 1], [2, 2, 2], [1, 0, 1]], "i32"), const(1), label="i32_columns"),
]

# spectra over unsorted axes, with a -1 (keep) signal size, odd lengths and a 1-D power of two
CASES += [
    case("DFT", tensor(2, 3, 4, 2), const([2, 0]), const([-1, 3]), label="f32_unsorted_axes_keep_size", **_FFT),
    case("RDFT", tensor(3, 7), const([1]), label="f32_odd_length", **_FFT),
    case("RDFT", tensor(16), const([0]), label="f32_1d_16", **_FFT),
    case("RDFT", tensor(2, 5, 6), const([2, 1]), const([4, 9]), label="f32_unsorted_axes_sizes", **_FFT),
    case("IRDFT", tensor(3, 5, 2), const([1]), const([9]), label="f32_odd_signal_size", **_FFT),
    case("IRDFT", tensor(6, 3, 2), const([0, 1]), const([-1, 3]), label="f32_keep_size", **_FFT),
    case("IDFT", tensor(2, 5, 7, 2), const([0, 1, 2]), label="f32_3d", **_FFT),
]
