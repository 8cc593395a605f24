// Softmax over contiguous rows: a max pass, an exp-and-sum pass writing exp(x - max) to y, and a
// scale pass over y, each a unit-stride loop the compiler vectorises (softmax_exp is branch-free),
// the row staying in L1 between them. oneDNN 3.2's jit softmax followed by opforge's NaN screen
// (its max skips NaN, so the NaN/+inf rule needed a pass of its own, which here rides on the max
// pass: v - v is NaN exactly for NaN and +-inf) took 1.5-2x OpenVINO's softmax on attention
// scores. target_clones: the module builds for baseline x86-64, the loops run with the host's
// ISA; no-trapping-math lets GCC vectorise the selects (nothing here reads FP flags).
#pragma GCC optimize("no-trapping-math")

#include "core/softmax_rows.hpp"

#include <immintrin.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "core/bf16_bits.hpp"
#include "core/fast_exp.hpp"
#include "core/host_isa.hpp"
#include "core/isa_clones.hpp"

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

namespace {
// The same row by hand in AVX-512 (the hosts oneDNN runs at avx512_core or above): GCC's
// vectorisation of the loops above combines each omp simd reduction through the stack, three
// per row, and runs the bf16 rounding at AVX2 width; here the row is 16-lane vectors with masked
// tails, two accumulators, and the reductions in registers. The arithmetic is softmax_exp's.
#define OPF_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma")))

OPF_AVX512 inline __m512 softmax_exp512(__m512 x) {
  const __m512 kMin = _mm512_set1_ps(-87.33654f);
  const __m512 t = _mm512_max_ps(kMin, x);  // a NaN x is kept: max_ps returns its second operand then
  const __m512 shift = _mm512_set1_ps(12582912.f);
  __m512 fn = _mm512_sub_ps(_mm512_fmadd_ps(t, _mm512_set1_ps(1.44269504088896341f), shift), shift);
  fn = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(fn, fn, _CMP_ORD_Q), fn);  // NaN -> 0
  __m512 r = _mm512_fnmadd_ps(fn, _mm512_set1_ps(0.693359375f), t);
  r = _mm512_fmadd_ps(fn, _mm512_set1_ps(2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r), _mm512_set1_ps(1.f));
  const __m512i n = _mm512_cvtps_epi32(fn);  // -126..0 (fn is integral)
  const __m512 e = _mm512_mul_ps(p, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n, _mm512_set1_epi32(127)), 23)));
  return _mm512_mask_mov_ps(e, _mm512_cmp_ps_mask(x, kMin, _CMP_LT_OQ), _mm512_setzero_ps());
}

OPF_AVX512 inline __mmask16 tail_mask(int64_t rest) { return static_cast<__mmask16>((1u << rest) - 1u); }

