// An int8 depthwise convolution of our own (dw_conv_int8.hpp, stop 22), for the 3x3 and 5x5
// depthwise steps of MobileNetV2, MnasNet, MobileNetV3 and EfficientNet int8, on AVX-512 and
// AVX2+FMA.
//
// Why: oneDNN 3.2 runs them as brdgmm_dw (u8 x s8, channels-last). tv_mnasnet1_0 int8 was 1.02 of
// OpenVINO at one thread on the Zen 5 VM, its 17 depthwise steps 0.49 ms against OpenVINO's 0.41.
// The tile (dw_conv_int8_tile.inc) is the f32 kernel's 3x3 one (stop 21: two output rows x 8
// pixels x one channel block, each source vector loaded once for both rows and up to K / S
// pixels), over bytes widened to f32 with exact integer sums, and oneDNN's requantization.
#include "core/dw_conv_int8.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/host_isa.hpp"

namespace opforge_cpu {

namespace {

// What a tile needs of the convolution and of its output rows.
struct I8Row {
  const uint8_t* src;  // image n
  uint8_t* dst;        // the first output row's first pixel
  const float* w;      // packed weights [block][K][K][L]
  const float* scale;  // [block][L]
  const float* bias;   // [block][L]
  int64_t c, ih, iw, ow, pad_left;
  int64_t iy0;          // the first output row's window's first source row (may be < 0)
  int64_t full_blocks;  // blocks of L channels without the partial one
  int tail;             // channels in the partial last block (0: none)
  const PostOp* post;
  int npost;
  bool dst_signed;
  float zp_src, dst_mul, zp_dst, lo, hi;
};

using RowFn = void (*)(const I8Row&, int64_t, int64_t);
struct RowFns {
  RowFn multi, one;
  int64_t rows;  // output rows `multi` computes
};

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,fma")
namespace avx512 {

using V = __m512;
using Mask = __mmask16;
constexpr int L = 16;
// 2 rows x 8 pixels = 16 accumulators, a 3x3 kernel's 9 weights, the source vector and the zero
// point in 32 registers (a 5x5 kernel's weights come from L1 as FMA memory operands)
constexpr int kR[2] = {8, 8}, kRows[2] = {2, 2};  // [K == 5]
inline Mask tail_mask(int n, bool) { return static_cast<Mask>((1u << n) - 1u); }
inline V vzero() { return _mm512_setzero_ps(); }
inline V vset1(float f) { return _mm512_set1_ps(f); }
inline V vload(const float* p) { return _mm512_loadu_ps(p); }
inline V vfma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
inline V vmax(V a, V b) { return _mm512_max_ps(a, b); }
inline V vmin(V a, V b) { return _mm512_min_ps(a, b); }
inline V vmul(V a, V b) { return _mm512_mul_ps(a, b); }
inline V vadd(V a, V b) { return _mm512_add_ps(a, b); }
inline V vsub(V a, V b) { return _mm512_sub_ps(a, b); }
inline V vpos_or(V x, V other, V zero) {  // x > 0 ? x : other
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, zero, _CMP_GT_OQ), other, x);
}
// The value as it is, in a register the compiler cannot see through: a multiply is not
// contracted with the add after it into one FMA (oneDNN rounds both)
inline V keep(V v) {
  __asm__("" : "+v"(v));
  return v;
}
// L source bytes (TAIL: the first n of them, masked: nothing past them is read) as f32
template <bool SSRC, bool TAIL> inline V load_src(const uint8_t* p, Mask m) {
  const __m128i b = TAIL ? _mm_maskz_loadu_epi8(m, p) : _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm512_cvtepi32_ps(SSRC ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b));
}
// y (clamped to the destination's range) rounded to bytes, ties to even
template <bool TAIL> inline void store_dst(uint8_t* p, V y, bool dst_signed, Mask m) {
  const __m512i i = _mm512_cvtps_epi32(y);
  const __m128i b = dst_signed ? _mm512_cvtsepi32_epi8(i) : _mm512_cvtusepi32_epi8(i);
  if (TAIL) _mm_mask_storeu_epi8(p, m, b);
  else _mm_storeu_si128(reinterpret_cast<__m128i*>(p), b);
}

