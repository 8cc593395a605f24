// QuantizedAvgPool (opforge_cpu/ops/quantized_avg_pool.py): 2D average pooling of a u8/s8 tensor
// with its scale and zero point, requantized to the output's. For each output pixel the window's
// bytes are summed per channel in int32 (exact), over the channels-last input (a quantized
// convolution's output, read in place; another layout is reordered into scratch first):
//   real = (sum - n_valid * z) * s / count,  q = saturate(rint(real / s_out) + z_out)
// where count is what the window counts (padded cells too without exclude_pad: their real value
// is 0, so they add nothing but the divisor), exactly as AvgPool's reference does.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")  // see quantized_eltwise.cpp: the clamps vectorise
#endif
#include <cmath>
#include <numeric>
#include <type_traits>

#include "core/elementwise.hpp"
#include "core/env_switch.hpp"
#include "core/host_isa.hpp"
#include "kernels/int8_layout.hpp"

// the AVX-512 build of the loops, with FMA (the divisions' correction steps)
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define OPFORGE_AVG_POOL_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma")))
#define OPFORGE_AVG_POOL_REGS 1
#else
#define OPFORGE_AVG_POOL_AVX512
#endif

namespace opforge_cpu {

namespace {
bool is_int8(DType t) { return t == DType::u8 || t == DType::i8; }

// OPFORGE_CPU_INT8_AVG_POOL_REGS=0: the AVX-512 build's loops of stop 17 (per output pixel a sum,
// a requantization and a store loop over C through arrays) instead of one pass per 16 channels
// on registers (for A/B runs).
bool regs_enabled() {
  static const bool on = env_switch_on("OPFORGE_CPU_INT8_AVG_POOL_REGS");
  return on;
}

#ifdef OPFORGE_AVG_POOL_REGS
// 16 u8/s8 bytes widened to int32 lanes (a function with the build's target: a lambda in the
// AVX-512 function would be compiled without it)
template <class I> OPFORGE_AVG_POOL_AVX512 inline __m512i widen16(__m128i b) {
  return std::is_same<I, uint8_t>::value ? _mm512_cvtepu8_epi32(b) : _mm512_cvtepi8_epi32(b);
}

// An AVX2 host (no AVX-512; ONEDNN_MAX_CPU_ISA=AVX2 emulates one), stop 22: the register pass
// at 8 channels a vector (rows_regs_avx2). Under the cap inception_v3 int8's 10 pools took
// 2.56 ms in the baseline's array loops against OpenVINO's 0.63 (jit_avx2_I8).
// OPFORGE_CPU_INT8_AVX2=0 (the switch of the other int8 AVX2 builds) or
// OPFORGE_CPU_INT8_AVG_POOL_REGS=0: the baseline loops.
#define OPFORGE_AVG_POOL_AVX2 __attribute__((target("avx2,fma")))
bool regs_avx2() {
  static const bool on = host_has_avx2_fma() && env_switch_on("OPFORGE_CPU_INT8_AVX2");
  return on;
}
// 8 u8/s8 bytes widened to int32 lanes
template <class I> OPFORGE_AVG_POOL_AVX2 inline __m256i widen8(const I* p) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return std::is_same<I, uint8_t>::value ? _mm256_cvtepu8_epi32(b) : _mm256_cvtepi8_epi32(b);
}
// 8 int32 lanes already clamped to O's range, stored as 8 bytes (the packs are exact there)
template <class O> OPFORGE_AVG_POOL_AVX2 inline void store8(O* p, __m256i v) {
  const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  const __m128i b = std::is_same<O, uint8_t>::value ? _mm_packus_epi16(w, w) : _mm_packs_epi16(w, w);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(p), b);
}
#endif

