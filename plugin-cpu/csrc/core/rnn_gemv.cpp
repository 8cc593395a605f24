// PanelGemv (see rnn_gemv.hpp). B is packed as [panels][K][width]: panel p holds columns
// [p * width, (p + 1) * width), zero beyond N, so every load is a full aligned vector. One panel
// is 4 vectors: 16 floats each with AVX-512, 8 with AVX2 (and the baseline build, where GCC's
// generic vectors become SSE pairs). The kernel body is written once over GCC vector types and
// instantiated per ISA; the ISA is chosen at packing time (the panel width depends on it), as
// the one oneDNN dispatches to, so that ONEDNN_MAX_CPU_ISA=AVX2 (how an AVX2 host is emulated
// here) runs the AVX2 kernel too.
#include "core/rnn_gemv.hpp"
#include "core/dnnl_util.hpp"  // advise_huge_pages
#include "core/dynamic_u8.hpp"
#include "core/host_isa.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <vector>

namespace opforge_cpu {

namespace {

typedef float v16 __attribute__((vector_size(64), __may_alias__));
typedef float v8 __attribute__((vector_size(32), __may_alias__));

constexpr int kVecs = 4;  // vectors per panel

template <class V, int W> inline void store_row(float* c, const V* s, int64_t nw) {
  for (int v = 0; v < kVecs; ++v) {
    const int64_t n = std::min<int64_t>(W, nw - int64_t{v} * W);
    if (n <= 0) break;
    const V t = s[v];
    std::memcpy(c + v * W, &t, static_cast<size_t>(n) * sizeof(float));
  }
}

// Two rows of a share each weight load; a single row runs even and odd k on separate
// accumulators, so that 8 independent FMA chains hide the FMA latency in both cases.
template <class V, int W>
inline __attribute__((always_inline)) void gemv_body(const float* packed, int64_t K, int64_t N, const float* a,
                                                     int64_t lda, int64_t M, float* c, int64_t ldc) {
  constexpr int64_t P = kVecs * W;
  const int64_t panels = (N + P - 1) / P;
  for (int64_t p = 0; p < panels; ++p) {
    const V* w = reinterpret_cast<const V*>(packed + p * K * P);
    const int64_t n0 = p * P, nw = std::min(P, N - n0);
    int64_t m = 0;
    for (; m + 2 <= M; m += 2) {
      V s0[kVecs] = {}, s1[kVecs] = {};
      const float* a0 = a + m * lda;
      const float* a1 = a0 + lda;
      for (int64_t k = 0; k < K; ++k) {
        const V x0 = V{} + a0[k], x1 = V{} + a1[k];
        const V* wk = w + k * kVecs;
#pragma GCC unroll 4
        for (int v = 0; v < kVecs; ++v) {
          s0[v] += x0 * wk[v];
          s1[v] += x1 * wk[v];
        }
      }
      store_row<V, W>(c + m * ldc + n0, s0, nw);
      store_row<V, W>(c + (m + 1) * ldc + n0, s1, nw);
    }
    if (m < M) {
      V s0[kVecs] = {}, s1[kVecs] = {};
      const float* a0 = a + m * lda;
      int64_t k = 0;
      for (; k + 2 <= K; k += 2) {
        const V x0 = V{} + a0[k], x1 = V{} + a0[k + 1];
        const V* wk = w + k * kVecs;
#pragma GCC unroll 4
        for (int v = 0; v < kVecs; ++v) {
          s0[v] += x0 * wk[v];
          s1[v] += x1 * wk[kVecs + v];
        }
      }
      if (k < K) {
        const V x0 = V{} + a0[k];
        const V* wk = w + k * kVecs;
#pragma GCC unroll 4
        for (int v = 0; v < kVecs; ++v) s0[v] += x0 * wk[v];
      }
#pragma GCC unroll 4
      for (int v = 0; v < kVecs; ++v) s0[v] += s1[v];
      store_row<V, W>(c + m * ldc + n0, s0, nw);
    }
  }
}

__attribute__((target("avx512f,fma"))) void gemv_avx512(const float* packed, int64_t K, int64_t N, const float* a,
                                                        int64_t lda, int64_t M, float* c, int64_t ldc) {
  gemv_body<v16, 16>(packed, K, N, a, lda, M, c, ldc);
}

__attribute__((target("avx2,fma"))) void gemv_avx2(const float* packed, int64_t K, int64_t N, const float* a,
                                                   int64_t lda, int64_t M, float* c, int64_t ldc) {
  gemv_body<v8, 8>(packed, K, N, a, lda, M, c, ldc);
}

void gemv_baseline(const float* packed, int64_t K, int64_t N, const float* a, int64_t lda, int64_t M, float* c,
                   int64_t ldc) {
  gemv_body<v8, 8>(packed, K, N, a, lda, M, c, ldc);
}

// f32 -> bf16, rounded to nearest even (NaN kept a NaN)
inline uint32_t bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40u;
  return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}

#define OPFORGE_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512bf16"), always_inline)) inline

OPFORGE_BF16_TARGET __m512 dp(__m512 s, __m512i x, const uint32_t* w) {
  return _mm512_dpbf16_ps(s, (__m512bh)x, (__m512bh)_mm512_load_si512(w));
}

OPFORGE_BF16_TARGET void store(float* dst, const __m512* s, int64_t nw) {
  for (int v = 0; v < 4; ++v) {
    const int64_t n = std::min<int64_t>(16, nw - v * 16);
    if (n <= 0) break;
    _mm512_mask_storeu_ps(dst + v * 16, static_cast<__mmask16>((1u << n) - 1u), s[v]);
  }
}

// bf16 pairs: w as [ceil(K / 2)][64] uint32 per panel, a as [M][ceil(K / 2)] (lda2 apart).
// vdpbf16ps adds both products of a pair into an f32 lane: 32 multiply-adds per instruction
// and half the bytes of f32 weights. Rows as in gemv_body.
__attribute__((target("avx512f,avx512bw,avx512bf16"))) void gemv_bf16(const uint32_t* packed, int64_t K2, int64_t N,
                                                                       const uint32_t* a, int64_t lda2, int64_t M,
                                                                       float* c, int64_t ldc) {
  constexpr int64_t P = 64;
  const int64_t panels = (N + P - 1) / P;
  for (int64_t p = 0; p < panels; ++p) {
    const uint32_t* w = packed + p * K2 * P;
    const int64_t n0 = p * P, nw = std::min(P, N - n0);
    int64_t m = 0;
    for (; m + 2 <= M; m += 2) {
      __m512 s0[4], s1[4];
      for (int v = 0; v < 4; ++v) s0[v] = s1[v] = _mm512_setzero_ps();
      const uint32_t* a0 = a + m * lda2;
      const uint32_t* a1 = a0 + lda2;
      for (int64_t k = 0; k < K2; ++k) {
        const __m512i x0 = _mm512_set1_epi32(static_cast<int>(a0[k])), x1 = _mm512_set1_epi32(static_cast<int>(a1[k]));
        const uint32_t* wk = w + k * P;
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) {
          s0[v] = dp(s0[v], x0, wk + v * 16);
          s1[v] = dp(s1[v], x1, wk + v * 16);
        }
      }
      store(c + m * ldc + n0, s0, nw);
      store(c + (m + 1) * ldc + n0, s1, nw);
    }
    if (m < M) {
      __m512 s0[4], s1[4];
      for (int v = 0; v < 4; ++v) s0[v] = s1[v] = _mm512_setzero_ps();
      const uint32_t* a0 = a + m * lda2;
      int64_t k = 0;
      for (; k + 2 <= K2; k += 2) {
        const __m512i x0 = _mm512_set1_epi32(static_cast<int>(a0[k])), x1 = _mm512_set1_epi32(static_cast<int>(a0[k + 1]));
        const uint32_t* wk = w + k * P;
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) {
          s0[v] = dp(s0[v], x0, wk + v * 16);
          s1[v] = dp(s1[v], x1, wk + P + v * 16);
        }
      }
      if (k < K2) {
        const __m512i x0 = _mm512_set1_epi32(static_cast<int>(a0[k]));
        for (int v = 0; v < 4; ++v) s0[v] = dp(s0[v], x0, w + k * P + v * 16);
      }
      for (int v = 0; v < 4; ++v) s0[v] = _mm512_add_ps(s0[v], s1[v]);
      store(c + m * ldc + n0, s0, nw);
    }
  }
}


