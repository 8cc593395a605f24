// Softmax over the last axis of f32 rows, hand-written: attention's scores (rows of 128-200).
#pragma once

#include <cstdint>

namespace opforge_cpu {

// y[r] = softmax(x[r]) for the rows [r0, r1) of x/y viewed as [rows, len]. A row holding a NaN
// or +inf is NaN throughout (ONNX/IEEE: inf - inf); -inf entries (masks) give 0.
void softmax_rows_f32(const float* x, float* y, int64_t r0, int64_t r1, int64_t len);

// The same softmax (f32 arithmetic) written as bf16, rounded to nearest even: attention's P for
// the bf16 P x V MatMul that folds the Softmax (core/nn.cpp), written straight into that
// MatMul's bf16 source instead of an f32 tensor it would convert. `add` (or nullptr): rows of
// `add_rows` x len added to the scores first, row r taking row r % add_rows (an attention mask
// or position bias broadcast over the batch and heads), in f32 as the folded Add step computed.
void softmax_rows_bf16(const float* x, const float* add, int64_t add_rows, uint16_t* y, int64_t r0, int64_t r1,
                       int64_t len);

}  // namespace opforge_cpu
