// MaxPool-8: values by oneDNN; when the indices output is read, a direct loop that also writes
// the flat index of each maximum (oneDNN's workspace is not in OpenVINO's index format). Integer
// tensors (u8, i8, i32...) take the direct loop too: exact, with or without indices. An f32 nhwc
// input (values only) on an AVX-512 host takes a channels-last loop that propagates NaN as it pools.
#include "core/dnnl_util.hpp"
#include "core/env_switch.hpp"
#include "core/host_isa.hpp"
#include "core/nn.hpp"
#include "kernels/nhwc_windows.hpp"
#include "core/elementwise.hpp"
#include "core/primitive_log.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

namespace opforge_cpu {

namespace {
template <class T> class MaxPoolIndices : public Kernel {
 public:
  explicit MaxPoolIndices(const NodeDesc& n) : xs_(n.in(0).shape), ys_(n.outputs[0].shape) {
    const int sp = static_cast<int>(xs_.size()) - 2;
    kernel_ = n.attrs.ints("kernel");
    strides_ = n.attrs.ints("strides", std::vector<int64_t>(sp, 1));
    dil_ = n.attrs.ints("dilations", std::vector<int64_t>(sp, 1));
    std::vector<int64_t> pe;
    window_pads(n, xs_, ys_, kernel_, strides_, dil_, pb_, pe);
    axis_ = n.attrs.i("axis", 0);
    if (axis_ < 0) axis_ += static_cast<int64_t>(xs_.size());
    idx64_ = n.outputs.size() > 1 && n.outputs[1].dtype == DType::i64;
    with_idx_ = n.outputs.size() > 1;
  }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const int sp = static_cast<int>(xs_.size()) - 2;
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    const int64_t N = xs_[0], C = xs_[1];
    int64_t in_sp = 1, out_sp = 1;
    for (int i = 0; i < sp; ++i) {
      in_sp *= xs_[2 + i];
      out_sp *= ys_[2 + i];
    }
    // Indices are flat over the dims from `axis` on (OpenVINO's MaxPool-8 semantics).
    int64_t idx_stride_c = axis_ <= 1 ? in_sp : 0;
    int64_t idx_stride_n = axis_ == 0 ? C * in_sp : 0;
    parallel_range(N * C, ctx.num_threads, [&](int64_t b, int64_t e) {
      std::vector<int64_t> o(sp), w(sp);
      for (int64_t nc = b; nc < e; ++nc) {
        const T* xp = x + nc * in_sp;
        int64_t base = (nc / C) * idx_stride_n + (nc % C) * idx_stride_c;
        for (int64_t oi = 0; oi < out_sp; ++oi) {
          int64_t r = oi;
          for (int d = sp - 1; d >= 0; --d) { o[d] = r % ys_[2 + d]; r /= ys_[2 + d]; }
          T best = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                        : std::numeric_limits<T>::lowest();
          int64_t best_i = -1;
          int64_t total = 1;
          for (int d = 0; d < sp; ++d) total *= kernel_[d];
          for (int64_t ki = 0; ki < total; ++ki) {
            int64_t rr = ki, off = 0;
            bool inside = true;
            for (int d = sp - 1; d >= 0; --d) {
              int64_t k = rr % kernel_[d];
              rr /= kernel_[d];
              int64_t pos = o[d] * strides_[d] - pb_[d] + k * dil_[d];
              if (pos < 0 || pos >= xs_[2 + d]) { inside = false; break; }
              w[d] = pos;
            }
            if (!inside) continue;
            for (int d = 0; d < sp; ++d) off = off * xs_[2 + d] + w[d];
            if (best_i < 0 || xp[off] > best) { best = xp[off]; best_i = off; }
          }
          y[nc * out_sp + oi] = best;
          if (!with_idx_) continue;
          int64_t flat = best_i < 0 ? 0 : base + best_i;
          if (idx64_) out[1].ptr<int64_t>()[nc * out_sp + oi] = flat;
          else out[1].ptr<int32_t>()[nc * out_sp + oi] = static_cast<int32_t>(flat);
        }
      }
    }, 1);
  }