// --- int8: the dynamically quantized recurrence (DynamicQuantizeLSTM) ---------------------------
#define OPFORGE_VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))

constexpr int64_t kS8Panel = 64;  // columns per panel: 4 vectors of 16 s32 lanes

// The M x K values of a (rows lda apart) quantized to u8 with one scale and zero point over all of
// them (dynamic_u8_params: NaN takes no part in the range and quantizes to 0), written as rows of
// K4 = ceil(K / 4) int32 quads (4 consecutive k, the padding k zero). Returns the parameters.
OPFORGE_VNNI_TARGET DynamicU8Params quantize_rows_u8(const float* a, int64_t lda, int64_t M, int64_t K, int64_t K4,
                                                     uint8_t* q) {
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  __m512 l = _mm512_set1_ps(lo), h = _mm512_set1_ps(hi);
  for (int64_t m = 0; m < M; ++m) {
    const float* am = a + m * lda;
    int64_t k = 0;
    for (; k + 16 <= K; k += 16) {
      const __m512 v = _mm512_loadu_ps(am + k);
      l = _mm512_min_ps(v, l);  // (the second operand where v is NaN: NaN never enters)
      h = _mm512_max_ps(v, h);
    }
    for (; k < K; ++k) {
      lo = am[k] < lo ? am[k] : lo;
      hi = am[k] > hi ? am[k] : hi;
    }
  }
  lo = std::min(lo, _mm512_reduce_min_ps(l));
  hi = std::max(hi, _mm512_reduce_max_ps(h));
  if (lo > hi) lo = hi = 0.f;  // no element but NaNs (or none): every element quantizes to 0 below
  const DynamicU8Params p = dynamic_u8_params(lo, hi);
  const __m512 scale = _mm512_set1_ps(p.scale), zp = _mm512_set1_ps(static_cast<float>(p.zero_point));
  const __m512 zero = _mm512_setzero_ps(), top = _mm512_set1_ps(255.f);
  for (int64_t m = 0; m < M; ++m) {
    const float* am = a + m * lda;
    uint8_t* qm = q + m * K4 * 4;
    for (int64_t k = 0; k < K; k += 16) {
      const int64_t n = std::min<int64_t>(16, K - k);
      const __mmask16 lanes = static_cast<__mmask16>((1u << n) - 1u);
      // round_half_even(x / scale) + zp, clamped to [0, 255]; max(NaN, 0) is 0
      __m512 v = _mm512_div_ps(_mm512_maskz_loadu_ps(lanes, am + k), scale);
      v = _mm512_add_ps(_mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), zp);
      v = _mm512_min_ps(_mm512_max_ps(v, zero), top);
      _mm_mask_storeu_epi8(qm + k, lanes, _mm512_cvtusepi32_epi8(_mm512_cvtps_epu32(v)));
    }
    std::memset(qm + K, 0, static_cast<size_t>(K4 * 4 - K));
  }
  return p;
}