class QuantizedAvgPoolKernel : public StagedKernel {
 public:
  explicit QuantizedAvgPoolKernel(NodeDesc& n) {
    const Shape& xs = n.in(0).shape;
    const Shape& ys = n.outputs[0].shape;
    N_ = xs[0];
    C_ = xs[1];
    H_ = xs[2];
    W_ = xs[3];
    OH_ = ys[2];
    OW_ = ys[3];
    auto k = n.attrs.ints("kernel"), s = n.attrs.ints("strides");
    auto b = n.attrs.ints("window_begin"), e = n.attrs.ints("window_end");
    kh_ = k[0];
    kw_ = k[1];
    sh_ = s[0];
    sw_ = s[1];
    bh_ = b[0];
    bw_ = b[1];
    eh_ = e[0];
    ew_ = e[1];
    exclude_ = n.attrs.b("exclude_pad", n.attrs.b("exclude-pad", false));
    in_ = n.in(0).dtype;
    out_ = n.outputs[0].dtype;
    s_ = static_cast<float>(n.attrs.f("src_scale"));
    z_ = static_cast<int32_t>(n.attrs.i("src_zero_point", 0));
    so_ = static_cast<float>(n.attrs.f("dst_scale"));
    zo_ = static_cast<float>(n.attrs.i("dst_zero_point", 0));
    channels_last_out_ = channels_last_io(n);
  }
  std::string impl_name() const override {
#ifdef OPFORGE_AVG_POOL_REGS
    if (int8_avx512() && channels_last_out_ && regs_enabled()) return staged_name("sum_regs") + int8_isa_suffix();
    if (!int8_avx512() && channels_last_out_ && regs_enabled() && regs_avx2()) return staged_name("sum_regs") + ":avx2";
#endif
    return staged_name("sum") + int8_isa_suffix();
  }

 private:
  void compute(RunContext& ctx, const std::vector<const void*>& data, TensorView* out) const override {
    with_int8_input(in_, data[0], [&](auto* x) {
      with_int8_output(out_, out[0].data, [&](auto* y, float lo, float hi) { pool(ctx, x, y, lo, hi); });
    });
  }
  // [first, last) of the window along one axis within [lo, hi)
  static void clip(int64_t start, int64_t k, int64_t lo, int64_t hi, int64_t& a, int64_t& b) {
    a = std::min(std::max(start, lo), hi);
    b = std::min(std::max(start + k, lo), hi);
  }
  template <class I, class O> void pool(RunContext& ctx, const I* x, O* y, float lo, float hi) const {
    const bool wide = int8_avx512();
#ifdef OPFORGE_AVG_POOL_REGS
    const bool regs = wide && channels_last_out_ && regs_enabled();
    const bool regs2 = !wide && channels_last_out_ && regs_enabled() && regs_avx2();
#endif
    parallel_range(N_ * OH_, ctx.num_threads, [&](int64_t r0, int64_t r1) {
#ifdef OPFORGE_AVG_POOL_REGS
      if (regs) return rows_regs_avx512<I, O>(x, y, lo, hi, r0, r1);
      if (regs2) return rows_regs_avx2<I, O>(x, y, lo, hi, r0, r1);
#endif
      if (wide) rows_avx512<I, O>(x, y, lo, hi, r0, r1);
      else rows<I, O, false>(x, y, lo, hi, r0, r1);
    }, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, OW_ * C_ * kh_ * kw_)));
  }