 private:
  Shape xs_, ys_;
  std::vector<int64_t> kernel_, strides_, dil_, pb_;
  int64_t axis_ = 0;
  bool idx64_ = true, with_idx_ = true;
};
// max over the window's taps, channels as the vector; a NaN anywhere in the window makes the
// output NaN (taken where v > max or v is unordered; NaN > m and m > NaN are both false, so
// once NaN the maximum stays NaN). AVX-512 by hand: GCC's vectorisation of the same loop
// (compare, compare, or, blend per element per tap, 4 vectors of 64 channels) ran 8x slower,
// 1.3 vs 0.17 ms for squeezenet's first pool.
__attribute__((target("avx512f")))
void window_max_nhwc_avx512(const float* const* taps, int64_t k, float* y, int64_t c) {
  const __m512 lowest = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int64_t i = 0; i < c; i += 16) {
    const __mmask16 lanes = c - i >= 16 ? static_cast<__mmask16>(0xffff)
                                        : static_cast<__mmask16>((1u << (c - i)) - 1u);
    __m512 m = lowest;
    for (int64_t t = 0; t < k; ++t) {
      const __m512 v = _mm512_maskz_loadu_ps(lanes, taps[t] + i);
      const __mmask16 take = _mm512_cmp_ps_mask(v, m, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
      m = _mm512_mask_blend_ps(take, m, v);
    }
    _mm512_mask_storeu_ps(y + i, lanes, m);
  }
}

// The same over bf16 channels (a bf16 program's tensors), 32 at a time as int16 keys that order
// like the values: negative values get their magnitude bits flipped (sign-magnitude -> two's
// complement order), then all keys move down by 0x7f so that the negative NaNs, which fall below
// -inf, wrap to the top, above the positive NaNs, which are above +inf already. One integer max
// per tap then takes any NaN of the window (an f32 widening and two compares per 16 channels
// ran 1.6x OpenVINO's bf16 pooling); the key maps back to the same bits. Bit-exact, except
// that +0 wins over -0 (the f32 kernel keeps the first of equal zeros).
__attribute__((target("avx512f,avx512bw"))) inline __m512i bf16_order_key(__m512i h) {
  const __m512i sign = _mm512_srai_epi16(h, 15);
  // h ^ (sign & 0x7fff): ternary logic table 0x78 for A ^ (B & C)
  const __m512i k = _mm512_ternarylogic_epi32(h, sign, _mm512_set1_epi16(0x7fff), 0x78);
  return _mm512_sub_epi16(k, _mm512_set1_epi16(0x7f));
}

__attribute__((target("avx512f,avx512bw"))) inline __m512i bf16_from_order_key(__m512i key) {
  const __m512i k = _mm512_add_epi16(key, _mm512_set1_epi16(0x7f));
  return _mm512_ternarylogic_epi32(k, _mm512_srai_epi16(k, 15), _mm512_set1_epi16(0x7fff), 0x78);
}

__attribute__((target("avx512f,avx512bw")))
void window_max_nhwc_avx512(const uint16_t* const* taps, int64_t k, uint16_t* y, int64_t c) {
  // the key of -inf (0xff80): the maximum of an empty window, as the f32 kernel's
  const __m512i lowest = _mm512_set1_epi16(static_cast<int16_t>(0x8000));
  for (int64_t i = 0; i < c; i += 32) {
    const __mmask32 lanes = c - i >= 32 ? static_cast<__mmask32>(0xffffffffu)
                                        : static_cast<__mmask32>((1ull << (c - i)) - 1ull);
    __m512i m = lowest;
    for (int64_t t = 0; t < k; ++t) m = _mm512_max_epi16(m, bf16_order_key(_mm512_maskz_loadu_epi16(lanes, taps[t] + i)));
    _mm512_mask_storeu_epi16(y + i, lanes, bf16_from_order_key(m));
  }
}

// One output row of the bf16 pooling above, walked by rows instead of pixels: `rows` are the nr
// source rows its windows read (the kernel rows inside the image), each pixel's window columns
// are clipped to the row, and the maximum is taken straight from the source rows. The pixel walk
// (for_each_nhwc_window: three divisions, a table of tap pointers and a call per output pixel)
// cost as much as the loads for few channels: C++ micro-benchmark, one thread, alternating, under
// chrt, rows/pixels: UNet's 2x2/2 pools 16 ch 256x256 0.50, 32 ch 128x128 0.50, 64 ch 64x64 0.66,
// 128 ch 32x32 0.85; ResNet's 3x3/2 pad 1 64 ch 112x112 0.62; VGG's 64 ch 224x224 0.71. The
// same maxima in the same order: the bytes of the pixel walk.
__attribute__((target("avx512f,avx512bw")))
void row_max_nhwc_avx512(const uint16_t* const* rows, int64_t nr, int64_t W, int64_t C, int64_t OW, int64_t K, int64_t S,
                         int64_t P, int64_t D, uint16_t* y) {
  const __m512i lowest = _mm512_set1_epi16(static_cast<int16_t>(0x8000));  // (the key of -inf)
  for (int64_t ow = 0; ow < OW; ++ow) {
    const int64_t iw0 = ow * S - P;
    // the kernel columns inside the row: 0 <= iw0 + kw * D <= W - 1
    const int64_t kw0 = iw0 >= 0 ? 0 : (-iw0 + D - 1) / D;
    const int64_t kw1 = iw0 > W - 1 ? 0 : std::min<int64_t>(K, (W - 1 - iw0) / D + 1);
    for (int64_t i = 0; i < C; i += 32) {
      const __mmask32 lanes = C - i >= 32 ? static_cast<__mmask32>(0xffffffffu)
                                          : static_cast<__mmask32>((1ull << (C - i)) - 1ull);
      __m512i m = lowest;
      for (int64_t j = 0; j < nr; ++j)
        for (int64_t kw = kw0; kw < kw1; ++kw)
          m = _mm512_max_epi16(m, bf16_order_key(_mm512_maskz_loadu_epi16(lanes, rows[j] + (iw0 + kw * D) * C + i)));
      _mm512_mask_storeu_epi16(y + ow * C + i, lanes, bf16_from_order_key(m));
    }
  }
}

// The same walk for f32 (the f32 window maximum above: v taken where v > max or v is
// unordered, so NaN propagates; the taps in the pixel walk's order, so the same bytes).
__attribute__((target("avx512f")))
void row_max_nhwc_avx512(const float* const* rows, int64_t nr, int64_t W, int64_t C, int64_t OW, int64_t K, int64_t S,
                         int64_t P, int64_t D, float* y) {
  const __m512 lowest = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int64_t ow = 0; ow < OW; ++ow) {
    const int64_t iw0 = ow * S - P;
    const int64_t kw0 = iw0 >= 0 ? 0 : (-iw0 + D - 1) / D;
    const int64_t kw1 = iw0 > W - 1 ? 0 : std::min<int64_t>(K, (W - 1 - iw0) / D + 1);
    for (int64_t i = 0; i < C; i += 16) {
      const __mmask16 lanes = C - i >= 16 ? static_cast<__mmask16>(0xffff)
                                          : static_cast<__mmask16>((1u << (C - i)) - 1u);
      __m512 m = lowest;
      for (int64_t j = 0; j < nr; ++j)
        for (int64_t kw = kw0; kw < kw1; ++kw) {
          const __m512 v = _mm512_maskz_loadu_ps(lanes, rows[j] + (iw0 + kw * D) * C + i);
          const __mmask16 take = _mm512_cmp_ps_mask(v, m, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
          m = _mm512_mask_blend_ps(take, m, v);
        }
      _mm512_mask_storeu_ps(y + ow * C + i, lanes, m);
    }
  }
}

// The f32 maximum of the walks above: v taken where v > m or v is unordered, so a NaN on
// either side survives (NaN > m is false and m > NaN too, so a NaN m is kept).
__attribute__((target("avx512f"), always_inline)) inline __m512 nan_max(__m512 m, __m512 v) {
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, m, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), m, v);
}

