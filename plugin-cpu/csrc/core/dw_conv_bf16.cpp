// A bf16 depthwise convolution of our own (dw_conv_bf16.hpp), for the shapes of MobileNet,
// MnasNet, EfficientNet (3x3, 5x5, strides 1 and 2) and ConvNeXt (7x7).
//
// Why: oneDNN 3.2 runs a bf16 depthwise convolution as brdgmm_dw, slower per thread than the
// brgconv dw kernel of OpenVINO's fork (mobilenet_v2's depthwise steps at 1 thread 1.89 vs 1.74
// ms, stop 15); row chunks of oneDNN's kernel did not close it (conv_row_split.cpp).
//
// How: a tile is R neighbouring output pixels of one output row x 16 channels (one zmm of f32
// accumulators a pixel, started at the bias). For each kernel row inside the image, each source
// pixel the tile reads is loaded once (16 bf16 channels widened to f32 by a shift) and multiplied
// into every accumulator whose window holds it, with that tap's weights (f32, packed
// [block][kh][kw][16] at compile time). Source rows above or below the image are skipped by the
// kernel-row range; pixels whose window crosses the left or right edge go through a one-pixel
// path that clips the tap range, so no padded copy is made. Channels past the last multiple of
// 16 are masked loads and stores over zero weights. Per output row every channel block is done
// before the next row, so the kh source rows it reads stay in L1/L2 across the blocks (a 64-byte
// line holds two blocks of bf16 channels). The sum of each output is the same sequence of f32
// FMAs whichever path or thread computes it.
#include "core/dw_conv_bf16.hpp"

#include <immintrin.h>

#include <algorithm>
#include <stdexcept>

#include "core/bf16_bits.hpp"
#include "core/chunk_pool.hpp"
#include "core/host_isa.hpp"

namespace opforge_cpu {

namespace {

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512bf16,fma")

using V = __m512;

// 16 bf16 channels as f32 (a bf16 is the top half of an f32): zero-extend and shift
template <bool TAIL> inline V load_bf16(const uint16_t* p, __mmask16 m) {
  const __m256i h = TAIL ? _mm256_maskz_loadu_epi16(m, p) : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

// e^x (exp512), NaN-keeping, e^89 -> inf: shared with the stem kernel's SiLU.
#include "core/fast_exp_avx512.inc"
inline V vexp(V x) { return exp512(x); }

// oneDNN's eltwise post-ops with its parameters; NaN stays NaN in each (as ONNX Runtime's).
template <int R> inline void apply_post(V* acc, const PostOp* ops, int n) {
  for (int o = 0; o < n; ++o) {
    const V alpha = _mm512_set1_ps(ops[o].alpha), beta = _mm512_set1_ps(ops[o].beta);
    const V zero = _mm512_setzero_ps(), one = _mm512_set1_ps(1.f);
    switch (ops[o].kind) {
      case PostOp::relu:
        for (int r = 0; r < R; ++r)
          acc[r] = ops[o].alpha == 0.f ? _mm512_max_ps(zero, acc[r])
                                       : _mm512_mask_blend_ps(_mm512_cmp_ps_mask(acc[r], zero, _CMP_GT_OQ),
                                                              _mm512_mul_ps(acc[r], alpha), acc[r]);
        break;
      case PostOp::clip:
        for (int r = 0; r < R; ++r) acc[r] = _mm512_min_ps(beta, _mm512_max_ps(alpha, acc[r]));
        break;
      case PostOp::linear:
        for (int r = 0; r < R; ++r) acc[r] = _mm512_fmadd_ps(acc[r], alpha, beta);
        break;
      case PostOp::swish:  // x * sigmoid(alpha x)
        for (int r = 0; r < R; ++r)
          acc[r] = _mm512_div_ps(acc[r], _mm512_add_ps(one, vexp(_mm512_mul_ps(acc[r], _mm512_sub_ps(zero, alpha)))));
        break;
      case PostOp::hardswish:  // x * clip(alpha x + beta, 0, 1)
        for (int r = 0; r < R; ++r)
          acc[r] = _mm512_mul_ps(acc[r], _mm512_min_ps(one, _mm512_max_ps(zero, _mm512_fmadd_ps(acc[r], alpha, beta))));
        break;
    }
  }
}

template <bool TAIL> inline void store(void* dst, int64_t at, V v, bool bf16, __mmask16 m) {
  if (bf16) {
    const __m256i h = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v));  // round to nearest even
    uint16_t* p = static_cast<uint16_t*>(dst) + at;
    if (TAIL) _mm256_mask_storeu_epi16(p, m, h);
    else _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), h);
  } else {
    float* p = static_cast<float*>(dst) + at;
    if (TAIL) _mm512_mask_storeu_ps(p, m, v);
    else _mm512_storeu_ps(p, v);
  }
}

