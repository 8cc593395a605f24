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

// round(x / ln 2) as a float (0 for NaN: converting NaN to an integer is undefined) and the
// remainder r = x - fn * ln 2, |r| <= ln2/2, with ln 2 in two parts (Cephes) so r stays exact.
inline float exp_split(float x, float& r) {
  float fn = (x * 1.44269504088896341f + 12582912.f) - 12582912.f;  // 1.5 * 2^23 drops the fraction
  fn = fn == fn ? fn : 0.f;
  r = (x - fn * 0.693359375f) + fn * 2.12194440e-4f;
  return fn;
}

// e^r for |r| <= ln2/2 (Cephes polynomial, ~1 ulp); a NaN r stays NaN.
inline float exp_poly(float r) {
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return p * r * r + r + 1.0f;
}

// expf as 2^n * e^r. 2^n is applied as two factors 2^(n/2) * 2^(n - n/2) so that n = 128 (x up
// to ln(FLT_MAX)) and n down to -150 (the denormals) stay exact; the clamp to [-104, 89] then
// gives +inf above ln(FLT_MAX) and 0 below the smallest denormal, like std::exp. std::max/std::min
// keep a NaN (their comparisons are false), which flows through the polynomial.
inline float fast_exp(float x) {
  x = std::min(std::max(x, -104.f), 89.f);
  float r;
  const int32_t n = static_cast<int32_t>(exp_split(x, r));
  const int32_t h = n >> 1;
  return exp_poly(r) * bits_to_float((h + 127) << 23) * bits_to_float((n - h + 127) << 23);
}

}  // namespace opforge_cpu