// NB consecutive 16-channel blocks of one output pixel of the f32 row walk, each its own
// running maximum. The row walk above keeps one maximum at a time and every tap's compare ->
// mask -> blend waits for the previous tap's blend (a chain of ~5 cycles a tap), so a 3x3
// window of 64 channels ran at the chain's latency, not at the loads' rate: squeezenet1_1's
// three 3x3/2 pools 0.29 ms at 1 thread on the Zen 5 VM, ONNX Runtime's 0.09. With NB chains
// in flight the core overlaps them. Per lane the taps come in the same order with the same
// operation, so the bytes are the row walk's (NaN and signed zeros included).
//
// The maximum itself with one mask compare instead of two and no mask OR (the compares into a
// mask register were the limit once the chains overlapped): vmaxps(v, m) returns v where v > m
// and m otherwise, so a NaN m, equal values and signed zeros keep m, as the row walk does; only
// a NaN v must win, which the blend on v's own unordered compare does (off the chain: it reads
// v only). The same result as nan_max below, lane by lane.
__attribute__((target("avx512f"), always_inline)) inline __m512 nan_max_v(__m512 m, __m512 v) {
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), _mm512_max_ps(v, m), v);
}

template <int NB>
__attribute__((target("avx512f"), always_inline)) inline void row_max_blocks(const float* const* rows, int64_t nr,
                                                                             int64_t iw0, int64_t kw0, int64_t kw1,
                                                                             int64_t D, int64_t C, int64_t i, float* y) {
  __m512 m[NB];
  __mmask16 lanes[NB];
  for (int b = 0; b < NB; ++b) {
    const int64_t left = C - i - 16 * b;  // >= 1: the caller passes only blocks that hold channels
    lanes[b] = left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1u);
    m[b] = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  }
  for (int64_t j = 0; j < nr; ++j)
    for (int64_t kw = kw0; kw < kw1; ++kw) {
      const float* src = rows[j] + (iw0 + kw * D) * C + i;
      for (int b = 0; b < NB; ++b) m[b] = nan_max_v(m[b], _mm512_maskz_loadu_ps(lanes[b], src + 16 * b));
    }
  for (int b = 0; b < NB; ++b) _mm512_mask_storeu_ps(y + i + 16 * b, lanes[b], m[b]);
}

