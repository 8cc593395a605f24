// PanelGemv (see rnn_gemv.hpp). B is packed as [panels][K][width]: panel p holds columns
// [p * width, (p + 1) * width), zero beyond N, so every load is a full aligned vector. One panel
// is 4 vectors: 16 floats each with AVX-512, 8 with AVX2 (and the baseline build, where GCC's
// generic vectors become SSE pairs). The kernel body is written once over GCC vector types and
// instantiated per ISA; the ISA is chosen at packing time (the panel width depends on it), as
// the one oneDNN dispatches to, so that ONEDNN_MAX_CPU_ISA=AVX2 (how an AVX2 host is emulated
// here) runs the AVX2 kernel too.
#include "core/rnn_gemv.hpp"
#include "core/dnnl_util.hpp"  // advise_huge_pages
#include "core/host_isa.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
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

}  // namespace

PanelGemv::PanelGemv(const float* b, int64_t K, int64_t N, int64_t ks, int64_t ns, bool bf16) : K_(K), N_(N) {
  // the cpu_isa values are cumulative bit masks: an ISA contains every bit of the ones below it
  isa_ = host_has_avx512() ? Isa::avx512 : host_has_avx2_fma() ? Isa::avx2 : Isa::baseline;
  if (bf16 && host_has_avx512_bf16()) isa_ = Isa::avx512_bf16;
  width_ = kVecs * (isa_ == Isa::avx512 || isa_ == Isa::avx512_bf16 ? 16 : 8);
  const int64_t panels = (N + width_ - 1) / width_;
  // a uint32 holds two bf16: (K + 1) / 2 of them per column; a float holds one
  const int64_t rows = isa_ == Isa::avx512_bf16 ? (K + 1) / 2 : K;
  const size_t count = static_cast<size_t>(std::max<int64_t>(1, panels * rows * width_));
  // aligned for full-vector loads; the size rounded up as aligned_alloc requires
  const size_t bytes = (count * sizeof(float) + 63) / 64 * 64;
  float* mem = static_cast<float*>(std::aligned_alloc(64, bytes));
  if (!mem) throw std::bad_alloc();
  packed_ = std::unique_ptr<float[], void (*)(void*)>(mem, std::free);
  advise_huge_pages(mem, bytes);  // streamed every step as pack_constant's weights are
  std::fill(mem, mem + count, 0.f);
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