// exp(x - max) into e (e may be x), returns 1 / sum; a NaN/+inf row: e is NaN, returns 1
OPF_AVX512 float softmax_exp_row_avx512(const float* x, float* e, int64_t len) {
  const __m512 ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  const int64_t full = len & ~int64_t{15};
  const __mmask16 tm = tail_mask(len - full);
  __m512 m0 = ninf, m1 = ninf, s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 32 <= full; k += 32) {
    const __m512 a = _mm512_loadu_ps(x + k), b = _mm512_loadu_ps(x + k + 16);
    m0 = _mm512_max_ps(m0, a);
    m1 = _mm512_max_ps(m1, b);
    s0 = _mm512_add_ps(s0, _mm512_sub_ps(a, a));  // NaN exactly for NaN and +-inf
    s1 = _mm512_add_ps(s1, _mm512_sub_ps(b, b));
  }
  for (; k < full; k += 16) {
    const __m512 a = _mm512_loadu_ps(x + k);
    m0 = _mm512_max_ps(m0, a);
    s0 = _mm512_add_ps(s0, _mm512_sub_ps(a, a));
  }
  if (tm) {
    const __m512 a = _mm512_mask_loadu_ps(ninf, tm, x + full);
    m1 = _mm512_max_ps(m1, a);
    s1 = _mm512_add_ps(s1, _mm512_maskz_sub_ps(tm, a, a));
  }
  const float screen = _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
  if (screen != screen) {  // a NaN or an inf: only -inf (a mask) keeps the row
    bool poisoned = false;
    for (int64_t i = 0; i < len; ++i) poisoned |= !(x[i] < std::numeric_limits<float>::infinity());
    if (poisoned) {
      for (int64_t i = 0; i < len; ++i) e[i] = std::numeric_limits<float>::quiet_NaN();
      return 1.f;
    }
  }
  // a row of -inf alone: m = -inf, x - m = NaN everywhere, as the reference computes
  const __m512 m = _mm512_set1_ps(_mm512_reduce_max_ps(_mm512_max_ps(m0, m1)));
  s0 = _mm512_setzero_ps();
  s1 = _mm512_setzero_ps();
  for (k = 0; k + 32 <= full; k += 32) {
    const __m512 a = softmax_exp512(_mm512_sub_ps(_mm512_loadu_ps(x + k), m));
    const __m512 b = softmax_exp512(_mm512_sub_ps(_mm512_loadu_ps(x + k + 16), m));
    _mm512_storeu_ps(e + k, a);
    _mm512_storeu_ps(e + k + 16, b);
    s0 = _mm512_add_ps(s0, a);
    s1 = _mm512_add_ps(s1, b);
  }
  for (; k < full; k += 16) {
    const __m512 a = softmax_exp512(_mm512_sub_ps(_mm512_loadu_ps(x + k), m));
    _mm512_storeu_ps(e + k, a);
    s0 = _mm512_add_ps(s0, a);
  }
  if (tm) {
    const __m512 a = softmax_exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(tm, x + full), m));
    _mm512_mask_storeu_ps(e + full, tm, a);
    s1 = _mm512_mask_add_ps(s1, tm, s1, a);
  }
  return 1.f / _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

OPF_AVX512 void softmax_rows_f32_avx512(const float* x, float* y, int64_t r0, int64_t r1, int64_t len) {
  const int64_t full = len & ~int64_t{15};
  const __mmask16 tm = tail_mask(len - full);
  for (int64_t r = r0; r < r1; ++r) {
    float* yr = y + r * len;
    const __m512 inv = _mm512_set1_ps(softmax_exp_row_avx512(x + r * len, yr, len));
    int64_t k = 0;
    for (; k < full; k += 16) _mm512_storeu_ps(yr + k, _mm512_mul_ps(_mm512_loadu_ps(yr + k), inv));
    if (tm) _mm512_mask_storeu_ps(yr + full, tm, _mm512_mul_ps(_mm512_maskz_loadu_ps(tm, yr + full), inv));
  }
}

// Whether the rows run softmax_rows_*_avx512: the host has AVX-512 and oneDNN's effective ISA
// (ONEDNN_MAX_CPU_ISA emulates a smaller host) includes avx512_core.
bool avx512_rows() {
  return host_has_avx512();
}

