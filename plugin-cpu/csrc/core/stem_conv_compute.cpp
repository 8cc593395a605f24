// A network's first convolution reads 3 channels of the image: each output pixel does only
// C * KH * KW multiply-adds per output channel (27 for a 3x3, 147 for a 7x7), too few for
// oneDNN 3.2's channels-last JIT kernel, which pays its per-pixel overhead on that little work
// (vgg11's 3->64 3x3 at 224x224 took 1.4-2.3x OpenVINO's brgconv, stop 14), and it also needs the
// image reordered to nhwc first. This direct kernel reads the plain NCHW image where it is and
// keeps output channels in vector lanes (up to 64 = 4 zmm) x several output pixels in
// registers: each tap loads the weight vectors once and broadcasts one input scalar per pixel.
// Padding is skipped, not copied: a row's kernel rows outside the image are left out of its
// loop, and the few pixels at a row's ends whose window leaves the image run one at a time
// over their kernel columns inside it.
#include "core/stem_conv_compute.hpp"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <utility>

#include "core/chunk_pool.hpp"
#include "core/env_switch.hpp"

namespace opforge_cpu {

namespace {

// What a tile reads and writes (stem_conv_tile.inc).
struct TileArgs {
  const float* x;          // the source batch [C, H, W]
  int64_t base;            // offset of pixel 0's window origin (row ih0, column iw0) in a plane
  int64_t sw;              // pixel step in the source (when the tile's SW is 0)
  const int64_t* xoff;     // per tap: its offset from the window origin
  const int64_t* wtap;     // per tap: its number in the packed weights
  int64_t taps;
  const float* w;          // the block's packed weights [C][KH][KW][NV * L]
  const float* bias;       // the block's bias [NV * L]
  const PostOp* post;
  int npost;
  float* y;                // pixel 0's first channel of the block
  int64_t pstride, vstride;  // destination step from pixel to pixel, from vector to vector
  int last_lanes;          // real channels in the block's last vector (L when full)
  bool blocked;            // channel-blocked destination: write the padding lanes as zeros
  bool stream;             // non-temporal stores (a destination far larger than the caches)
  // The activations are one clamp min(hi, max(lo, r)) (none, one ReLU, one Clip), run without a
  // branch per register; else the tile runs `post` one by one.
  bool clamp;
  float lo, hi;
};

using TileFn = void (*)(const TileArgs&);

#pragma GCC push_options
#pragma GCC target("avx512f")
namespace avx512 {
using V = __m512;
constexpr int L = 16;
inline V vzero() { return _mm512_setzero_ps(); }
inline V vload(const float* p) { return _mm512_loadu_ps(p); }
inline V vbcast(const float* p) { return _mm512_set1_ps(*p); }
inline V vfma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
inline V vadd(V a, V b) { return _mm512_add_ps(a, b); }
inline void vstore(float* p, V v, bool stream = false) {
  if (stream) _mm512_stream_ps(p, v);
  else _mm512_storeu_ps(p, v);
}
inline __mmask16 first(int n) { return static_cast<__mmask16>((1u << n) - 1u); }
inline void vstore_first(float* p, V v, int n) { _mm512_mask_storeu_ps(p, first(n), v); }
inline V vkeep_first(V v, int n) { return _mm512_maskz_mov_ps(first(n), v); }
// e^x (exp512), NaN-keeping, e^89 -> inf (SiLU of -inf is NaN as in ONNX Runtime): the same
// polynomial and clamp as the depthwise kernels' (dw_conv_f32_act.inc, dw_conv_bf16.cpp).
#include "core/fast_exp_avx512.inc"
inline V vexp(V x) { return exp512(x); }
// oneDNN's eltwise semantics over n registers: NaN stays NaN (MAX/MIN return their second
// operand when one is NaN)
template <int N> inline void vpost(V* r, const PostOp& op) {
  const V zero = _mm512_setzero_ps(), alpha = _mm512_set1_ps(op.alpha), beta = _mm512_set1_ps(op.beta);
  switch (op.kind) {
    case PostOp::relu:
      if (op.alpha == 0.f) {
        for (int i = 0; i < N; ++i) r[i] = _mm512_max_ps(zero, r[i]);
      } else {
        for (int i = 0; i < N; ++i)
          r[i] = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(r[i], zero, _CMP_GT_OQ), _mm512_mul_ps(r[i], alpha), r[i]);
      }
      return;
    case PostOp::clip:
      for (int i = 0; i < N; ++i) r[i] = _mm512_min_ps(beta, _mm512_max_ps(alpha, r[i]));
      return;
    case PostOp::linear:
      for (int i = 0; i < N; ++i) r[i] = _mm512_fmadd_ps(r[i], alpha, beta);
      return;
    case PostOp::swish:  // x * sigmoid(alpha x) = x / (1 + e^(-alpha x))
      for (int i = 0; i < N; ++i)
        r[i] = _mm512_div_ps(r[i], _mm512_add_ps(_mm512_set1_ps(1.f), vexp(_mm512_mul_ps(r[i], _mm512_sub_ps(zero, alpha)))));
      return;
    case PostOp::hardswish:  // x * clip(alpha x + beta, 0, 1), as the depthwise kernels' (dw_conv_f32_act.inc)
      for (int i = 0; i < N; ++i)
        r[i] = _mm512_mul_ps(r[i], _mm512_min_ps(_mm512_set1_ps(1.f), _mm512_max_ps(zero, _mm512_fmadd_ps(r[i], alpha, beta))));
      return;
  }
}
// One activation on one register (the same operations as vpost).
inline V vact(V r, const PostOp& op) {
  vpost<1>(&r, op);
  return r;
}
// min(hi, max(lo, r)) in vpost's operand order, so NaN and -0.f come out as vpost's ReLU and
// clip give them (MAX/MIN return their second operand on a NaN or two zeros)
inline V vclamp(V r, V lo, V hi) { return _mm512_min_ps(hi, _mm512_max_ps(lo, r)); }
#include "core/stem_conv_tile.inc"
// pixels a tile for NV vectors: NV * P accumulators + NV weights + a broadcast in 32 registers
constexpr int max_pixels(int nv) { return nv == 1 ? 16 : nv == 2 ? 12 : nv == 3 ? 8 : 6; }
constexpr int kMaxVectors = 4;
template <int SW, bool Regs> struct Tiles {
  std::array<TileFn, 17> t1 = make_tiles<1, SW, Regs>(std::make_integer_sequence<int, 16>{});
  std::array<TileFn, 13> t2 = make_tiles<2, SW, Regs>(std::make_integer_sequence<int, 12>{});
  std::array<TileFn, 9> t3 = make_tiles<3, SW, Regs>(std::make_integer_sequence<int, 8>{});
  std::array<TileFn, 7> t4 = make_tiles<4, SW, Regs>(std::make_integer_sequence<int, 6>{});
  TileFn get(int nv, int p) const { return nv == 1 ? t1[p] : nv == 2 ? t2[p] : nv == 3 ? t3[p] : t4[p]; }
};
const Tiles<0, true> any_step;
const Tiles<1, true> step1;
const Tiles<2, true> step2;
const Tiles<0, false> any_step_mem;
const Tiles<1, false> step1_mem;
const Tiles<2, false> step2_mem;
// sw: the pixel step (1 and 2 as constants, others read at run time); regs: the epilogue on
// registers (stem_conv_tile.inc), else the one before stop 20
TileFn tile_fn(int nv, int p, int64_t sw, bool regs) {
  if (!regs) return sw == 1 ? step1_mem.get(nv, p) : sw == 2 ? step2_mem.get(nv, p) : any_step_mem.get(nv, p);
  return sw == 1 ? step1.get(nv, p) : sw == 2 ? step2.get(nv, p) : any_step.get(nv, p);
}
}  // namespace avx512
#pragma GCC pop_options


// The first tap index k in [0, taps) with origin + k * step >= 0, and one past the last with
// origin + k * step < size (an empty range when none is inside).
void inside(int64_t origin, int64_t step, int64_t taps, int64_t size, int64_t& k0, int64_t& k1) {
  k0 = origin >= 0 ? 0 : (-origin + step - 1) / step;
  k1 = origin > size - 1 ? 0 : std::min(taps, (size - 1 - origin) / step + 1);
  if (k1 < k0) k1 = k0;
}

// The first index of v whose address is a multiple of 64 bytes.
size_t aligned_start(const float* v) {
  return ((64 - reinterpret_cast<uintptr_t>(v) % 64) % 64) / sizeof(float);
}

// A destination this large (vgg11's 64x224x224, 12.8 MB) is written with non-temporal stores:
// it outgrows the caches, so its reader fetches it from memory anyway, and streaming it saves
// the read-for-ownership of every line (vgg11's stem, one thread, ratio to oneDNN 0.99 -> 0.76
// in one alternating micro-benchmark; the 3.2 MB and smaller stems were not measured with it).
constexpr double kStreamBytes = 8.0 * 1024 * 1024;

// OPFORGE_CPU_STEM_REGS=0: the tile's epilogue through memory, as before stop 20 (same-build
// A/B runs; the outputs are the same bytes either way)
bool regs_epilogue() {
  static const bool on = env_switch_on("OPFORGE_CPU_STEM_REGS");
  return on;
}

}  // namespace

