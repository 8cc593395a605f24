// An f32 depthwise convolution of our own (dw_conv_f32.hpp), for the shapes of MobileNet,
// MnasNet, EfficientNet (3x3, 5x5, strides 1 and 2) and ConvNeXt (7x7), on AVX-512 and AVX2.
//
// Why: oneDNN 3.2 runs an f32 depthwise convolution as brdgmm_dw (nhwc) on both ISAs; ONNX
// Runtime's MLAS kernel was faster on the EfficientNet and MnasNet models (efficientnet_b0_like
// f32 1.08/1.17 of ORT at 1/2 threads, stop 16). The tile is the bf16 kernel's (dw_conv_bf16.cpp)
// with f32 loads, written once over the vector type (dw_conv_f32_tile.inc) for AVX-512 (16
// channels a vector, 32 registers) and AVX2+FMA (8 channels, 16 registers), so an AVX2 host
// (the Zen3) gets it too. Per output row every channel block is done before the next
// row, so the kh source rows it reads stay in L2 across the blocks. Each output's sum is the
// bias, then the taps' FMAs in kernel-row, kernel-column order, whichever path or thread runs it.
// 3x3 kernels at the same stride both ways have a tile of their own (stop 21,
// dw_conv_f32_tile3.inc: two output rows at once, each source vector loaded once for both).
#include "core/dw_conv_f32.hpp"

#include <immintrin.h>

#include <algorithm>

#include "core/host_isa.hpp"

