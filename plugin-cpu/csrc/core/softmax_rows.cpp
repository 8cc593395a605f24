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
#include <immintrin.h>

#include <cstring>
#include <limits>
#include <vector>

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

// exp(x[k] - max) into e[k] (e may be x: same index only); returns 1 / their sum. A row holding
// a NaN or +inf fills e with NaN (returns 1, so the caller's scaling keeps it NaN).
// f32 -> bf16 bits, round to nearest even (as oneDNN's reorder and vcvtneps2bf16); a NaN stays a
// quiet NaN where the rounding add would carry it into inf. Branch-free: the loop vectorises.
inline uint16_t f32_to_bf16_rne(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  const uint32_t quiet = (u >> 16) | 0x40u;
  return static_cast<uint16_t>((u & 0x7FFFFFFFu) > 0x7F800000u ? quiet : rounded);
}

inline __attribute__((always_inline)) float softmax_exp_row(const float* x, float* e, int64_t len) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  // omp simd: vector partial maxima/sums, combined at the end
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
      for (int64_t k = 0; k < len; ++k) e[k] = std::numeric_limits<float>::quiet_NaN();
      return 1.f;
    }
  }
  // a row of -inf alone: m = -inf, x - m = NaN everywhere, as the reference computes
  float sum = 0.f;
#pragma omp simd reduction(+ : sum)
  for (int64_t k = 0; k < len; ++k) {
    const float v = softmax_exp(x[k] - m);
    e[k] = v;
    sum += v;
  }
  return 1.f / sum;
}

inline __attribute__((always_inline)) void softmax_row(const float* x, float* y, int64_t len) {
  const float inv = softmax_exp_row(x, y, len);
#pragma omp simd
  for (int64_t k = 0; k < len; ++k) y[k] *= inv;
}
}  // namespace

__attribute__((target_clones("avx512f", "avx2", "default")))
void softmax_rows_f32(const float* x, float* y, int64_t r0, int64_t r1, int64_t len) {
  for (int64_t r = r0; r < r1; ++r) softmax_row(x + r * len, y + r * len, len);
}

namespace {
// e[k] * inv rounded to bf16 with AVX512_BF16's vcvtneps2bf16 (round to nearest even, NaN stays
// a quiet NaN: what f32_to_bf16_rne computes): GCC's vectorisation of f32_to_bf16_rne ran at
// AVX2 width with blends, and made the whole bf16 softmax 1.5x the f32 one.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
void scale_to_bf16_avx512(const float* e, float inv, uint16_t* y, int64_t len) {
  const __m512 s = _mm512_set1_ps(inv);
  int64_t k = 0;
  for (; k + 16 <= len; k += 16) {
    const __m256bh h = _mm512_cvtneps_pbh(_mm512_mul_ps(_mm512_loadu_ps(e + k), s));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + k), reinterpret_cast<const __m256i&>(h));
  }
  if (k < len) {
    const __mmask16 m = static_cast<__mmask16>((1u << (len - k)) - 1u);
    const __m256bh h = _mm512_cvtneps_pbh(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, e + k), s));
    _mm256_mask_storeu_epi16(y + k, m, reinterpret_cast<const __m256i&>(h));
  }
}

void scale_to_bf16(const float* e, float inv, uint16_t* y, int64_t len) {
  for (int64_t k = 0; k < len; ++k) y[k] = f32_to_bf16_rne(e[k] * inv);
}

template <void (*Scale)(const float*, float, uint16_t*, int64_t)>
__attribute__((target_clones("avx512f", "avx2", "default")))
void softmax_rows_bf16_with(const float* x, uint16_t* y, int64_t r0, int64_t r1, int64_t len) {
  // the exponentials of one row in f32 (L1-resident: a stack row up to 2048, rows of attention
  // scores are 128-512), then scaled and rounded on the way out
  constexpr int64_t kStack = 2048;
  alignas(64) float stack[kStack];
  std::vector<float> heap(len > kStack ? static_cast<size_t>(len) : 0);
  float* e = len > kStack ? heap.data() : stack;
  for (int64_t r = r0; r < r1; ++r) {
    const float inv = softmax_exp_row(x + r * len, e, len);
    Scale(e, inv, y + r * len, len);
  }
}
}  // namespace

void softmax_rows_bf16(const float* x, uint16_t* y, int64_t r0, int64_t r1, int64_t len) {
  static const bool native = __builtin_cpu_supports("avx512bf16");
  if (native) softmax_rows_bf16_with<scale_to_bf16_avx512>(x, y, r0, r1, len);
  else softmax_rows_bf16_with<scale_to_bf16>(x, y, r0, r1, len);
}

}  // namespace opforge_cpu