// The f32 row walk with the channel blocks interleaved four at a time (row_max_blocks).
__attribute__((target("avx512f")))
void row_max_nhwc_interleaved_avx512(const float* const* rows, int64_t nr, int64_t W, int64_t C, int64_t OW, int64_t K,
                                     int64_t S, int64_t P, int64_t D, float* y) {
  for (int64_t ow = 0; ow < OW; ++ow) {
    const int64_t iw0 = ow * S - P;
    const int64_t kw0 = iw0 >= 0 ? 0 : (-iw0 + D - 1) / D;
    const int64_t kw1 = iw0 > W - 1 ? 0 : std::min<int64_t>(K, (W - 1 - iw0) / D + 1);
    float* yo = y + ow * C;
    int64_t i = 0;
    for (; C - i > 48; i += 64) row_max_blocks<4>(rows, nr, iw0, kw0, kw1, D, C, i, yo);
    if (C - i > 32) row_max_blocks<3>(rows, nr, iw0, kw0, kw1, D, C, i, yo);
    else if (C - i > 16) row_max_blocks<2>(rows, nr, iw0, kw0, kw1, D, C, i, yo);
    else if (C - i > 0) row_max_blocks<1>(rows, nr, iw0, kw0, kw1, D, C, i, yo);
  }
}

// The interleaved f32 row walk's AVX2 build (stop 22): where oneDNN's effective ISA is AVX2
// without AVX-512 (an AVX2 host; ONEDNN_MAX_CPU_ISA=AVX2 emulates one) an nhwc f32 pool ran
// oneDNN's jit:avx2 pooling and then the NaN scan of its whole input (squeezenet1_1's three
// 3x3/2 pools 0.34 ms at 1 thread under the cap, OpenVINO's jit_avx2_f32 0.15). 8 channels a
// vector, up to four blocks in flight, the channel tail masked; the maximum is nan_max_v's
// (vmaxps(v, m), then v where v is NaN), the taps in the same order: the AVX-512 walk's bytes.
// OPFORGE_CPU_POOL_AVX2=0: oneDNN's pooling as before.
bool pool_avx2_enabled() {
  static const bool enabled = env_switch_on("OPFORGE_CPU_POOL_AVX2");
  return enabled;
}

template <int NB>
__attribute__((target("avx2"), always_inline)) inline void row_max_blocks_avx2(const float* const* rows, int64_t nr,
                                                                               int64_t iw0, int64_t kw0, int64_t kw1,
                                                                               int64_t D, int64_t C, int64_t i, float* y) {
  __m256 m[NB];
  __m256i lanes[NB];
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int b = 0; b < NB; ++b) {
    const int64_t left = C - i - 8 * b;  // >= 1: the caller passes only blocks that hold channels
    lanes[b] = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::min<int64_t>(left, 8))), iota);
    m[b] = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  }
  for (int64_t j = 0; j < nr; ++j)
    for (int64_t kw = kw0; kw < kw1; ++kw) {
      const float* src = rows[j] + (iw0 + kw * D) * C + i;
      for (int b = 0; b < NB; ++b) {
        const __m256 v = _mm256_maskload_ps(src + 8 * b, lanes[b]);
        m[b] = _mm256_blendv_ps(_mm256_max_ps(v, m[b]), v, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
      }
    }
  for (int b = 0; b < NB; ++b) _mm256_maskstore_ps(y + i + 8 * b, lanes[b], m[b]);
}