// c[m, n] = (sum_k q_a[m, k] * q_b[k, n] - zp * col_sum[n]) * (a_scale * col_scale[n]), the
// products by vpdpbusd (u8 x s8, 4 a lane, into s32: exact, no saturation). Even and odd quads on
// separate accumulators: 8 independent chains hide vpdpbusd's latency at one row.
OPFORGE_VNNI_TARGET void gemv_s8(const int32_t* quads, int64_t K4, int64_t N, const int32_t* aq, int64_t M,
                                 const int32_t* col_sum, const float* col_scale, DynamicU8Params p, float* c,
                                 int64_t ldc) {
  constexpr int64_t P = kS8Panel;
  const int64_t panels = (N + P - 1) / P;
  const __m512i zp = _mm512_set1_epi32(p.zero_point);
  const __m512 a_scale = _mm512_set1_ps(p.scale);
  for (int64_t pn = 0; pn < panels; ++pn) {
    const int32_t* w = quads + pn * K4 * P;
    const int64_t n0 = pn * P, nw = std::min(P, N - n0);
    for (int64_t m = 0; m < M; ++m) {
      const int32_t* am = aq + m * K4;
      __m512i s0[4], s1[4];
      for (int v = 0; v < 4; ++v) s0[v] = s1[v] = _mm512_setzero_si512();
      int64_t k = 0;
      for (; k + 2 <= K4; k += 2) {
        const __m512i x0 = _mm512_set1_epi32(am[k]), x1 = _mm512_set1_epi32(am[k + 1]);
        const int32_t* wk = w + k * P;
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) {
          s0[v] = _mm512_dpbusd_epi32(s0[v], x0, _mm512_load_si512(wk + v * 16));
          s1[v] = _mm512_dpbusd_epi32(s1[v], x1, _mm512_load_si512(wk + P + v * 16));
        }
      }
      if (k < K4) {
        const __m512i x0 = _mm512_set1_epi32(am[k]);
        for (int v = 0; v < 4; ++v) s0[v] = _mm512_dpbusd_epi32(s0[v], x0, _mm512_load_si512(w + k * P + v * 16));
      }
      for (int v = 0; v < 4; ++v) {
        const int64_t n = std::min<int64_t>(16, nw - v * 16);
        if (n <= 0) break;
        const int64_t at = n0 + v * 16;
        // (col_sum and col_scale are padded to whole panels)
        const __m512i acc = _mm512_sub_epi32(_mm512_add_epi32(s0[v], s1[v]),
                                             _mm512_mullo_epi32(zp, _mm512_loadu_si512(col_sum + at)));
        const __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), _mm512_mul_ps(a_scale, _mm512_loadu_ps(col_scale + at)));
        _mm512_mask_storeu_ps(c + m * ldc + at, static_cast<__mmask16>((1u << n) - 1u), f);
      }
    }
  }
}