StemConvCompute::StemConvCompute(const StemGeometry& g, StemDstLayout dst, const float* weights,
                                 const float* bias, std::vector<PostOp> post)
    : g_(g), dst_(dst), post_(std::move(post)) {
  const int64_t vecs = (g_.o + lanes_ - 1) / lanes_;
  opad_ = vecs * lanes_;
  // weights: vector by vector, each [C][KH][KW][L]; a block of nv vectors is then re-packed as
  // [C][KH][KW][nv * L] at its offset (blocks are consecutive vectors, see run_rows)
  const int64_t taps = g_.c * g_.kh * g_.kw;
  const int max_nv = avx512::kMaxVectors;
  // (64-byte aligned: a weight vector split over two cache lines costs two loads)
  w_.assign(static_cast<size_t>(opad_ * taps + 16), 0.f);
  bias_.assign(static_cast<size_t>(opad_ + 16), 0.f);
  w0_ = aligned_start(w_.data());
  b0_ = aligned_start(bias_.data());
  for (int64_t v0 = 0; v0 < vecs; v0 += max_nv) {
    const int64_t nv = std::min<int64_t>(max_nv, vecs - v0);
    float* blk = w_.data() + w0_ + v0 * lanes_ * taps;
    for (int64_t t = 0; t < taps; ++t)
      for (int64_t j = 0; j < nv * lanes_; ++j) {
        const int64_t oc = v0 * lanes_ + j;
        if (oc < g_.o) blk[t * nv * lanes_ + j] = weights[oc * taps + t];
      }
  }
  if (bias)
    for (int64_t oc = 0; oc < g_.o; ++oc) bias_[b0_ + oc] = bias[oc];
  const double dst_bytes = 4.0 * static_cast<double>(g_.n * opad_ * g_.oh * g_.ow);
  stream_ = dst_bytes >= kStreamBytes;
}