// What a tile needs of the convolution and of its output row and channel block.
struct RowArgs {
  const uint16_t* src;  // image n, channel block's first channel
  void* dst;            // output row's first pixel, channel block's first channel (elements)
  int64_t dst_at;       // element offset of dst in the destination
  const float* w;       // the block's packed weights [kh][kw][16]
  const float* b;       // the block's bias [16]
  int64_t c, iw, kw, sw, pad_left;
  int64_t iy0, ky0, ky1;  // the window's first source row (may be < 0), kernel rows inside the image
  const PostOp* post;
  int npost;
  bool bf16;
  __mmask16 mask;
};

// R output pixels from ox; GUARD: some windows cross the left or right edge, whose source
// columns count as zeros (acc + 0 * w leaves acc as it is, so the sum is the one of the taps
// inside).
template <int KW, int S, int R, bool TAIL, bool GUARD> void tile(const RowArgs& a, int64_t ox) {
  V acc[R];
  const V bias = _mm512_loadu_ps(a.b);
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) acc[r] = bias;
  const int64_t c = a.c;
  for (int64_t ky = a.ky0; ky < a.ky1; ++ky) {
    const uint16_t* row = a.src + ((a.iy0 + ky) * a.iw + ox * S - a.pad_left) * c;
    const float* wk = a.w + ky * KW * 16;
    V wv[KW];
#pragma GCC unroll 8
    for (int k = 0; k < KW; ++k) wv[k] = _mm512_loadu_ps(wk + k * 16);
#pragma GCC unroll 32
    for (int j = 0; j < (R - 1) * S + KW; ++j) {
      const int64_t col = ox * S - a.pad_left + j;
      const V x = !GUARD || (col >= 0 && col < a.iw) ? load_bf16<TAIL>(row + j * c, a.mask) : _mm512_setzero_ps();
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        const int k = j - r * S;
        if (k >= 0 && k < KW) acc[r] = _mm512_fmadd_ps(x, wv[k], acc[r]);
      }
    }
  }
  apply_post<R>(acc, a.post, a.npost);
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) store<TAIL>(a.dst, a.dst_at + (ox + r) * c, acc[r], a.bf16, a.mask);
}

constexpr int kTile = 8;  // output pixels a tile: 8 accumulators + kw weights + a source vector

// Output pixels [x0, x1): tiles of 8, then one of the 1-7 left.
template <int KW, int S, bool TAIL, bool GUARD> void span(const RowArgs& a, int64_t x0, int64_t x1) {
  int64_t ox = x0;
  for (; ox + kTile <= x1; ox += kTile) tile<KW, S, kTile, TAIL, GUARD>(a, ox);
  switch (x1 - ox) {
    case 7: tile<KW, S, 7, TAIL, GUARD>(a, ox); break;
    case 6: tile<KW, S, 6, TAIL, GUARD>(a, ox); break;
    case 5: tile<KW, S, 5, TAIL, GUARD>(a, ox); break;
    case 4: tile<KW, S, 4, TAIL, GUARD>(a, ox); break;
    case 3: tile<KW, S, 3, TAIL, GUARD>(a, ox); break;
    case 2: tile<KW, S, 2, TAIL, GUARD>(a, ox); break;
    case 1: tile<KW, S, 1, TAIL, GUARD>(a, ox); break;
    default: break;
  }
}