__attribute__((target("avx2")))
void row_max_nhwc_avx2(const float* const* rows, int64_t nr, int64_t W, int64_t C, int64_t OW, int64_t K, int64_t S,
                       int64_t P, int64_t D, float* y) {
  for (int64_t ow = 0; ow < OW; ++ow) {
    const int64_t iw0 = ow * S - P;
    const int64_t kw0 = iw0 >= 0 ? 0 : (-iw0 + D - 1) / D;
    const int64_t kw1 = iw0 > W - 1 ? 0 : std::min<int64_t>(K, (W - 1 - iw0) / D + 1);
    float* yo = y + ow * C;
    int64_t i = 0;
    for (; C - i > 24; i += 32) row_max_blocks_avx2<4>(rows, nr, iw0, kw0, kw1, D, C, i, yo);
    if (C - i > 16) row_max_blocks_avx2<3>(rows, nr, iw0, kw0, kw1, D, C, i, yo);
    else if (C - i > 8) row_max_blocks_avx2<2>(rows, nr, iw0, kw0, kw1, D, C, i, yo);
    else if (C - i > 0) row_max_blocks_avx2<1>(rows, nr, iw0, kw0, kw1, D, C, i, yo);
  }
}

// OPFORGE_CPU_POOL_INTERLEAVE=0: the f32 row walk keeps one channel block at a time as before
// (row_max_nhwc_avx512), for same-build A/B measurements (read once a process).
bool pool_interleave_enabled() {
  static const bool enabled = env_switch_on("OPFORGE_CPU_POOL_INTERLEAVE");
  return enabled;
}

// The maximum of the column walk below: nan_max_v (one mask compare) by default, nan_max (two
// compares and an OR) with OPFORGE_CPU_POOL_INTERLEAVE=0; the same result lane by lane.
template <bool kOneCompare>
__attribute__((target("avx512f"), always_inline)) inline __m512 pick_max(__m512 m, __m512 v) {
  return kOneCompare ? nan_max_v(m, v) : nan_max(m, v);
}

// Source column w's maximum over the nr window rows (16 channels from i); -inf outside the row.
template <bool kOneCompare>
__attribute__((target("avx512f"), always_inline)) inline __m512 column_max(const float* const* rows, int64_t nr, int64_t w,
                                                                            int64_t W, int64_t C, int64_t i, __mmask16 lanes) {
  if (w < 0 || w >= W) return _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 m = _mm512_maskz_loadu_ps(lanes, rows[0] + w * C + i);
  for (int64_t j = 1; j < nr; ++j) m = pick_max<kOneCompare>(m, _mm512_maskz_loadu_ps(lanes, rows[j] + w * C + i));
  return m;
}

