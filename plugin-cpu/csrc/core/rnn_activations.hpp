// The activations of the recurrent cells over a contiguous run of gate values, in place.
// f32 uses branch-free Cephes-style approximations (expf: ~1 ulp, tanhf: ~2 ulp) that the
// compiler vectorises, where std::exp/std::tanh would be one libm call per element and the gates
// would cost more than the matrix products; f64 (exotic) keeps libm.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/recurrent.hpp"

namespace opforge_cpu {

namespace rnn_detail {
inline float bits_to_float(int32_t i) {
  float f;
  std::memcpy(&f, &i, sizeof f);
  return f;
}

// e^x for |x| <= 87.3 (callers clamp): 2^n * e^r with |r| <= ln2 / 2, Cephes' expf polynomial.
inline float exp_clamped(float x) {
  const float t = x * 1.44269504088896341f;
  const int32_t n = static_cast<int32_t>(t + (t < 0 ? -0.5f : 0.5f));
  const float fn = static_cast<float>(n);
  const float r = (x - fn * 0.693359375f) + fn * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e = p * r * r + r + 1.0f;
  return e * bits_to_float((n + 127) << 23);
}

inline float clamp_exp_arg(float x) { return x < -87.3f ? -87.3f : (x > 87.3f ? 87.3f : x); }

inline float sigmoid(float x) {
  // NaN stays NaN: clamp_exp_arg keeps it (both comparisons are false), but the float -> int
  // conversion of a NaN is undefined, so the exponent is computed from 0 and the NaN restored.
  const bool nan = x != x;
  const float e = exp_clamped(clamp_exp_arg(nan ? 0.f : -x));
  const float s = 1.0f / (1.0f + e);
  return nan ? x : s;
}

inline float tanh(float x) {
  const bool nan = x != x;
  const float a = nan ? 0.f : (x < 0 ? -x : x);
  // small |x|: the odd polynomial (1 - e^-2|x| would cancel); large: (1 - e) / (1 + e)
  const float z = a * a;
  const float small = ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z +
                        1.33314422036e-1f) * z - 3.33332819422e-1f) * z * a + a;
  const float e = exp_clamped(clamp_exp_arg(-2.0f * a));
  const float large = (1.0f - e) / (1.0f + e);
  const float m = a < 0.625f ? small : large;
  const float r = x < 0 ? -m : m;
  return nan ? x : r;
}
}  // namespace rnn_detail

// v[0..n) = act(v[0..n)); NaN propagates like the NumPy reference (np.maximum keeps it too).
void activate(Act a, float* v, int64_t n);

inline void activate(Act a, double* v, int64_t n) {
  switch (a) {
    case Act::sigmoid: for (int64_t i = 0; i < n; ++i) v[i] = 1.0 / (1.0 + std::exp(-v[i])); break;
    case Act::tanh: for (int64_t i = 0; i < n; ++i) v[i] = std::tanh(v[i]); break;
    case Act::relu: for (int64_t i = 0; i < n; ++i) v[i] = v[i] < 0 ? 0.0 : v[i]; break;
  }
}

}  // namespace opforge_cpu