#ifdef OPFORGE_AVG_POOL_REGS
  // The AVX-512 build for a channels-last output (Inception's pools between quantized
  // convolutions): per output pixel and block of 16 channels, the window's sum, the
  // requantization and the store on registers, where rows() zeroes, adds into, requantizes and
  // converts C-element arrays in four loops. The same operations lane for lane as rows<.., true>
  // (the column pass, the int32 sums, (sum - n z) * s, the two FMA-corrected quotients, the clamps
  // to +-2^22 and rounding half to even (cvtps2dq in the default mode, which the magic-number
  // addition equals there), then + z_out and the range clamp in int32): the same bytes.
  template <class I, class O>
  OPFORGE_AVG_POOL_AVX512 void rows_regs_avx512(const I* x, O* y, float lo, float hi, int64_t r0, int64_t r1) const {
    const int64_t C = C_, H = H_, W = W_, OH = OH_, OW = OW_;
    const int64_t kh = kh_, kw = kw_, sh = sh_, sw = sw_, bh = bh_, bw = bw_, eh = eh_, ew = ew_;
    const bool exclude = exclude_;
    const bool separable = sw == 1 && kw > 1 && kh > 1;
    std::vector<int32_t> cols_v(separable ? W * C : 0);
    int32_t* cols = cols_v.data();
    const __m512 vs = _mm512_set1_ps(s_), vso = _mm512_set1_ps(so_), vinv_so = _mm512_set1_ps(1.f / so_);
    const __m512 vbig = _mm512_set1_ps(4194304.f), vnbig = _mm512_set1_ps(-4194304.f);
    const __m512i vzo = _mm512_set1_epi32(static_cast<int32_t>(zo_));
    const __m512i vlo = _mm512_set1_epi32(static_cast<int32_t>(lo)), vhi = _mm512_set1_epi32(static_cast<int32_t>(hi));
    const int32_t z = z_;
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / OH, oh = r % OH;
      int64_t h0, h1, ch0, ch1;
      clip(oh * sh - bh, kh, 0, H, h0, h1);
      if (exclude) ch0 = h0, ch1 = h1;
      else clip(oh * sh - bh, kh, -bh, H + eh, ch0, ch1);
      if (separable) {
        // each input column's sum over the window's rows, 16 channels at a time
        for (int64_t i = 0; i < W * C; i += 16) {
          const __mmask16 k = W * C - i >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (W * C - i)) - 1u);
          __m512i acc = _mm512_setzero_si512();
          for (int64_t ih = h0; ih < h1; ++ih)
            acc = _mm512_add_epi32(acc, widen16<I>(_mm_maskz_loadu_epi8(k, x + (n * H + ih) * W * C + i)));
          _mm512_mask_storeu_epi32(cols + i, k, acc);
        }
      }
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t w0, w1, cw0, cw1;
        clip(ow * sw - bw, kw, 0, W, w0, w1);
        if (exclude) cw0 = w0, cw1 = w1;
        else clip(ow * sw - bw, kw, -bw, W + ew, cw0, cw1);
        const int32_t valid = static_cast<int32_t>((h1 - h0) * (w1 - w0));
        const float count = static_cast<float>((ch1 - ch0) * (cw1 - cw0));
        const __m512 vcount = _mm512_set1_ps(count), vinv_count = _mm512_set1_ps(1.f / count);
        const __m512i vzsum = _mm512_set1_epi32(valid * z);
        O* dst = y + (n * OH * OW + oh * OW + ow) * C;
        for (int64_t c = 0; c < C; c += 16) {
          const __mmask16 k = C - c >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (C - c)) - 1u);
          __m512i acc = _mm512_setzero_si512();
          if (separable) {
            for (int64_t iw = w0; iw < w1; ++iw) acc = _mm512_add_epi32(acc, _mm512_maskz_loadu_epi32(k, cols + iw * C + c));
          } else {
            for (int64_t ih = h0; ih < h1; ++ih)
              for (int64_t iw = w0; iw < w1; ++iw)
                acc = _mm512_add_epi32(acc, widen16<I>(_mm_maskz_loadu_epi8(k, x + ((n * H + ih) * W + iw) * C + c)));
          }
          __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(acc, vzsum)), vs);
          __m512 q = _mm512_mul_ps(v, vinv_count);
          v = _mm512_fmadd_ps(_mm512_fnmadd_ps(q, vcount, v), vinv_count, q);
          q = _mm512_mul_ps(v, vinv_so);
          v = _mm512_fmadd_ps(_mm512_fnmadd_ps(q, vso, v), vinv_so, q);
          v = _mm512_min_ps(_mm512_max_ps(v, vnbig), vbig);  // NaN -> the low bound, as rows()
          __m512i iv = _mm512_add_epi32(_mm512_cvtps_epi32(v), vzo);
          iv = _mm512_min_epi32(_mm512_max_epi32(iv, vlo), vhi);
          _mm_mask_storeu_epi8(dst + c, k, _mm512_cvtepi32_epi8(iv));
        }
      }
    }
  }
  // The AVX2 build of the pass above, 8 channels a vector; channels past the last 8 and the
  // column sums' last W * C % 8 as scalars. The baseline's arithmetic lane for lane: the int32
  // sums, (sum - n z) * s, two correctly rounded divisions (vdivps: the baseline divides, so the
  // same quotients without the AVX-512 build's FMA steps), the clamps to +-2^22 (NaN -> the low
  // bound), rounding half to even (cvtps2dq in the default mode, which the baseline's
  // magic-number addition equals there), + z_out and the range clamp: the same bytes.
  template <class I, class O>
  OPFORGE_AVG_POOL_AVX2 void rows_regs_avx2(const I* x, O* y, float lo, float hi, int64_t r0, int64_t r1) const {
    const int64_t C = C_, H = H_, W = W_, OH = OH_, OW = OW_, C8 = C / 8 * 8, WC = W * C;
    const int64_t kh = kh_, kw = kw_, sh = sh_, sw = sw_, bh = bh_, bw = bw_, eh = eh_, ew = ew_;
    const bool exclude = exclude_;
    const bool separable = sw == 1 && kw > 1 && kh > 1;
    std::vector<int32_t> cols_v(separable ? WC : 0);
    int32_t* cols = cols_v.data();
    const float s = s_, so = so_, zo = zo_;
    const __m256 vs = _mm256_set1_ps(s), vso = _mm256_set1_ps(so);
    const __m256 vbig = _mm256_set1_ps(4194304.f), vnbig = _mm256_set1_ps(-4194304.f);
    const __m256i vzo = _mm256_set1_epi32(static_cast<int32_t>(zo));
    const __m256i vlo = _mm256_set1_epi32(static_cast<int32_t>(lo)), vhi = _mm256_set1_epi32(static_cast<int32_t>(hi));
    const int32_t z = z_;
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / OH, oh = r % OH;
      int64_t h0, h1, ch0, ch1;
      clip(oh * sh - bh, kh, 0, H, h0, h1);
      if (exclude) ch0 = h0, ch1 = h1;
      else clip(oh * sh - bh, kh, -bh, H + eh, ch0, ch1);
      if (separable) {
        // each input column's sum over the window's rows
        const I* img = x + n * H * WC;
        int64_t i = 0;
        for (; i + 8 <= WC; i += 8) {
          __m256i acc = _mm256_setzero_si256();
          for (int64_t ih = h0; ih < h1; ++ih) acc = _mm256_add_epi32(acc, widen8<I>(img + ih * WC + i));
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(cols + i), acc);
        }
        for (; i < WC; ++i) {
          int32_t a = 0;
          for (int64_t ih = h0; ih < h1; ++ih) a += img[ih * WC + i];
          cols[i] = a;
        }
      }
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t w0, w1, cw0, cw1;
        clip(ow * sw - bw, kw, 0, W, w0, w1);
        if (exclude) cw0 = w0, cw1 = w1;
        else clip(ow * sw - bw, kw, -bw, W + ew, cw0, cw1);
        const int32_t valid = static_cast<int32_t>((h1 - h0) * (w1 - w0));
        const float count = static_cast<float>((ch1 - ch0) * (cw1 - cw0));
        const __m256 vcount = _mm256_set1_ps(count);
        const int32_t zsum = valid * z;
        const __m256i vzsum = _mm256_set1_epi32(zsum);
        O* dst = y + (n * OH * OW + oh * OW + ow) * C;
        int64_t c = 0;
        for (; c < C8; c += 8) {
          __m256i acc = _mm256_setzero_si256();
          if (separable) {
            for (int64_t iw = w0; iw < w1; ++iw)
              acc = _mm256_add_epi32(acc, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cols + iw * C + c)));
          } else {
            for (int64_t ih = h0; ih < h1; ++ih)
              for (int64_t iw = w0; iw < w1; ++iw) acc = _mm256_add_epi32(acc, widen8<I>(x + ((n * H + ih) * W + iw) * C + c));
          }
          __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(acc, vzsum)), vs);
          v = _mm256_div_ps(_mm256_div_ps(v, vcount), vso);
          v = _mm256_min_ps(_mm256_max_ps(v, vnbig), vbig);  // NaN -> the low bound, as rows()
          __m256i iv = _mm256_add_epi32(_mm256_cvtps_epi32(v), vzo);
          iv = _mm256_min_epi32(_mm256_max_epi32(iv, vlo), vhi);
          store8<O>(dst + c, iv);
        }
        for (; c < C; ++c) {  // rows<.., false>'s operations on one channel
          int32_t a = 0;
          if (separable) {
            for (int64_t iw = w0; iw < w1; ++iw) a += cols[iw * C + c];
          } else {
            for (int64_t ih = h0; ih < h1; ++ih)
              for (int64_t iw = w0; iw < w1; ++iw) a += x[((n * H + ih) * W + iw) * C + c];
          }
          float v = static_cast<float>(a - zsum) * s;
          v = v / count / so;
          const float big = 4194304.f, magic = 12582912.f;
          v = v > -big ? v : -big;
          v = v < big ? v : big;
          v = ((v + magic) - magic) + zo;
          v = v > lo ? v : lo;
          v = v < hi ? v : hi;
          dst[c] = static_cast<O>(static_cast<int32_t>(v));
        }
      }
    }
  }