// bf16 rows: e[k] * inv rounded to bf16 with AVX512_BF16's vcvtneps2bf16 (round to nearest
// even, NaN stays a quiet NaN: what f32_to_bf16_bits computes, one instruction for 16)
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,avx512bf16")))
void softmax_rows_bf16_avx512(const float* x, const float* add, int64_t add_rows, uint16_t* y, int64_t r0,
                              int64_t r1, int64_t len, float* e) {
  const int64_t full = len & ~int64_t{15};
  const __mmask16 tm = tail_mask(len - full);
  for (int64_t r = r0; r < r1; ++r) {
    uint16_t* yr = y + r * len;
    const float* xr = x + r * len;
    if (add) {  // the scores plus their mask/bias row, in f32 as the Add step computes it
      const float* ar = add + (r % add_rows) * len;
      int64_t k = 0;
      for (; k < full; k += 16) _mm512_storeu_ps(e + k, _mm512_add_ps(_mm512_loadu_ps(xr + k), _mm512_loadu_ps(ar + k)));
      if (tm) _mm512_mask_storeu_ps(e + full, tm, _mm512_add_ps(_mm512_maskz_loadu_ps(tm, xr + full),
                                                                _mm512_maskz_loadu_ps(tm, ar + full)));
      xr = e;
    }
    const __m512 inv = _mm512_set1_ps(softmax_exp_row_avx512(xr, e, len));
    int64_t k = 0;
    for (; k < full; k += 16) {
      const __m256bh h = _mm512_cvtneps_pbh(_mm512_mul_ps(_mm512_loadu_ps(e + k), inv));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(yr + k), reinterpret_cast<const __m256i&>(h));
    }
    if (tm) {
      const __m256bh h = _mm512_cvtneps_pbh(_mm512_mul_ps(_mm512_maskz_loadu_ps(tm, e + full), inv));
      _mm256_mask_storeu_epi16(yr + full, tm, reinterpret_cast<const __m256i&>(h));
    }
  }
}

// Elsewhere (a host without AVX512_BF16 never runs a bf16 program; ONEDNN_MAX_CPU_ISA below it)
inline __attribute__((always_inline)) void softmax_rows_bf16_loops(const float* x, const float* add,
                                                                   int64_t add_rows, uint16_t* y, int64_t r0,
                                                                   int64_t r1, int64_t len, float* e) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * len;
    if (add) {
      const float* ar = add + (r % add_rows) * len;
      for (int64_t k = 0; k < len; ++k) e[k] = xr[k] + ar[k];
      xr = e;
    }
    const float inv = softmax_exp_row(xr, e, len);
    uint16_t* yr = y + r * len;
    for (int64_t k = 0; k < len; ++k) yr[k] = f32_to_bf16_bits(e[k] * inv);
  }
}
// (built per ISA, picked at run time: core/isa_clones.hpp)
OPFORGE_ISA_CLONES(, "avx512f", softmax_rows_bf16_generic, softmax_rows_bf16_loops,
                   (const float* x, const float* add, int64_t add_rows, uint16_t* y, int64_t r0, int64_t r1,
                    int64_t len, float* e),
                   (x, add, add_rows, y, r0, r1, len, e))

inline __attribute__((always_inline)) void softmax_rows_f32_loops(const float* x, float* y, int64_t r0, int64_t r1,
                                                                  int64_t len) {
  for (int64_t r = r0; r < r1; ++r) softmax_row(x + r * len, y + r * len, len);
}
OPFORGE_ISA_CLONES(, "avx512f", softmax_rows_f32_generic, softmax_rows_f32_loops,
                   (const float* x, float* y, int64_t r0, int64_t r1, int64_t len), (x, y, r0, r1, len))
}  // namespace

void softmax_rows_f32(const float* x, float* y, int64_t r0, int64_t r1, int64_t len) {
  if (avx512_rows()) softmax_rows_f32_avx512(x, y, r0, r1, len);
  else softmax_rows_f32_generic(x, y, r0, r1, len);
}

void softmax_rows_bf16(const float* x, const float* add, int64_t add_rows, uint16_t* y, int64_t r0, int64_t r1,
                       int64_t len) {
  // the exponentials of one row in f32 (L1-resident: a stack row up to 2048, rows of attention
  // scores are 128-512), then scaled and rounded on the way out
  constexpr int64_t kStack = 2048;
  alignas(64) float stack[kStack];
  std::vector<float> heap(len > kStack ? static_cast<size_t>(len) : 0);
  float* e = len > kStack ? heap.data() : stack;
  static const bool native = host_has_avx512_bf16();
  if (native) softmax_rows_bf16_avx512(x, add, add_rows, y, r0, r1, len, e);
  else softmax_rows_bf16_generic(x, add, add_rows, y, r0, r1, len, e);
}

}  // namespace opforge_cpu