// Hosts with AVX2 but no AVX512_VNNI: u8 x s8 in pairs by vpmaddubsw would saturate at s16 (255 *
// 127 * 2 > 32767), so both sides are widened to s16 and vpmaddwd adds each pair into s32 (no
// overflow: |product| <= 255 * 128). Half of f32's bytes of R per step instead of a quarter, and
// the same integer sums as the VNNI kernel, hence the same results.
constexpr int64_t kS16Panel = 32;  // columns per panel: 4 vectors of 8 s32 lanes

// quantize_rows_u8's values, as rows of K2 = ceil(K / 2) int32 pairs of s16 (the padding k zero)
__attribute__((target("avx2,fma"))) DynamicU8Params quantize_rows_s16(const float* a, int64_t lda, int64_t M,
                                                                      int64_t K, int64_t K2, int16_t* q) {
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) {
      const float v = a[m * lda + k];
      lo = v < lo ? v : lo;  // (NaN never enters)
      hi = v > hi ? v : hi;
    }
  if (lo > hi) lo = hi = 0.f;
  const DynamicU8Params p = dynamic_u8_params(lo, hi);
  const float zp = static_cast<float>(p.zero_point);
  for (int64_t m = 0; m < M; ++m) {
    int16_t* qm = q + m * K2 * 2;
    for (int64_t k = 0; k < K; ++k) {
      float v = std::nearbyint(a[m * lda + k] / p.scale) + zp;
      v = v >= 0.f ? v : 0.f;  // (NaN too, as the AVX-512 loop's max)
      qm[k] = static_cast<int16_t>(v < 255.f ? v : 255.f);
    }
    for (int64_t k = K; k < K2 * 2; ++k) qm[k] = 0;
  }
  return p;
}