// One output row of one channel block: [in_lo, in_hi) are the pixels whose windows lie inside
// the width. A narrow row (<= 16 pixels: 7x7 and 14x14 maps) goes in guarded tiles whole, else
// the edges are guarded tiles of their own.
template <int KW, int S, bool TAIL> void row_block(const RowArgs& a, int64_t ow, int64_t in_lo, int64_t in_hi) {
  if (ow <= 2 * kTile) {
    span<KW, S, TAIL, true>(a, 0, ow);
    return;
  }
  span<KW, S, TAIL, true>(a, 0, in_lo);
  span<KW, S, TAIL, false>(a, in_lo, in_hi);
  span<KW, S, TAIL, true>(a, in_hi, ow);
}

// 32 channels at once (a "pair" of 16-channel blocks): one 64-byte load of 32 bf16 gives the
// even channels as f32 by a shift and the odd ones by a mask (a bf16 is the top half of an
// f32), instead of two widening loads (a shuffle and a shift each). The pair's weights and bias
// are packed even lanes then odd lanes, so each output's sum is the same FMA sequence as in the
// 16-channel tile (bit-identical); the store packs both halves to bf16 and interleaves them back
// (one permute), or interleaves the f32 halves. Single-convolution timing, 3x3 MobileNetV2 shapes,
// one thread: 0.63-0.90 of the 16-channel tile (docs/kernel-library.md).
template <int KW, int S, int R, bool GUARD> void tile_pair(const RowArgs& a, int64_t ox) {
  V ae[R], ao[R];
  const V be = _mm512_loadu_ps(a.b), bo = _mm512_loadu_ps(a.b + 16);
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    ae[r] = be;
    ao[r] = bo;
  }
  const int64_t c = a.c;
  const __m512i top = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
  for (int64_t ky = a.ky0; ky < a.ky1; ++ky) {
    const uint16_t* row = a.src + ((a.iy0 + ky) * a.iw + ox * S - a.pad_left) * c;
    const float* wk = a.w + ky * KW * 32;
    V we[KW], wo[KW];
#pragma GCC unroll 8
    for (int k = 0; k < KW; ++k) {
      we[k] = _mm512_loadu_ps(wk + k * 32);
      wo[k] = _mm512_loadu_ps(wk + k * 32 + 16);
    }
#pragma GCC unroll 32
    for (int j = 0; j < (R - 1) * S + KW; ++j) {
      const int64_t col = ox * S - a.pad_left + j;
      const __m512i v = !GUARD || (col >= 0 && col < a.iw) ? _mm512_loadu_si512(row + j * c) : _mm512_setzero_si512();
      const V xe = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)), xo = _mm512_castsi512_ps(_mm512_and_si512(v, top));
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        const int k = j - r * S;
        if (k >= 0 && k < KW) {
          ae[r] = _mm512_fmadd_ps(xe, we[k], ae[r]);
          ao[r] = _mm512_fmadd_ps(xo, wo[k], ao[r]);
        }
      }
    }
  }
  apply_post<R>(ae, a.post, a.npost);
  apply_post<R>(ao, a.post, a.npost);
  if (a.bf16) {
    // cvtne2ps: bf16 of ae in lanes 0-15, of ao in 16-31; lane 2i <- i, 2i+1 <- 16+i
    const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21,
                                         5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    uint16_t* d = static_cast<uint16_t*>(a.dst) + a.dst_at;
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
      _mm512_storeu_si512(d + (ox + r) * c,
                          _mm512_permutexvar_epi16(idx, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(ao[r], ae[r]))));
  } else {
    const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const __m512i hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
    float* d = static_cast<float*>(a.dst) + a.dst_at;
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      _mm512_storeu_ps(d + (ox + r) * c, _mm512_permutex2var_ps(ae[r], lo, ao[r]));
      _mm512_storeu_ps(d + (ox + r) * c + 16, _mm512_permutex2var_ps(ae[r], hi, ao[r]));
    }
  }
}

