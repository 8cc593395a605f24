// An f32 grouped convolution of 4 channels a group, AVX2+FMA (grouped4_conv_f32.hpp).
//
// One vector holds 8 channels of a pixel: two whole groups, one in each 128-bit half. Output lane
// l (group l / 4 of the pair) needs input channel i of its own group, which is lane
// (l & ~3) + i of the same source vector: one in-lane shuffle (vpermilps with the immediate
// i * 0x55) broadcasts it within each half, so an output vector of 8 channels is 4 shuffles and
// 4 FMAs a tap, with the weights packed [block][kh][kw][i][8 lanes]. A tile is up to 8
// neighbouring output pixels of one row x one block (8 accumulators, 4 weight vectors, a source
// vector and its shuffle: 15 of the 16 registers), so 8 FMA chains hide the FMA latency. Per
// tile every block is done before the next tile, so the source pixels the tile reads stay in L1
// (the weights of ResNeXt's 16 blocks are 18 KiB). Tiles whose windows cross the left or right
// edge read a zero vector there (acc + 0 * w leaves acc as it is: the weights are finite, which
// the plan checks); source rows above or below the image are skipped by the kernel-row range.
// Each output is the bias, then the taps' FMAs in kernel-row, kernel-column, input-channel order,
// whichever tile, path or thread computes it.
#include "core/grouped4_conv_f32.hpp"

#include <immintrin.h>

#include <algorithm>

#include "core/host_isa.hpp"

namespace opforge_cpu {

namespace {

struct G4Row {
  const float* src;  // image n
  float* dst;        // output row's first pixel
  const float* w;    // packed weights
  const float* b;    // bias [C]
  int64_t c, blocks, iw, sw, pad_left, kw, taps;
  int64_t iy0, ky0, ky1;  // the window's first source row (may be < 0), kernel rows inside the image
  const PostOp* post;
  int npost;
};

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2 {

#include "core/f32_avx2_ops.inc"
#include "core/dw_conv_f32_act.inc"

// R output pixels from ox, every block; GUARD: some window crosses the left or right edge
template <int R, bool GUARD> inline void tile(const G4Row& a, int64_t ox) {
  const int64_t c = a.c;
  for (int64_t blk = 0; blk < a.blocks; ++blk) {
    V acc[R];
    const V bias = vload(a.b + blk * L);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[r] = bias;
    const float* wb = a.w + blk * a.taps * 4 * L;
    for (int64_t ky = a.ky0; ky < a.ky1; ++ky) {
      const float* row = a.src + ((a.iy0 + ky) * a.iw + ox * a.sw - a.pad_left) * c + blk * L;
      const float* wk = wb + ky * a.kw * 4 * L;
      for (int64_t kx = 0; kx < a.kw; ++kx) {
        const float* wt = wk + kx * 4 * L;
        const V w0 = vload(wt), w1 = vload(wt + L), w2 = vload(wt + 2 * L), w3 = vload(wt + 3 * L);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          const int64_t off = r * a.sw + kx;  // source pixel, from the tile's first window's left
          V x;
          if (GUARD) {
            const int64_t col = ox * a.sw - a.pad_left + off;
            x = col >= 0 && col < a.iw ? vload(row + off * c) : vzero();
          } else {
            x = vload(row + off * c);
          }
          acc[r] = vfma(_mm256_permute_ps(x, 0x00), w0, acc[r]);
          acc[r] = vfma(_mm256_permute_ps(x, 0x55), w1, acc[r]);
          acc[r] = vfma(_mm256_permute_ps(x, 0xAA), w2, acc[r]);
          acc[r] = vfma(_mm256_permute_ps(x, 0xFF), w3, acc[r]);
        }
      }
    }
    for (int o = 0; o < a.npost; ++o) vpost<R>(acc, a.post[o]);
    float* d = a.dst + ox * c + blk * L;
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) vstore(d + r * c, acc[r]);
  }
}

// One output row: tiles of 8 pixels, then 4, then single ones; a tile takes the guarded loads
// only where one of its windows leaves [0, iw) (columns [in_lo, in_hi) do not)
void row(const G4Row& a, int64_t ow, int64_t in_lo, int64_t in_hi) {
  int64_t ox = 0;
  auto inside = [&](int64_t n) { return ox >= in_lo && ox + n <= in_hi; };
  for (; ox + 8 <= ow; ox += 8) inside(8) ? tile<8, false>(a, ox) : tile<8, true>(a, ox);
  for (; ox + 4 <= ow; ox += 4) inside(4) ? tile<4, false>(a, ox) : tile<4, true>(a, ox);
  for (; ox < ow; ++ox) inside(1) ? tile<1, false>(a, ox) : tile<1, true>(a, ox);
}

}  // namespace avx2
#pragma GCC pop_options

}  // namespace

