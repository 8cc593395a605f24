// Softmax over contiguous rows: a max pass, an exp-and-sum pass writing exp(x - max) to y, and a
// scale pass over y, each a unit-stride loop the compiler vectorises (softmax_exp is branch-free),
// the row staying in L1 between them. oneDNN 3.2's jit softmax followed by opforge's NaN screen
// (its max skips NaN, so the NaN/+inf rule needed a pass of its own, which here rides on the max
// pass: v - v is NaN exactly for NaN and +-inf) took 1.5-2x OpenVINO's softmax on attention
// scores. target_clones: the module builds for baseline x86-64, the loops run with the host's
// ISA; no-trapping-math lets GCC vectorise the selects (nothing here reads FP flags).
#pragma GCC optimize("no-trapping-math")

#include "core/softmax_rows.hpp"

#include <algorithm>
#include <limits>

#include "core/fast_exp.hpp"

namespace opforge_cpu {

namespace {
// exp(t) for the t = x - max <= 0 of a softmax: fast_exp's polynomial with one power-of-two
// factor, and 0 below ln(FLT_MIN) instead of a denormal (an output of at most 1.2e-38 / sum
// is lost; a masked score, -1e4 or -inf, is exactly 0). NaN stays NaN. 1x6x128x128, 1 thread:
// 77 -> 66 us against fast_exp.
inline float softmax_exp(float x) {
  constexpr float kMin = -87.33654f;  // ln(FLT_MIN): 2^-126
  const float t = std::max(x, kMin);  // keeps a NaN (the comparison is false)
  float r;
  const int32_t n = static_cast<int32_t>(exp_split(t, r));  // -126..0
  const float e = exp_poly(r) * bits_to_float((n + 127) << 23);
  return x < kMin ? 0.f : e;
}

inline __attribute__((always_inline)) void softmax_row(const float* x, float* y, int64_t len) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  // omp simd: vector partial maxima/sums, combined at the end (y may be x: same index only)
  float m = -kInf, screen = 0.f;
#pragma omp simd reduction(max : m) reduction(+ : screen)
  for (int64_t k = 0; k < len; ++k) {
    m = x[k] > m ? x[k] : m;
    screen += x[k] - x[k];
  }
  if (screen != screen) {  // a NaN or an inf: only -inf (a mask) keeps the row
    bool poisoned = false;
    for (int64_t k = 0; k < len; ++k) poisoned |= !(x[k] < kInf);
    if (poisoned) {
      for (int64_t k = 0; k < len; ++k) y[k] = std::numeric_limits<float>::quiet_NaN();
      return;
    }
  }
  // a row of -inf alone: m = -inf, x - m = NaN everywhere, as the reference computes
  float sum = 0.f;
#pragma omp simd reduction(+ : sum)
  for (int64_t k = 0; k < len; ++k) {
    const float e = softmax_exp(x[k] - m);
    y[k] = e;
    sum += e;
  }
  const float inv = 1.f / sum;
#pragma omp simd
  for (int64_t k = 0; k < len; ++k) y[k] *= inv;
}
}  // namespace

__attribute__((target_clones("avx512f", "avx2", "default")))
void softmax_rows_f32(const float* x, float* y, int64_t r0, int64_t r1, int64_t len) {
  for (int64_t r = r0; r < r1; ++r) softmax_row(x + r * len, y + r * len, len);
}

}  // namespace opforge_cpu