template <int KW, int S, bool GUARD> void span_pair(const RowArgs& a, int64_t x0, int64_t x1) {
  int64_t ox = x0;
  for (; ox + kTile <= x1; ox += kTile) tile_pair<KW, S, kTile, GUARD>(a, ox);
  switch (x1 - ox) {
    case 7: tile_pair<KW, S, 7, GUARD>(a, ox); break;
    case 6: tile_pair<KW, S, 6, GUARD>(a, ox); break;
    case 5: tile_pair<KW, S, 5, GUARD>(a, ox); break;
    case 4: tile_pair<KW, S, 4, GUARD>(a, ox); break;
    case 3: tile_pair<KW, S, 3, GUARD>(a, ox); break;
    case 2: tile_pair<KW, S, 2, GUARD>(a, ox); break;
    case 1: tile_pair<KW, S, 1, GUARD>(a, ox); break;
    default: break;
  }
}

template <int KW, int S> void row_pair(const RowArgs& a, int64_t ow, int64_t in_lo, int64_t in_hi) {
  if (ow <= 2 * kTile) {
    span_pair<KW, S, true>(a, 0, ow);
    return;
  }
  span_pair<KW, S, true>(a, 0, in_lo);
  span_pair<KW, S, false>(a, in_lo, in_hi);
  span_pair<KW, S, true>(a, in_hi, ow);
}

using RowBlockFn = void (*)(const RowArgs&, int64_t, int64_t, int64_t);

struct RowFns {
  RowBlockFn pair = nullptr, full = nullptr, tail = nullptr;
};

template <int KW, int S> void pick(RowFns& f) {
  f.pair = &row_pair<KW, S>;
  f.full = &row_block<KW, S, false>;
  f.tail = &row_block<KW, S, true>;
}

// Kernel widths and strides with a tile; false when none (the caller keeps oneDNN).
bool tile_fns(int64_t kw, int64_t sw, RowFns& f) {
  f = RowFns{};
  if (sw == 1) {
    if (kw == 3) pick<3, 1>(f);
    else if (kw == 5) pick<5, 1>(f);
    else if (kw == 7) pick<7, 1>(f);
  } else if (sw == 2) {
    if (kw == 3) pick<3, 2>(f);
    else if (kw == 5) pick<5, 2>(f);
    else if (kw == 7) pick<7, 2>(f);
  }
  return f.full != nullptr;
}

#pragma GCC pop_options

}  // namespace

bool DwConvBf16::host_supported() {
  return host_has_avx512_bf16();
}

bool DwConvBf16::shape_supported(int64_t kw, int64_t sw) {
  RowFns f;
  return tile_fns(kw, sw, f);
}