bool Grouped4ConvF32::host_supported() { return host_has_avx2_fma() && !host_has_avx512(); }

bool Grouped4ConvF32::shape_supported(const DwGeometry& g) {
  return g.channels > 0 && g.channels % 8 == 0 && g.batch > 0 && g.ih > 0 && g.iw > 0 && g.oh > 0 && g.ow > 0 &&
         g.kh >= 1 && g.kh <= 7 && g.kw >= 1 && g.kw <= 7 && g.sh >= 1 && g.sw >= 1 && g.pad_top >= 0 &&
         g.pad_left >= 0;
}

Grouped4ConvF32::Grouped4ConvF32(const DwGeometry& g, const float* weights, const float* bias,
                                 std::vector<PostOp> post)
    : g_(g), blocks_(g.channels / 8), post_(std::move(post)) {
  const int64_t taps = g.kh * g.kw;
  weights_.assign(static_cast<size_t>(blocks_ * taps * 4 * 8), 0.f);
  bias_.assign(static_cast<size_t>(g.channels), 0.f);
  for (int64_t oc = 0; oc < g.channels; ++oc) {
    const int64_t blk = oc / 8, lane = oc % 8;
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t t = 0; t < taps; ++t)
        weights_[static_cast<size_t>(((blk * taps + t) * 4 + i) * 8 + lane)] = weights[(oc * 4 + i) * taps + t];
    if (bias) bias_[static_cast<size_t>(oc)] = bias[oc];
  }
}

void Grouped4ConvF32::rows(const float* src, float* dst, int64_t n, int64_t oy0, int64_t oy1) const {
  const DwGeometry& g = g_;
  // output columns whose windows lie inside the width: ox * sw - pad_left >= 0 and
  // ox * sw - pad_left + kw <= iw
  const int64_t in_lo = std::min(g.ow, (g.pad_left + g.sw - 1) / g.sw);
  const int64_t last = g.iw - g.kw + g.pad_left;  // the largest inside ox * sw
  const int64_t in_hi = last < 0 ? in_lo : std::max(in_lo, std::min(g.ow, last / g.sw + 1));
  G4Row a{};
  a.src = src + n * g.ih * g.iw * g.channels;
  a.w = weights_.data();
  a.b = bias_.data();
  a.c = g.channels;
  a.blocks = blocks_;
  a.iw = g.iw;
  a.sw = g.sw;
  a.pad_left = g.pad_left;
  a.kw = g.kw;
  a.taps = g.kh * g.kw;
  a.post = post_.data();
  a.npost = static_cast<int>(post_.size());
  for (int64_t oy = oy0; oy < oy1; ++oy) {
    a.iy0 = oy * g.sh - g.pad_top;
    a.ky0 = std::max<int64_t>(0, -a.iy0);
    a.ky1 = std::max(a.ky0, std::min(g.kh, g.ih - a.iy0));
    a.dst = dst + ((n * g.oh + oy) * g.ow) * g.channels;
    avx2::row(a, g.ow, in_lo, in_hi);
  }
}

void Grouped4ConvF32::run(const void* src, void* dst, int threads) const {
  const auto* s = static_cast<const float*>(src);
  auto* d = static_cast<float*>(dst);
  run_dw_rows(g_, threads, [&](int64_t n, int64_t oy0, int64_t oy1) { rows(s, d, n, oy0, oy1); });
}

}  // namespace opforge_cpu