#endif
  template <class I, class O>
  OPFORGE_AVG_POOL_AVX512 void rows_avx512(const I* x, O* y, float lo, float hi, int64_t r0, int64_t r1) const {
    rows<I, O, true>(x, y, lo, hi, r0, r1);
  }
  // Output rows [r0, r1) of N * OH. (Everything the loops read is a local: a store through a
  // byte pointer may alias any object the compiler can see, and the loops would not vectorise.)
  // (kFma: the AVX-512 build, whose divisions are a product and one FMA correction step: the
  // correctly rounded quotient, as the reference's division, at a third of a vdivps's cost; two
  // divisions per output were half the kernel's time)
  template <class I, class O, bool kFma>
  OPFORGE_INT8_INLINE void rows(const I* x, O* y, float lo, float hi, int64_t r0, int64_t r1) const {
    const int64_t C = C_, H = H_, W = W_, OH = OH_, OW = OW_;
    // output strides: channel, pixel (oh * OW + ow), image
    const int64_t sc = channels_last_out_ ? 1 : OH * OW, sp = channels_last_out_ ? C : 1, sn = C * OH * OW;
    std::vector<int32_t> acc_v(C);
    std::vector<float> real_v(C);
    int32_t* acc = acc_v.data();
    float* real = real_v.data();
    // A window sliding by one column (Inception's 3x3 stride-1 pools) is summed in two passes:
    // each input column's sum over the window's rows once per output row, then kw of those per
    // output (kh + kw additions per output instead of kh * kw)
    const bool separable = sw_ == 1 && kw_ > 1 && kh_ > 1;
    std::vector<int32_t> cols_v(separable ? W * C : 0);
    int32_t* cols = cols_v.data();
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / OH, oh = r % OH;
      int64_t h0, h1, ch0, ch1;
      clip(oh * sh_ - bh_, kh_, 0, H, h0, h1);
      if (exclude_) ch0 = h0, ch1 = h1;
      else clip(oh * sh_ - bh_, kh_, -bh_, H + eh_, ch0, ch1);
      if (separable) {
        for (int64_t i = 0; i < W * C; ++i) cols[i] = 0;
        for (int64_t ih = h0; ih < h1; ++ih) {
          const I* row = x + (n * H + ih) * W * C;
          for (int64_t i = 0; i < W * C; ++i) cols[i] += row[i];
        }
      }
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t w0, w1, cw0, cw1;
        clip(ow * sw_ - bw_, kw_, 0, W, w0, w1);
        if (exclude_) cw0 = w0, cw1 = w1;
        else clip(ow * sw_ - bw_, kw_, -bw_, W + ew_, cw0, cw1);
        for (int64_t c = 0; c < C; ++c) acc[c] = 0;
        if (separable) {
          for (int64_t iw = w0; iw < w1; ++iw) {
            const int32_t* col = cols + iw * C;
            for (int64_t c = 0; c < C; ++c) acc[c] += col[c];
          }
        } else {
          for (int64_t ih = h0; ih < h1; ++ih) {
            const I* row = x + ((n * H + ih) * W + w0) * C;
            for (int64_t iw = w0; iw < w1; ++iw, row += C)
              for (int64_t c = 0; c < C; ++c) acc[c] += row[c];
          }
        }
        const int32_t valid = static_cast<int32_t>((h1 - h0) * (w1 - w0));
        const float count = static_cast<float>((ch1 - ch0) * (cw1 - cw0));
        const int32_t zsum = valid * z_;
        const float s = s_, so = so_, zo = zo_, inv_so = 1.f / so_, inv_count = 1.f / count;
        O* dst = y + n * sn + (oh * OW + ow) * sp;
        for (int64_t c = 0; c < C; ++c) {
          // (count 0: a window wholly in the padding, which exclude_pad refuses; NaN -> lo)
          float v = static_cast<float>(acc[c] - zsum) * s;
          if constexpr (kFma) {
            float q = v * inv_count;
            v = __builtin_fmaf(__builtin_fmaf(-q, count, v), inv_count, q);
            q = v * inv_so;
            v = __builtin_fmaf(__builtin_fmaf(-q, so, v), inv_so, q);
          } else {
            v = v / count / so;
          }
          const float big = 4194304.f, magic = 12582912.f;
          v = v > -big ? v : -big;
          v = v < big ? v : big;
          v = ((v + magic) - magic) + zo;  // half to even, as rint in the default mode
          v = v > lo ? v : lo;
          v = v < hi ? v : hi;
          real[c] = v;
        }
        if (sc == 1) {
          for (int64_t c = 0; c < C; ++c) dst[c] = static_cast<O>(static_cast<int32_t>(real[c]));
        } else {
          for (int64_t c = 0; c < C; ++c) dst[c * sc] = static_cast<O>(static_cast<int32_t>(real[c]));
        }
      }
    }
  }

  int64_t N_ = 0, C_ = 0, H_ = 0, W_ = 0, OH_ = 0, OW_ = 0;
  int64_t kh_ = 1, kw_ = 1, sh_ = 1, sw_ = 1, bh_ = 0, bw_ = 0, eh_ = 0, ew_ = 0;
  bool exclude_ = false, channels_last_out_ = false;
  DType in_ = DType::u8, out_ = DType::u8;
  float s_ = 1.f, so_ = 1.f, zo_ = 0.f;
  int32_t z_ = 0;
};
}  // namespace