DwConvBf16::DwConvBf16(const DwGeometry& g, const float* weights, const float* bias, std::vector<PostOp> post,
                       bool dst_bf16)
    : g_(g), blocks_((g.channels + 15) / 16), post_(std::move(post)), dst_bf16_(dst_bf16) {
  const int64_t taps = g.kh * g.kw;
  weights_.assign(static_cast<size_t>(blocks_ * taps * 16), 0.f);
  bias_.assign(static_cast<size_t>(blocks_ * 16), 0.f);
  for (int64_t ch = 0; ch < g.channels; ++ch) {
    const int64_t blk = ch / 16, lane = ch % 16;
    // the weights rounded to bf16, as oneDNN's bf16 primitive packs them (the precision's
    // contract: bf16 source and weights, f32 sums and bias)
    for (int64_t t = 0; t < taps; ++t)
      weights_[static_cast<size_t>((blk * taps + t) * 16 + lane)] = bf16_bits_to_f32(f32_to_bf16_bits(weights[ch * taps + t]));
    if (bias) bias_[static_cast<size_t>(ch)] = bias[ch];
  }
  // the pairs of 32 channels: even channels in lanes 0-15, odd ones in 16-31 (tile_pair)
  pairs_ = g.channels / 32;
  weights_pair_.assign(static_cast<size_t>(pairs_ * taps * 32), 0.f);
  bias_pair_.assign(static_cast<size_t>(pairs_ * 32), 0.f);
  for (int64_t ch = 0; ch < pairs_ * 32; ++ch) {
    const int64_t pr = ch / 32, l = ch % 32, lane = (l % 2) * 16 + l / 2;
    for (int64_t t = 0; t < taps; ++t)
      weights_pair_[static_cast<size_t>((pr * taps + t) * 32 + lane)] =
          weights_[static_cast<size_t>(((ch / 16) * taps + t) * 16 + ch % 16)];
    bias_pair_[static_cast<size_t>(pr * 32 + lane)] = bias_[static_cast<size_t>(ch)];
  }
}

void DwConvBf16::rows(const uint16_t* src, void* dst, int64_t n, int64_t oy0, int64_t oy1) const {
  RowFns fns;
  tile_fns(g_.kw, g_.sw, fns);
  const DwGeometry& g = g_;
  // output columns whose windows lie inside the width: x0 = ox * sw - pad_left >= 0 and
  // x0 + kw <= iw
  const int64_t in_lo = std::min(g.ow, (g.pad_left + g.sw - 1) / g.sw);
  const int64_t last = g.iw - g.kw + g.pad_left;  // the largest inside ox * sw
  const int64_t in_hi = last < 0 ? in_lo : std::max(in_lo, std::min(g.ow, last / g.sw + 1));
  const int64_t taps = g.kh * g.kw;
  const int64_t rem = g.channels % 16;
  RowArgs a{};
  a.c = g.channels;
  a.iw = g.iw;
  a.kw = g.kw;
  a.sw = g.sw;
  a.pad_left = g.pad_left;
  a.post = post_.data();
  a.npost = static_cast<int>(post_.size());
  a.bf16 = dst_bf16_;
  const uint16_t* image = src + n * g.ih * g.iw * g.channels;
  for (int64_t oy = oy0; oy < oy1; ++oy) {
    a.iy0 = oy * g.sh - g.pad_top;
    a.ky0 = std::max<int64_t>(0, -a.iy0);
    a.ky1 = std::min(g.kh, g.ih - a.iy0);
    const int64_t row_at = ((n * g.oh + oy) * g.ow) * g.channels;
    a.mask = 0xffff;
    for (int64_t pr = 0; pr < pairs_; ++pr) {
      a.src = image + pr * 32;
      a.dst = dst;
      a.dst_at = row_at + pr * 32;
      a.w = weights_pair_.data() + pr * taps * 32;
      a.b = bias_pair_.data() + pr * 32;
      fns.pair(a, g.ow, in_lo, in_hi);
    }
    for (int64_t blk = 2 * pairs_; blk < blocks_; ++blk) {  // the last 0-31 channels
      const bool is_tail = rem != 0 && blk == blocks_ - 1;
      a.src = image + blk * 16;
      a.dst = dst;
      a.dst_at = row_at + blk * 16;
      a.w = weights_.data() + blk * taps * 16;
      a.b = bias_.data() + blk * 16;
      a.mask = static_cast<__mmask16>(is_tail ? (1u << rem) - 1u : 0xffffu);
      (is_tail ? fns.tail : fns.full)(a, g.ow, in_lo, in_hi);
    }
  }
}

void DwConvBf16::run(const void* src, void* dst, int threads) const {
  const auto* s = static_cast<const uint16_t*>(src);
  run_dw_rows(g_, threads, [&](int64_t n, int64_t oy0, int64_t oy1) { rows(s, dst, n, oy0, oy1); });
}

}  // namespace opforge_cpu