// One output row of a window 3 columns wide at column stride 1, dilation 1 (Inception's and
// GoogLeNet's 3x3/1 branch pools), walked by columns: each source column's maximum over the
// window rows is taken once and each window is the maximum of three such columns held in
// registers, per 16-channel block along 16-pixel tiles of the row (a tile keeps its piece of the
// rows in L1). 2 + 2 maxima an output instead of the row walk's 9 taps. Channel blocks inside a
// pixel tile because the block-outer walk along whole rows thrashed L1. The maximum is the row
// walk's and a NaN still wins; only a window holding both +0 and -0 may keep the other zero (a
// different order). C++ micro-benchmark, 1 thread, under chrt, columns / rows: 192 ch 28x28
// 0.79, 480 ch 14x14 0.74, 832 ch 7x7 0.73, 40 ch 17x17 0.59. At column stride 2 the same walk
// was 1.2-1.5x slower than the row walk, so it takes stride 1 only.
template <bool kOneCompare>
__attribute__((target("avx512f")))
void row_max3_s1_nhwc_avx512(const float* const* rows, int64_t nr, int64_t W, int64_t C, int64_t OW, int64_t P, float* y) {
  constexpr int64_t kTile = 16;
  for (int64_t t0 = 0; t0 < OW; t0 += kTile) {
    const int64_t t1 = std::min(OW, t0 + kTile);
    for (int64_t i = 0; i < C; i += 16) {
      const __mmask16 lanes = C - i >= 16 ? static_cast<__mmask16>(0xffff)
                                          : static_cast<__mmask16>((1u << (C - i)) - 1u);
      __m512 a = column_max<kOneCompare>(rows, nr, t0 - P, W, C, i, lanes);
      __m512 b = column_max<kOneCompare>(rows, nr, t0 - P + 1, W, C, i, lanes);
      for (int64_t ow = t0; ow < t1; ++ow) {
        const __m512 c = column_max<kOneCompare>(rows, nr, ow - P + 2, W, C, i, lanes);
        _mm512_mask_storeu_ps(y + ow * C + i, lanes, pick_max<kOneCompare>(pick_max<kOneCompare>(a, b), c));
        a = b;
        b = c;
      }
    }
  }
}

// OPFORGE_CPU_POOL_COLS=0: the f32 3-wide stride-1 windows take the row walk above again, for
// same-build A/B measurements (read once a process).
bool pool_cols_enabled() {
  static const bool enabled = env_switch_on("OPFORGE_CPU_POOL_COLS");
  return enabled;
}

// OPFORGE_CPU_POOL_ROWS=0: the bf16 and f32 pooling walk pixels (for_each_nhwc_window) as
// before, for same-build A/B measurements.
bool pool_rows_enabled() {
  static const bool enabled = env_switch_on("OPFORGE_CPU_POOL_ROWS");
  return enabled;
}

// An f32 (or bf16) nhwc input (brgconv's layout), 2D, values only: the window maximum in one pass over
// the input with NaN propagated in the same pass. oneDNN's pooling skips a NaN, so that path
// scans the whole input for NaN after pooling (squeezenet1_1's three pools 0.47 ms, OpenVINO's
// 0.26, which does not propagate NaN). Output nhwc, of the input's type (bf16 as uint16_t).
template <class T> class ChannelsLastMaxPool : public Kernel {
 public:
  // avx2: the f32 row walk's AVX2 build (row_max_nhwc_avx2) on an AVX2 host, every window shape
  explicit ChannelsLastMaxPool(const NodeDesc& n, bool avx2 = false)
      : xs_(n.in(0).shape), ys_(n.outputs[0].shape), avx2_(avx2 && sizeof(T) == 4) {
    w_.kernel = n.attrs.ints("kernel");
    w_.strides = n.attrs.ints("strides", std::vector<int64_t>(2, 1));
    w_.dilations = n.attrs.ints("dilations", std::vector<int64_t>(2, 1));
    std::vector<int64_t> pe;
    window_pads(n, xs_, ys_, w_.kernel, w_.strides, w_.dilations, w_.pads_begin, pe);
    cols_ = !avx2_ && sizeof(T) == 4 && w_.kernel[1] == 3 && w_.strides[1] == 1 && w_.dilations[1] == 1 &&
            pool_rows_enabled() && pool_cols_enabled();
  }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    pool(ctx, static_cast<const T*>(in[0].data), static_cast<T*>(out[0].data));
  }
  std::string impl_name() const override {
    if (avx2_) return "max_nhwc_rows:avx2";
    if (sizeof(T) == 2) return pool_rows_enabled() ? "max_nhwc_bf16_rows:avx512" : "max_nhwc_bf16:avx512";
    if (cols_) return "max_nhwc_cols:avx512";
    return pool_rows_enabled() ? "max_nhwc_rows:avx512" : "max_nhwc:avx512";
  }

 protected:
  void pool(RunContext& ctx, const T* x, T* y) const {
    const int64_t C = xs_[1];
    if (pool_rows_enabled() || avx2_) {
      pool_rows(ctx, x, y);
      return;
    }
    for_each_nhwc_window(ctx.num_threads, x, xs_, ys_, w_,
                         [&](const T** taps, int64_t k, int64_t o) { window_max_nhwc_avx512(taps, k, y + o * C, C); });
  }

  // By output rows (row_max_nhwc_avx512), rows split between the threads as the pixel walk
  // splits pixels (the same work a thread at least)
  void pool_rows(RunContext& ctx, const T* x, T* y) const {
    const int64_t N = xs_[0], C = xs_[1], H = xs_[2], W = xs_[3], OH = ys_[2], OW = ys_[3];
    const int64_t KH = w_.kernel[0], KW = w_.kernel[1];
    const int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(1, C * KH * KW * OW));
    parallel_range(N * OH, ctx.num_threads, [&](int64_t b, int64_t e) {
      std::vector<const T*> rows(static_cast<size_t>(std::max<int64_t>(1, KH)));
      for (int64_t r = b; r < e; ++r) {
        const int64_t nn = r / OH, oh = r % OH;
        int64_t nr = 0;
        for (int64_t kh = 0; kh < KH; ++kh) {
          const int64_t ih = oh * w_.strides[0] - w_.pads_begin[0] + kh * w_.dilations[0];
          if (ih >= 0 && ih < H) rows[nr++] = x + (nn * H + ih) * W * C;
        }
        if constexpr (sizeof(T) == 4) {
          if (avx2_) {
            row_max_nhwc_avx2(rows.data(), nr, W, C, OW, KW, w_.strides[1], w_.pads_begin[1], w_.dilations[1],
                              y + r * OW * C);
            continue;
          }
          if (cols_) {
            if (pool_interleave_enabled())
              row_max3_s1_nhwc_avx512<true>(rows.data(), nr, W, C, OW, w_.pads_begin[1], y + r * OW * C);
            else
              row_max3_s1_nhwc_avx512<false>(rows.data(), nr, W, C, OW, w_.pads_begin[1], y + r * OW * C);
            continue;
          }
          if (pool_interleave_enabled()) {
            row_max_nhwc_interleaved_avx512(rows.data(), nr, W, C, OW, KW, w_.strides[1], w_.pads_begin[1],
                                            w_.dilations[1], y + r * OW * C);
            continue;
          }
        }
        row_max_nhwc_avx512(rows.data(), nr, W, C, OW, KW, w_.strides[1], w_.pads_begin[1], w_.dilations[1],
                            y + r * OW * C);
      }
    }, grain);
  }

  Shape xs_, ys_;
  Window2d w_;
  bool avx2_ = false;  // row_max_nhwc_avx2 (an AVX2 host)
  bool cols_ = false;  // f32, 3 wide, column stride 1, dilation 1: row_max3_s1_nhwc_avx512
};