void StemConvCompute::run_rows(const float* x, float* y, int64_t r0, int64_t r1) const {
  const int L = lanes_, max_nv = avx512::kMaxVectors;
  const int64_t vecs = opad_ / L, taps = g_.c * g_.kh * g_.kw, ohw = g_.oh * g_.ow;
  const bool blocked = dst_.block != 0;
  // destination offsets: batch, pixel, vector steps
  const int64_t nstride = blocked ? opad_ * ohw : g_.o * ohw;
  const int64_t pstride = blocked ? L : g_.o;
  const int64_t vstride = blocked ? ohw * L : L;
  // output columns whose whole window lies inside the source row: [ow_lo, ow_hi)
  const int64_t ext_w = (g_.kw - 1) * g_.dw;
  int64_t ow_lo = std::min((g_.pl + g_.sw - 1) / g_.sw, g_.ow);
  const int64_t last_in = g_.w - 1 - ext_w + g_.pl;  // ow * sw <= last_in
  int64_t ow_hi = last_in < 0 ? 0 : std::min(g_.ow, last_in / g_.sw + 1);
  if (ow_hi < ow_lo) ow_hi = ow_lo;
  const int64_t plane = g_.h * g_.w;
  // the taps of kernel rows [kh0, kh1) and columns [kw0, kw1) (offsets from the window origin)
  std::vector<int64_t> xoff(static_cast<size_t>(taps)), wtap(static_cast<size_t>(taps));
  std::vector<int64_t> exoff(static_cast<size_t>(taps)), ewtap(static_cast<size_t>(taps));
  auto table = [&](int64_t kh0, int64_t kh1, int64_t kw0, int64_t kw1, int64_t* xo, int64_t* wt) {
    int64_t k = 0;
    for (int64_t ci = 0; ci < g_.c; ++ci)
      for (int64_t kh = kh0; kh < kh1; ++kh)
        for (int64_t kw = kw0; kw < kw1; ++kw, ++k) {
          xo[k] = ci * plane + kh * g_.dh * g_.w + kw * g_.dw;
          wt[k] = (ci * g_.kh + kh) * g_.kw + kw;
        }
    return k;
  };
  const bool regs = regs_epilogue();
  TileArgs a{};
  a.sw = g_.sw;
  a.post = post_.data();
  a.npost = static_cast<int>(post_.size());
  a.clamp = false;
  a.lo = -std::numeric_limits<float>::infinity();
  a.hi = std::numeric_limits<float>::infinity();
  if (post_.empty()) {
    a.clamp = true;
  } else if (post_.size() == 1 && post_[0].kind == PostOp::relu && post_[0].alpha == 0.f) {
    a.clamp = true;
    a.lo = 0.f;
  } else if (post_.size() == 1 && post_[0].kind == PostOp::clip) {
    a.clamp = true;
    a.lo = post_[0].alpha;
    a.hi = post_[0].beta;
  }
  a.pstride = pstride;
  a.vstride = vstride;
  a.blocked = blocked;
  // non-temporal stores need every vector aligned: the destination, the pixel and vector steps
  a.stream = stream_ && reinterpret_cast<uintptr_t>(y) % (4 * L) == 0 && pstride % L == 0 && vstride % L == 0;
  int64_t row_kh0 = -1, row_kh1 = -1, row_taps = 0;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t n = r / g_.oh, oh = r % g_.oh;
    const int64_t ih0 = oh * g_.sh - g_.pt;
    a.x = x + n * g_.c * plane;
    int64_t kh0, kh1;
    inside(ih0, g_.dh, g_.kh, g_.h, kh0, kh1);
    if (kh0 != row_kh0 || kh1 != row_kh1) {
      row_taps = table(kh0, kh1, 0, g_.kw, xoff.data(), wtap.data());
      row_kh0 = kh0;
      row_kh1 = kh1;
    }
    for (int64_t v0 = 0; v0 < vecs; v0 += max_nv) {
      const int nv = static_cast<int>(std::min<int64_t>(max_nv, vecs - v0));
      const int maxp = avx512::max_pixels(nv);
      a.w = w_.data() + w0_ + v0 * L * taps;
      a.bias = bias_.data() + b0_ + v0 * L;
      const int64_t oc_end = std::min<int64_t>(g_.o, (v0 + nv) * L);
      a.last_lanes = static_cast<int>(oc_end - (v0 + nv - 1) * L);
      float* yrow = y + n * nstride + (blocked ? v0 * ohw * L : v0 * L) + oh * g_.ow * pstride;
      auto run = [&](int64_t ow, int p) {
        a.base = ih0 * g_.w + ow * g_.sw - g_.pl;
        a.y = yrow + ow * pstride;
        avx512::tile_fn(nv, p, g_.sw, regs)(a);
      };
      // the row's ends one pixel at a time over the kernel columns inside the source
      auto edge = [&](int64_t ow) {
        int64_t k0, k1;
        inside(ow * g_.sw - g_.pl, g_.dw, g_.kw, g_.w, k0, k1);
        a.taps = table(kh0, kh1, k0, k1, exoff.data(), ewtap.data());
        a.xoff = exoff.data();
        a.wtap = ewtap.data();
        run(ow, 1);
      };
      for (int64_t ow = 0; ow < ow_lo; ++ow) edge(ow);
      a.taps = row_taps;
      a.xoff = xoff.data();
      a.wtap = wtap.data();
      // the inside in tiles as even as possible (109 pixels as 14 x 6 + 5 x 5, not 18 x 6 + 1)
      const int64_t inner = ow_hi - ow_lo, ntiles = (inner + maxp - 1) / maxp;
      for (int64_t i = 0, ow = ow_lo; i < ntiles; ++i) {
        const int p = static_cast<int>(inner / ntiles + (i < inner % ntiles ? 1 : 0));
        run(ow, p);
        ow += p;
      }
      for (int64_t ow = ow_hi; ow < g_.ow; ++ow) edge(ow);
    }
  }
  if (stream_) _mm_sfence();  // (the non-temporal stores are visible before the step ends)
}

void StemConvCompute::run(const float* x, float* y, int threads) const {
  const int64_t rows = g_.n * g_.oh;
  if (threads <= 1 || rows < 2) {
    run_rows(x, y, 0, rows);
    return;
  }
  // a few chunks a thread, claimed from a counter: a thread that runs slow takes fewer
  const int chunks = static_cast<int>(std::min<int64_t>(rows, 4 * threads));
  run_chunks(chunks, threads, [&](int c, int) {
    run_rows(x, y, rows * c / chunks, rows * (c + 1) / chunks);
  }, /*runs_primitives=*/false);
}

}  // namespace opforge_cpu