// gemv_s8 with s16 pairs: c[m, n] = (sum_k q_a * q_b - zp * col_sum[n]) * (a_scale * col_scale[n])
__attribute__((target("avx2,fma"))) void gemv_s16(const int32_t* pairs, int64_t K2, int64_t N, const int32_t* aq,
                                                  int64_t M, const int32_t* col_sum, const float* col_scale,
                                                  DynamicU8Params p, float* c, int64_t ldc) {
  constexpr int64_t P = kS16Panel;
  const int64_t panels = (N + P - 1) / P;
  const __m256i zp = _mm256_set1_epi32(p.zero_point);
  const __m256 a_scale = _mm256_set1_ps(p.scale);
  for (int64_t pn = 0; pn < panels; ++pn) {
    const int32_t* w = pairs + pn * K2 * P;
    const int64_t n0 = pn * P, nw = std::min(P, N - n0);
    for (int64_t m = 0; m < M; ++m) {
      const int32_t* am = aq + m * K2;
      __m256i s0[4], s1[4];
      for (int v = 0; v < 4; ++v) s0[v] = s1[v] = _mm256_setzero_si256();
      int64_t k = 0;
      for (; k + 2 <= K2; k += 2) {
        const __m256i x0 = _mm256_set1_epi32(am[k]), x1 = _mm256_set1_epi32(am[k + 1]);
        const int32_t* wk = w + k * P;
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) {
          s0[v] = _mm256_add_epi32(s0[v], _mm256_madd_epi16(x0, _mm256_load_si256(reinterpret_cast<const __m256i*>(wk + v * 8))));
          s1[v] = _mm256_add_epi32(s1[v], _mm256_madd_epi16(x1, _mm256_load_si256(reinterpret_cast<const __m256i*>(wk + P + v * 8))));
        }
      }
      if (k < K2) {
        const __m256i x0 = _mm256_set1_epi32(am[k]);
        for (int v = 0; v < 4; ++v)
          s0[v] = _mm256_add_epi32(s0[v], _mm256_madd_epi16(x0, _mm256_load_si256(reinterpret_cast<const __m256i*>(w + k * P + v * 8))));
      }
      for (int v = 0; v < 4; ++v) {
        const int64_t n = std::min<int64_t>(8, nw - v * 8);
        if (n <= 0) break;
        const int64_t at = n0 + v * 8;
        const __m256i acc = _mm256_sub_epi32(_mm256_add_epi32(s0[v], s1[v]),
                                             _mm256_mullo_epi32(zp, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(col_sum + at))));
        const __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(acc), _mm256_mul_ps(a_scale, _mm256_loadu_ps(col_scale + at)));
        alignas(32) float out[8];
        _mm256_store_ps(out, f);
        std::memcpy(c + m * ldc + at, out, static_cast<size_t>(n) * sizeof(float));
      }
    }
  }
}
}  // namespace

namespace {
// count 4-byte elements, zeroed, 64-byte aligned (full-vector loads), the size rounded up as
// aligned_alloc requires
std::unique_ptr<float[], void (*)(void*)> packed_buffer(int64_t count) {
  const size_t n = static_cast<size_t>(std::max<int64_t>(1, count));
  const size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
  float* mem = static_cast<float*>(std::aligned_alloc(64, bytes));
  if (!mem) throw std::bad_alloc();
  advise_huge_pages(mem, bytes);  // streamed every step as pack_constant's weights are
  std::fill(mem, mem + n, 0.f);   // (all-zero bits: zero in every packed type)
  return std::unique_ptr<float[], void (*)(void*)>(mem, std::free);
}
}  // namespace

PanelGemv::PanelGemv(const float* b, int64_t K, int64_t N, int64_t ks, int64_t ns, bool bf16) : K_(K), N_(N) {
  pack_f32(b, ks, ns, bf16);
}

