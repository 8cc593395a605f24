// The u8 scale and zero point of ONNX's DynamicQuantizeLinear, for a tensor whose smallest and
// largest values are lo and hi, in ONNX Runtime's order of operations (its
// GetQuantizationParameter): the range widened to include 0, scale = (hi - lo) / 255 (1 for an
// all-zero range, where the ONNX function body would divide 0 by 0), zero point
// round_half_even(clamp(0 - lo / scale, 0, 255)). A NaN range gives a NaN scale and zero point
// 255 (std::min/std::max keep the first argument when the other is NaN). Shared by the
// DynamicQuantize kernel (kernels/dynamic_quantize.cpp) and the dynamically quantized
// recurrence (core/rnn_gemv.cpp), so both quantize an activation the same way.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace opforge_cpu {

struct DynamicU8Params {
  float scale;
  int32_t zero_point;
};

inline DynamicU8Params dynamic_u8_params(float lo, float hi) {
  lo = std::min(lo, 0.f);
  hi = std::max(hi, 0.f);
  const float scale = hi == lo ? 1.f : (hi - lo) / 255.f;
  float z = 0.f - lo / scale;
  z = std::max(0.f, std::min(255.f, z));
  return {scale, static_cast<int32_t>(std::nearbyint(z))};
}

}  // namespace opforge_cpu