#include "core/dw_conv_int8_tile.inc"

}  // namespace avx512
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2 {

using V = __m256;
// the tail's channel count n (AVX2 has no byte masks), plus kAfterBlock where a full block
// precedes the tail in the pixel (then the 8 bytes ending at the tail's last one are in the tensor)
using Mask = int;
constexpr int kAfterBlock = 16;
constexpr int L = 8;
// 2 rows x 6 pixels = 12 accumulators, the source vector, the zero point and a weight in 16
// registers (the f32 kernel's AVX2 3x3 tile size)
constexpr int kR[2] = {6, 4}, kRows[2] = {2, 2};  // [K == 5]
inline Mask tail_mask(int n, bool after_block) { return n | (after_block ? kAfterBlock : 0); }
inline V vzero() { return _mm256_setzero_ps(); }
inline V vset1(float f) { return _mm256_set1_ps(f); }
inline V vload(const float* p) { return _mm256_loadu_ps(p); }
inline V vfma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
inline V vmax(V a, V b) { return _mm256_max_ps(a, b); }
inline V vmin(V a, V b) { return _mm256_min_ps(a, b); }
inline V vmul(V a, V b) { return _mm256_mul_ps(a, b); }
inline V vadd(V a, V b) { return _mm256_add_ps(a, b); }
inline V vsub(V a, V b) { return _mm256_sub_ps(a, b); }
inline V vpos_or(V x, V other, V zero) {  // x > 0 ? x : other
  return _mm256_blendv_ps(other, x, _mm256_cmp_ps(x, zero, _CMP_GT_OQ));
}
inline V keep(V v) {
  __asm__("" : "+x"(v));
  return v;
}
// 8 source bytes (TAIL: the first n, copied: nothing past them is read) as f32
// (after a full block: the 8 bytes ending at the tail's last, shifted down, one load instead of
// a byte copy, which made a 20-channel 15x15 5x5 shape 2.3x oneDNN's time)
template <bool SSRC, bool TAIL> inline V load_src(const uint8_t* p, Mask m) {
  uint64_t bytes = 0;
  const int n = m & (kAfterBlock - 1);
  if (!TAIL) {
    std::memcpy(&bytes, p, 8);
  } else if (m & kAfterBlock) {
    std::memcpy(&bytes, p + n - 8, 8);
    bytes >>= 8 * (8 - n);  // (n is 1..7)
  } else {
    std::memcpy(&bytes, p, static_cast<size_t>(n));
  }
  const __m128i b = _mm_cvtsi64_si128(static_cast<long long>(bytes));
  return _mm256_cvtepi32_ps(SSRC ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b));
}
// y (clamped to the destination's range, so each pack below is exact) rounded to bytes, ties
// to even
template <bool TAIL> inline void store_dst(uint8_t* p, V y, bool dst_signed, Mask m) {
  const int n = m & (kAfterBlock - 1);
  const __m256i i = _mm256_cvtps_epi32(y);
  const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(i), _mm256_extracti128_si256(i, 1));
  const __m128i b = dst_signed ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w);
  const uint64_t bytes = static_cast<uint64_t>(_mm_cvtsi128_si64(b));
  std::memcpy(p, &bytes, TAIL ? static_cast<size_t>(n) : 8);
}

#include "core/dw_conv_int8_tile.inc"

}  // namespace avx2
#pragma GCC pop_options

RowFns row_fns(DwConvInt8::Isa isa, int64_t k, int64_t s, bool src_signed, bool zp) {
  return isa == DwConvInt8::Isa::avx512 ? avx512::row_fns(k, s, src_signed, zp) : avx2::row_fns(k, s, src_signed, zp);
}

}  // namespace

bool DwConvInt8::host_supported(Isa isa) {
  return isa == Isa::avx512 ? host_has_avx512() : host_has_avx2_fma();
}

std::string DwConvInt8::why_not(const DwGeometry& g) {
  if (g.kh != g.kw || (g.kh != 3 && g.kh != 5))
    return "a " + std::to_string(g.kh) + "x" + std::to_string(g.kw) + " kernel (tiles: 3x3, 5x5)";
  if (g.sh != g.sw || (g.sw != 1 && g.sw != 2))
    return "strides " + std::to_string(g.sh) + "x" + std::to_string(g.sw) + " (tiles: 1x1, 2x2)";
  if (g.pad_top < 0 || g.pad_left < 0) return "negative padding";
  if (g.batch <= 0 || g.channels <= 0 || g.ih <= 0 || g.iw <= 0 || g.oh <= 0 || g.ow <= 0) return "an empty tensor";
  return "";
}

std::string DwConvInt8::why_not(const std::vector<PostOp>& post) {
  for (const PostOp& p : post)
    if (p.kind != PostOp::relu && p.kind != PostOp::clip && p.kind != PostOp::linear)
      return "a fused Swish/HardSwish (the kernel runs ReLU, Clip and linear ones)";
  return "";
}