PanelGemv::PanelGemv(const float* b, int64_t K, int64_t N, int64_t ks, int64_t ns, const float* col_scale)
    : K_(K), N_(N) {
  if (!pack_s8(b, ks, ns, col_scale)) pack_f32(b, ks, ns, false);
}

bool PanelGemv::pack_s8(const float* b, int64_t ks, int64_t ns, const float* col_scale) {
  // (K * 255 * 128 must stay below 2^31 for an exact s32 sum)
  if (col_scale == nullptr || K_ <= 0 || N_ <= 0 || K_ > 65536) return false;
  // s8 quads for vpdpbusd, else (AVX2) s16 pairs for vpmaddwd
  const bool vnni = host_has_avx512_vnni();
  if (!vnni && !host_has_avx2_fma()) return false;
  const int64_t group = vnni ? 4 : 2, width = vnni ? kS8Panel : kS16Panel;
  const int64_t KG = (K_ + group - 1) / group, panels = (N_ + width - 1) / width;
  // (a packed row of `width` columns holds width * group weights in width int32)
  auto mem = packed_buffer(panels * KG * width);
  int8_t* quads = reinterpret_cast<int8_t*>(mem.get());
  int16_t* pairs = reinterpret_cast<int16_t*>(mem.get());
  std::vector<float> scale(static_cast<size_t>(panels * width), 0.f);
  std::vector<int32_t> sum(scale.size(), 0);
  for (int64_t n = 0; n < N_; ++n) {
    const float s = col_scale[n];
    if (!(s > 0.f) || !std::isfinite(s)) return false;
    scale[static_cast<size_t>(n)] = s;
    const int64_t p = n / width, j = n % width;
    for (int64_t k = 0; k < K_; ++k) {
      const float w = b[k * ks + n * ns];
      const double t = std::nearbyint(static_cast<double>(w) / s);
      // the whole multiple exactly (NaN and out-of-range values fail the comparisons)
      if (!(t >= -128.0 && t <= 127.0) || static_cast<float>(static_cast<float>(t) * s) != w) return false;
      const int64_t at = ((p * KG + k / group) * width + j) * group + k % group;
      if (vnni) quads[at] = static_cast<int8_t>(t);
      else pairs[at] = static_cast<int16_t>(t);
      sum[static_cast<size_t>(n)] += static_cast<int32_t>(t);
    }
  }
  packed_ = std::move(mem);
  col_scale_ = std::move(scale);
  col_sum_ = std::move(sum);
  isa_ = vnni ? Isa::avx512_vnni : Isa::avx2_s16;
  width_ = static_cast<int>(width);
  return true;
}

void PanelGemv::pack_f32(const float* b, int64_t ks, int64_t ns, bool bf16) {
  const int64_t K = K_, N = N_;
  // the cpu_isa values are cumulative bit masks: an ISA contains every bit of the ones below it
  isa_ = host_has_avx512() ? Isa::avx512 : host_has_avx2_fma() ? Isa::avx2 : Isa::baseline;
  if (bf16 && host_has_avx512_bf16()) isa_ = Isa::avx512_bf16;
  width_ = kVecs * (isa_ == Isa::avx512 || isa_ == Isa::avx512_bf16 ? 16 : 8);
  const int64_t panels = (N + width_ - 1) / width_;
  // a uint32 holds two bf16: (K + 1) / 2 of them per column; a float holds one
  const int64_t rows = isa_ == Isa::avx512_bf16 ? (K + 1) / 2 : K;
  packed_ = packed_buffer(panels * rows * width_);
  float* mem = packed_.get();
  if (isa_ == Isa::avx512_bf16) {
    uint32_t* pairs = reinterpret_cast<uint32_t*>(mem);  // 0.f is all-zero bits: the padding
    for (int64_t p = 0; p < panels; ++p)
      for (int64_t k = 0; k < K; ++k)
        for (int64_t j = 0; j < width_ && p * width_ + j < N; ++j)
          pairs[(p * rows + k / 2) * width_ + j] |= bf16_bits(b[k * ks + (p * width_ + j) * ns]) << (16 * (k % 2));
    return;
  }
  for (int64_t p = 0; p < panels; ++p)
    for (int64_t k = 0; k < K; ++k) {
      float* dst = mem + (p * K + k) * width_;
      for (int64_t j = 0; j < width_ && p * width_ + j < N; ++j) dst[j] = b[k * ks + (p * width_ + j) * ns];
    }
}