// A plain nchw f32 source with dilated windows: oneDNN 3.2 pools dilated windows only with its
// reference implementation ("ref:any": a 3x3 dilation-2 pool of 64x112x112 took 164 ms at one
// thread, ONNX Runtime 0.6 ms; found by the compile-time reference check, primitive_log.hpp), so
// the source is reordered to nhwc in scratch and pooled by the channels-last loop above.
class NchwDilatedMaxPool : public ChannelsLastMaxPool<float> {
 public:
  explicit NchwDilatedMaxPool(const NodeDesc& n) : ChannelsLastMaxPool<float>(n) {
    plain_ = plain_md(DType::f32, n.in(0).shape);
    nhwc_ = dnnl::memory::desc(to_dims(n.in(0).shape), dnnl::memory::data_type::f32, dnnl::memory::format_tag::acdb);
    dnnl::reorder::primitive_desc pd(cpu_engine(), plain_, cpu_engine(), nhwc_);
    reorder_ = dnnl::reorder(pd);
    note_primitive(pd);
  }
  size_t scratch_bytes() const override { return nhwc_.get_size() + 64; }
  std::unique_ptr<Bound> bind(const TensorView* in, size_t, const TensorView*, size_t, void* scratch) override {
    auto b = std::make_unique<ReorderBound>();
    b->to = scratch;
    b->args = {{DNNL_ARG_FROM, dnnl::memory(plain_, cpu_engine(), in[0].data)},
               {DNNL_ARG_TO, dnnl::memory(nhwc_, cpu_engine(), scratch)}};
    return b;
  }
  void run(RunContext& ctx, const TensorView*, TensorView* out, Bound* bound) override {
    auto* b = static_cast<ReorderBound*>(bound);
    reorder_.execute(*ctx.stream, b->args);
    ctx.stream->wait();
    pool(ctx, static_cast<const float*>(b->to), static_cast<float*>(out[0].data));
  }
  std::string impl_name() const override { return "reorder+max_nhwc:avx512"; }