namespace opforge_cpu {

namespace {

// What a tile needs of the convolution and of its output row.
struct F32Row {
  const float* src;  // image n
  float* dst;        // output row's first pixel
  const float* w;    // packed weights [block][kh][kw][L]
  const float* b;    // bias [block][L]
  int64_t c, iw, pad_left, taps;
  int64_t iy0, ky0, ky1;  // the window's first source row (may be < 0), kernel rows inside the image
  int64_t full_blocks;    // blocks of L channels without the partial one
  const PostOp* post;
  int npost;
  int tail;        // channels in the partial last block (0: none)
  int64_t ih, ow;  // the 3x3 tile's (dw_conv_f32_tile3.inc): source height, output row width
};

using RowFn = void (*)(const F32Row&, int64_t, int64_t, int64_t);
// The 3x3 tile's row functions: kRows3 output rows at once, and one output row.
struct Rows3Fns {
  RowFn multi, one;
  int64_t rows;  // output rows `multi` computes
};

#pragma GCC push_options
#pragma GCC target("avx512f,fma")
namespace avx512 {

#include "core/f32_avx512_ops.inc"

// 2 x 8 accumulators, 2 x kw weights and 2 source vectors of 32 registers: two channel blocks a
// tile read 128 contiguous bytes a source pixel (one thread, 20 MobileNet/EfficientNet shapes:
// 0.91 of oneDNN's brdgmm_dw summed, one block a tile 0.98; four blocks of 4 pixels 1.15)
constexpr int kNB = 2, kR = 8;
// The 3x3 tile (dw_conv_f32_tile3.inc), [stride]: 2 rows x 8 pixels x 1 block = 16 accumulators,
// the block's 9 weights and a source vector in registers. Zen 5 VM, one thread, 12
// MobileNetV2/MnasNet 3x3 shapes with ReLU6 against brdgmm_dw: summed 0.73-0.76 (the general
// tile 0.91-0.99); per shape at stride 1 2 x 8 0.57-0.79, 2 x 12 (weights from memory) 0.57-0.75,
// 3 x 6 0.56-0.76, 4 x 4 0.55-0.83 (level); at stride 2 2 x 8 0.80-1.05, 2 x 12 0.94-1.08,
// 3 x 6 0.91-1.06, 4 x 4 0.95-1.08, 2 x 4 x 2 blocks 1.06-1.56, 1 x 8 x 2 blocks 1.01-1.81
constexpr int kR3[3] = {0, 8, 8}, kNB3[3] = {0, 1, 1}, kRows3[3] = {0, 2, 2};

#include "core/dw_conv_f32_act.inc"
#include "core/dw_conv_f32_tile.inc"
#include "core/dw_conv_f32_tile3.inc"

}  // namespace avx512
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2 {

#include "core/f32_avx2_ops.inc"

// 8 accumulators, kw weights and a source vector of 16 registers (two blocks a tile spill: 1.01
// of oneDNN's brdgmm_dw:avx2 summed against 0.99)
constexpr int kNB = 1, kR = 8;
// The 3x3 tile: 2 rows x 6 pixels x 1 block = 12 accumulators and a source vector, the weights
// mostly from memory (ONEDNN_MAX_CPU_ISA=AVX2 on the Zen 5 VM, sum of the 12 3x3 shapes with
// ReLU6 against brdgmm_dw:avx2: 0.87; 2 x 4 0.95, 2 x 5 0.92, 3 x 4 0.92, 4 x 3 1.00; stride 2
// behind brdgmm_dw:avx2 at every size, 1.08-1.25 per shape)
constexpr int kR3[3] = {0, 6, 6}, kNB3[3] = {0, 1, 1}, kRows3[3] = {0, 2, 2};

#include "core/dw_conv_f32_act.inc"
#include "core/dw_conv_f32_tile.inc"
#include "core/dw_conv_f32_tile3.inc"

}  // namespace avx2
#pragma GCC pop_options

RowFn tile_fn(DwConvF32::Isa isa, int64_t kw, int64_t sw) {
  return isa == DwConvF32::Isa::avx512 ? avx512::tile_fn(kw, sw) : avx2::tile_fn(kw, sw);
}

Rows3Fns tile3_fns(DwConvF32::Isa isa, int64_t s) {
  return isa == DwConvF32::Isa::avx512 ? avx512::tile3_fns(s) : avx2::tile3_fns(s);
}

}  // namespace

bool DwConvF32::host_supported(Isa isa) {
  return isa == Isa::avx512 ? host_has_avx512() : host_has_avx2_fma();
}

bool DwConvF32::shape_supported(int64_t kw, int64_t sw) {
  return tile_fn(Isa::avx2, kw, sw) != nullptr;  // (both builds have the same tiles)
}

bool DwConvF32::tile3_supported(const DwGeometry& g) {
  return g.kh == 3 && g.kw == 3 && g.sh == g.sw && (g.sw == 1 || g.sw == 2);
}

DwConvF32::DwConvF32(const DwGeometry& g, const float* weights, const float* bias, std::vector<PostOp> post, Isa isa,
                     bool tile3)
    : g_(g), isa_(isa), lanes_(isa == Isa::avx512 ? 16 : 8), tile3_(tile3 && tile3_supported(g)), post_(std::move(post)) {
  blocks_ = (g.channels + lanes_ - 1) / lanes_;
  const int64_t taps = g.kh * g.kw;
  weights_.assign(static_cast<size_t>(blocks_ * taps * lanes_), 0.f);
  bias_.assign(static_cast<size_t>(blocks_ * lanes_), 0.f);
  for (int64_t ch = 0; ch < g.channels; ++ch) {
    const int64_t blk = ch / lanes_, lane = ch % lanes_;
    for (int64_t t = 0; t < taps; ++t)
      weights_[static_cast<size_t>((blk * taps + t) * lanes_ + lane)] = weights[ch * taps + t];
    if (bias) bias_[static_cast<size_t>(ch)] = bias[ch];
  }
}

void DwConvF32::rows(const float* src, float* dst, int64_t n, int64_t oy0, int64_t oy1) const {
  const RowFn fn = tile_fn(isa_, g_.kw, g_.sw);
  const DwGeometry& g = g_;
  // output columns whose windows lie inside the width: x0 = ox * sw - pad_left >= 0 and
  // x0 + kw <= iw
  const int64_t in_lo = std::min(g.ow, (g.pad_left + g.sw - 1) / g.sw);
  const int64_t last = g.iw - g.kw + g.pad_left;  // the largest inside ox * sw
  const int64_t in_hi = last < 0 ? in_lo : std::max(in_lo, std::min(g.ow, last / g.sw + 1));
  F32Row a{};
  a.src = src + n * g.ih * g.iw * g.channels;
  a.w = weights_.data();
  a.b = bias_.data();
  a.c = g.channels;
  a.iw = g.iw;
  a.pad_left = g.pad_left;
  a.taps = g.kh * g.kw;
  a.full_blocks = g.channels / lanes_;
  a.post = post_.data();
  a.npost = static_cast<int>(post_.size());
  a.tail = static_cast<int>(g.channels % lanes_);
  a.ih = g.ih;
  a.ow = g.ow;
  if (tile3_) {
    // kRows3 output rows a call while they last in the chunk, then single rows (the row
    // functions skip source rows outside the image themselves)
    const Rows3Fns fns = tile3_fns(isa_, g.sw);
    const int64_t rows_at_once = fns.rows;
    for (int64_t oy = oy0; oy < oy1;) {
      const bool multi = oy + rows_at_once <= oy1;
      a.iy0 = oy * g.sh - g.pad_top;
      a.dst = dst + ((n * g.oh + oy) * g.ow) * g.channels;
      (multi ? fns.multi : fns.one)(a, g.ow, in_lo, in_hi);
      oy += multi ? rows_at_once : 1;
    }
    return;
  }
  for (int64_t oy = oy0; oy < oy1; ++oy) {
    a.iy0 = oy * g.sh - g.pad_top;
    a.ky0 = std::max<int64_t>(0, -a.iy0);
    a.ky1 = std::min(g.kh, g.ih - a.iy0);
    a.dst = dst + ((n * g.oh + oy) * g.ow) * g.channels;
    fn(a, g.ow, in_lo, in_hi);
  }
}

void DwConvF32::run(const void* src, void* dst, int threads) const {
  const auto* s = static_cast<const float*>(src);
  auto* d = static_cast<float*>(dst);
  run_dw_rows(g_, threads, [&](int64_t n, int64_t oy0, int64_t oy1) { rows(s, d, n, oy0, oy1); });
}

}  // namespace opforge_cpu