DwConvInt8::DwConvInt8(const DwGeometry& g, const int8_t* weights, const DwInt8Quant& q, std::vector<PostOp> post, Isa isa)
    : g_(g),
      isa_(isa),
      lanes_(isa == Isa::avx512 ? 16 : 8),
      src_signed_(q.src_signed),
      dst_signed_(q.dst_signed),
      src_zero_point_(static_cast<float>(q.src_zero_point)),
      // oneDNN 3.2's brgemm kernels multiply by the destination scale's inverse
      dst_mul_(1.f / q.dst_scale),
      dst_zero_point_(static_cast<float>(q.dst_zero_point)),
      lo_(q.dst_signed ? -128.f : 0.f),
      hi_(q.dst_signed ? 127.f : 255.f),
      post_(std::move(post)) {
  blocks_ = (g.channels + lanes_ - 1) / lanes_;
  const int64_t taps = g.kh * g.kw;
  weights_.assign(static_cast<size_t>(blocks_ * taps * lanes_), 0.f);
  scale_.assign(static_cast<size_t>(blocks_ * lanes_), 0.f);
  bias_.assign(static_cast<size_t>(blocks_ * lanes_), 0.f);
  for (int64_t ch = 0; ch < g.channels; ++ch) {
    const int64_t blk = ch / lanes_, lane = ch % lanes_;
    for (int64_t t = 0; t < taps; ++t)
      weights_[static_cast<size_t>((blk * taps + t) * lanes_ + lane)] = static_cast<float>(weights[ch * taps + t]);
    // (the product in f32, as oneDNN's precomputed scales)
    scale_[static_cast<size_t>(ch)] = q.src_scale * q.wei_scales[ch];
    if (q.bias) bias_[static_cast<size_t>(ch)] = q.bias[ch];
  }
}

void DwConvInt8::rows(const uint8_t* src, uint8_t* dst, int64_t n, int64_t oy0, int64_t oy1) const {
  const DwGeometry& g = g_;
  const RowFns fns = row_fns(isa_, g.kw, g.sw, src_signed_, src_zero_point_ != 0.f);
  // output columns whose windows lie inside the width: x0 = ox * sw - pad_left >= 0 and
  // x0 + kw <= iw
  const int64_t in_lo = std::min(g.ow, (g.pad_left + g.sw - 1) / g.sw);
  const int64_t last = g.iw - g.kw + g.pad_left;  // the largest inside ox * sw
  const int64_t in_hi = last < 0 ? in_lo : std::max(in_lo, std::min(g.ow, last / g.sw + 1));
  I8Row a{};
  a.src = src + n * g.ih * g.iw * g.channels;
  a.w = weights_.data();
  a.scale = scale_.data();
  a.bias = bias_.data();
  a.c = g.channels;
  a.ih = g.ih;
  a.iw = g.iw;
  a.ow = g.ow;
  a.pad_left = g.pad_left;
  a.full_blocks = g.channels / lanes_;
  a.tail = static_cast<int>(g.channels % lanes_);
  a.post = post_.data();
  a.npost = static_cast<int>(post_.size());
  a.dst_signed = dst_signed_;
  a.zp_src = src_zero_point_;
  a.dst_mul = dst_mul_;
  a.zp_dst = dst_zero_point_;
  a.lo = lo_;
  a.hi = hi_;
  // kRows output rows a call while they last in the chunk, then single rows (the row functions
  // skip source rows outside the image themselves)
  for (int64_t oy = oy0; oy < oy1;) {
    const bool multi = oy + fns.rows <= oy1;
    a.iy0 = oy * g.sh - g.pad_top;
    a.dst = dst + ((n * g.oh + oy) * g.ow) * g.channels;
    (multi ? fns.multi : fns.one)(a, in_lo, in_hi);
    oy += multi ? fns.rows : 1;
  }
}

// Output-row chunks a thread: 1. The shared rule (run_dw_rows, dw_chunks_per_thread: 4) cuts a
// 14x14 or 7x7 map into chunks of 1-2 rows, each too short for the 2-row tile: mobilenet_v2 int8
// at 2 threads (Zen 5 VM), its 13 steps on this kernel summed 0.165 ms with 1 chunk a thread
// against 0.178 with 4 (3 processes each, medians of 30 runs). OPFORGE_CPU_INT8_DW_CHUNKS
// overrides it (read once; 4 is the shared rule's count), for measuring.
static int64_t int8_dw_chunks_per_thread() {
  static const int64_t value = std::max<int64_t>(1, env_int("OPFORGE_CPU_INT8_DW_CHUNKS", 1));
  return value;
}

void DwConvInt8::run(const void* src, void* dst, int threads) const {
  const auto* s = static_cast<const uint8_t*>(src);
  auto* d = static_cast<uint8_t*>(dst);
  const DwGeometry& g = g_;
  const int64_t total = g.batch * g.oh;  // output rows over the batch
  if (threads <= 1 || total < 2) {
    for (int64_t n = 0; n < g.batch; ++n) rows(s, d, n, 0, g.oh);
    return;
  }
  // (run_dw_rows' split with this count: chunks of whole rows, each inside one image)
  const int64_t want = std::min<int64_t>(total, int64_t{threads} * int8_dw_chunks_per_thread());
  const int64_t per_image = std::max<int64_t>(1, (want + g.batch - 1) / g.batch);
  const int64_t split = std::min(per_image, g.oh);
  run_chunks(static_cast<int>(g.batch * split), threads, [&](int c, int) {
    const int64_t n = c / split, i = c % split;
    rows(s, d, n, g.oh * i / split, g.oh * (i + 1) / split);
  }, /*runs_primitives=*/false);
}

}  // namespace opforge_cpu
