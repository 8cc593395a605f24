// A branch-free expf the compiler vectorises, shared by the NaN-keeping activations
// (nan_eltwise.cpp) and the recurrent gates (rnn_activations.cpp); std::exp is one libm call
// per element and does not vectorise at baseline x86-64.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace opforge_cpu {

inline float bits_to_float(int32_t i) {
  float f;
  std::memcpy(&f, &i, sizeof f);
  return f;
}

// expf as 2^n * e^r, |r| <= ln2/2 (Cephes polynomial, ~1 ulp). 2^n is applied as two factors
// 2^(n/2) * 2^(n - n/2) so that n = 128 (x up to ln(FLT_MAX)) and n down to -150 (the denormals)
// stay exact; the clamp to [-104, 89] then gives +inf above ln(FLT_MAX) and 0 below the smallest
// denormal, like std::exp. std::max/std::min keep a NaN (their comparisons are false), which
// flows through the polynomial; the exponent is computed from 0 instead, as converting NaN to an
// integer is undefined.
inline float fast_exp(float x) {
  x = std::min(std::max(x, -104.f), 89.f);
  const float t = x * 1.44269504088896341f;
  float fn = (t + 12582912.f) - 12582912.f;  // round to nearest: 1.5 * 2^23 drops the fraction
  fn = fn == fn ? fn : 0.f;
  const int32_t n = static_cast<int32_t>(fn);
  const int32_t h = n >> 1;
  const float r = (x - fn * 0.693359375f) + fn * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return (p * r * r + r + 1.0f) * bits_to_float((h + 127) << 23) * bits_to_float((n - h + 127) << 23);
}

}  // namespace opforge_cpu