std::string check_quantized_avg_pool(const NodeDesc& n) {
  if (!is_int8(n.in(0).dtype)) return std::string("input is ") + dtype_name(n.in(0).dtype) + ", expected u8 or i8";
  if (n.outputs.empty() || !is_int8(n.outputs[0].dtype)) return "output must be u8 or i8";
  if (n.in(0).shape.size() != 4 || n.outputs[0].shape.size() != 4) return "only 2D pooling (rank 4) is supported";
  for (const char* k : {"kernel", "strides", "window_begin", "window_end"}) {
    auto v = n.attrs.ints(k, {});
    if (v.size() != 2) return std::string(k) + " needs 2 values";
  }
  for (auto v : n.attrs.ints("kernel")) if (v < 1) return "kernel sizes must be positive";
  for (auto v : n.attrs.ints("strides")) if (v < 1) return "strides must be positive";
  for (const char* k : {"src_scale", "dst_scale"}) {
    const double s = n.attrs.f(k, 0.0);
    if (!(s > 0) || !std::isfinite(s)) return std::string(k) + " must be positive and finite";
  }
  return "";
}

std::unique_ptr<Kernel> make_quantized_avg_pool(NodeDesc& n) {
  std::string why = check_quantized_avg_pool(n);
  if (!why.empty()) throw CompileFailure(why);
  return std::make_unique<QuantizedAvgPoolKernel>(n);
}

OPFORGE_KERNEL(QuantizedAvgPool, make_quantized_avg_pool, check_quantized_avg_pool).layout_flexible();

}  // namespace opforge_cpu