const char* PanelGemv::isa_name() const {
  switch (isa_) {
    case Isa::avx512: return "avx512";
    case Isa::avx512_bf16: return "avx512_bf16";
    case Isa::avx512_vnni: return "avx512_vnni_u8s8";
    case Isa::avx2_s16: return "avx2_u8s8_s16";
    case Isa::avx2: return "avx2";
    case Isa::baseline: break;
  }
  return "x86-64";
}

void PanelGemv::run(const float* a, int64_t lda, int64_t M, float* c, int64_t ldc) const {
  if (M <= 0 || N_ <= 0) return;
  if (K_ == 0) {
    // an empty sum is zero
    for (int64_t m = 0; m < M; ++m) std::fill(c + m * ldc, c + m * ldc + N_, 0.f);
    return;
  }
  switch (isa_) {
    case Isa::avx512_vnni: {
      // a's rows as u8 quads (per thread: requests run concurrently on one kernel)
      const int64_t K4 = (K_ + 3) / 4;
      thread_local std::vector<int32_t> quads;
      if (quads.size() < static_cast<size_t>(M * K4)) quads.resize(static_cast<size_t>(M * K4));
      const DynamicU8Params p = quantize_rows_u8(a, lda, M, K_, K4, reinterpret_cast<uint8_t*>(quads.data()));
      gemv_s8(reinterpret_cast<const int32_t*>(packed_.get()), K4, N_, quads.data(), M, col_sum_.data(),
              col_scale_.data(), p, c, ldc);
      break;
    }
    case Isa::avx2_s16: {
      const int64_t K2 = (K_ + 1) / 2;
      thread_local std::vector<int32_t> pairs;
      if (pairs.size() < static_cast<size_t>(M * K2)) pairs.resize(static_cast<size_t>(M * K2));
      const DynamicU8Params p = quantize_rows_s16(a, lda, M, K_, K2, reinterpret_cast<int16_t*>(pairs.data()));
      gemv_s16(reinterpret_cast<const int32_t*>(packed_.get()), K2, N_, pairs.data(), M, col_sum_.data(),
               col_scale_.data(), p, c, ldc);
      break;
    }
    case Isa::avx512_bf16: {
      // a's rows as bf16 pairs (per thread: requests run concurrently on one kernel)
      const int64_t K2 = (K_ + 1) / 2;
      thread_local std::vector<uint32_t> pairs;
      if (pairs.size() < static_cast<size_t>(M * K2)) pairs.resize(static_cast<size_t>(M * K2));
      for (int64_t m = 0; m < M; ++m) {
        const float* am = a + m * lda;
        uint32_t* pm = pairs.data() + m * K2;
        for (int64_t k2 = 0; k2 < K_ / 2; ++k2) pm[k2] = bf16_bits(am[2 * k2]) | (bf16_bits(am[2 * k2 + 1]) << 16);
        if (K_ % 2) pm[K2 - 1] = bf16_bits(am[K_ - 1]);
      }
      gemv_bf16(reinterpret_cast<const uint32_t*>(packed_.get()), K2, N_, pairs.data(), K2, M, c, ldc);
      break;
    }
    case Isa::avx512: gemv_avx512(packed_.get(), K_, N_, a, lda, M, c, ldc); break;
    case Isa::avx2: gemv_avx2(packed_.get(), K_, N_, a, lda, M, c, ldc); break;
    case Isa::baseline: gemv_baseline(packed_.get(), K_, N_, a, lda, M, c, ldc); break;
  }
}

}  // namespace opforge_cpu