 private:
  struct ReorderBound : Bound {
    std::unordered_map<int, dnnl::memory> args;
    const void* to = nullptr;
  };
  dnnl::memory::desc plain_, nhwc_;
  dnnl::reorder reorder_;
};

// Hosts for the kernel above (oneDNN's effective ISA too: ONEDNN_MAX_CPU_ISA=AVX2 emulates an
// AVX2 host, which keeps oneDNN's pooling and the NaN scan).
bool avx512_host() { return host_has_avx512(); }

dnnl::memory::desc nhwc(const Shape& s, dnnl::memory::data_type t) {
  return dnnl::memory::desc(to_dims(s), t, dnnl::memory::format_tag::acdb);
}
}  // namespace

std::unique_ptr<Kernel> make_max_pool(NodeDesc& n) {
  const DType t = n.in(0).dtype;
  if (t != DType::f32) {
    std::unique_ptr<Kernel> k;
    switch (t) {
      case DType::u8: k = std::make_unique<MaxPoolIndices<uint8_t>>(n); break;
      case DType::i8: k = std::make_unique<MaxPoolIndices<int8_t>>(n); break;
      case DType::i32: k = std::make_unique<MaxPoolIndices<int32_t>>(n); break;
      case DType::i64: k = std::make_unique<MaxPoolIndices<int64_t>>(n); break;
      default: throw CompileFailure(std::string("MaxPool of ") + dtype_name(t) + " is not supported");
    }
    return k;
  }
  if (n.attrs.b("need_indices", true) && n.outputs.size() > 1) return std::make_unique<MaxPoolIndices<float>>(n);
  const TensorInfo& x = n.in(0);
  using dt = dnnl::memory::data_type;
  if (x.blocked && x.shape.size() == 4 && n.attrs.ints("kernel").size() == 2 && avx512_host()) {
    if (x.md == nhwc(x.shape, dt::f32)) {
      n.outputs[0].blocked = true;
      n.outputs[0].md = nhwc(n.outputs[0].shape, dt::f32);
      return std::make_unique<ChannelsLastMaxPool<float>>(n);
    }
    // (bf16: a bf16 program's convolution output, pooled into bf16 for the bf16 readers that
    // emit.py _bf16_storable found; AVX512BW for the 16-bit loads, every AVX-512 host but KNL)
    if (x.md == nhwc(x.shape, dt::bf16)) {
      n.outputs[0].blocked = true;
      n.outputs[0].md = nhwc(n.outputs[0].shape, dt::bf16);
      return std::make_unique<ChannelsLastMaxPool<uint16_t>>(n);
    }
  }
  // an AVX2 host (no AVX-512): the f32 row walk's AVX2 build over nhwc (row_max_nhwc_avx2)
  if (x.blocked && x.shape.size() == 4 && n.attrs.ints("kernel").size() == 2 && !avx512_host() &&
      host_has_avx2_fma() && pool_avx2_enabled() && x.md == nhwc(x.shape, dt::f32)) {
    n.outputs[0].blocked = true;
    n.outputs[0].md = nhwc(n.outputs[0].shape, dt::f32);
    return std::make_unique<ChannelsLastMaxPool<float>>(n, true);
  }
  const auto dil = n.attrs.ints("dilations", {});
  if (!x.blocked && x.shape.size() == 4 && n.attrs.ints("kernel").size() == 2 && avx512_host() &&
      std::any_of(dil.begin(), dil.end(), [](int64_t d) { return d != 1; })) {
    n.outputs[0].blocked = true;
    n.outputs[0].md = nhwc(n.outputs[0].shape, dt::f32);
    return std::make_unique<NchwDilatedMaxPool>(n);
  }
  return make_dnnl_pool(n, true);
}

std::string check_max_pool(const NodeDesc& n) {
  const DType t = n.in(0).dtype;
  if (t == DType::f32 || t == DType::u8 || t == DType::i8 || t == DType::i32 || t == DType::i64) return "";
  return std::string("element type ") + dtype_name(t) + " is not supported (f32, u8, i8, i32, i64)";
}

OPFORGE_KERNEL(MaxPool, make_max_pool, check_max_pool).layout_flexible();

}  // namespace opforge_cpu
