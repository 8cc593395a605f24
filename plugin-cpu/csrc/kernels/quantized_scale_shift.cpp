// QuantizedScaleShift (opforge_cpu/ops/quantized_scale_shift.py): a u8/s8 image [N, C, H, W],
// dequantized, times scale[c] plus shift[c] (a batch normalisation's, as the BatchNormInference
// kernel computes them), optionally max(., 0), quantized on the output's grid:
//   q = saturate(rint(relu(((x - z) * s) * scale[c] + shift[c]) / s_out) + z_out)
// with the product and the sum rounded one after the other (the baseline BatchNormInference
// kernel has no FMA: fp-contract is off here so that no build fuses them) and the quotient
// correctly rounded, so the bytes are those the Dequantize, BatchNormInference and Quantize kernels
// wrote one after the other. DenseNet int8's pre-activation BN after every concatenation: one
// pass over the bytes instead of three over f32 plus the reorders around them.
//
// Layout: channels-last (the channels the vector) where every reader takes it, as the quantized
// convolutions around it read and write; plain otherwise (one scale and shift per row of H * W).
// An input in the other layout is reordered into scratch first (StagedInputs).
#if defined(__GNUC__) && !defined(__clang__)
// no-trapping-math: the clamps vectorise (see quantized_eltwise.cpp); fp-contract=off: see above
#pragma GCC optimize("no-trapping-math", "fp-contract=off")
#endif
#include <cmath>
#include <cstring>
#include <numeric>
#include <type_traits>
#include <vector>

#include "core/elementwise.hpp"
#include "core/env_switch.hpp"
#include "core/host_isa.hpp"
#include "kernels/int8_layout.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define OPFORGE_SCALE_SHIFT_AVX512 1
#define OPFORGE_SCALE_SHIFT_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma")))
#endif

namespace opforge_cpu {

namespace {
bool is_int8(DType t) { return t == DType::u8 || t == DType::i8; }

struct Grid {
  float s_in = 1.f, z_in = 0.f;     // the input's dequantization
  float s_out = 1.f, z_out = 0.f;   // the output's quantization
  float lo = 0.f, hi = 255.f;       // the output type's range
};

// One element, the baseline build's arithmetic (SSE2 vectorised by the compiler). Rounding half to
// even by adding and subtracting 1.5 * 2^23 (exact below 2^22, where every value that does not
// saturate lies), as QuantizedEltwise does; a NaN (from NaN constants only) goes to the low bound,
// as the Quantize kernel sends it.
template <bool Relu> OPFORGE_INT8_INLINE float scale_shift_one(float q, float scale, float shift, const Grid& g) {
  float u = ((q - g.z_in) * g.s_in) * scale + shift;
  if (Relu && u < 0.f) u = 0.f;  // (NaN stays NaN)
  const float big = 4194304.f, magic = 12582912.f;
  float v = u / g.s_out;
  v = v > -big ? v : -big;
  v = v < big ? v : big;
  v = ((v + magic) - magic) + g.z_out;
  v = v > g.lo ? v : g.lo;
  return v < g.hi ? v : g.hi;
}

template <bool Relu, class X, class Y>
OPFORGE_INT8_INLINE void span_baseline(const X* x, Y* y, int64_t n, const float* scale, const float* shift,
                                       bool per_element, const Grid& g) {
  const Grid gg = g;  // (in locals: a store through a byte pointer may alias anything it can see)
  if (per_element) {
    for (int64_t i = 0; i < n; ++i)
      y[i] = static_cast<Y>(static_cast<int32_t>(scale_shift_one<Relu>(static_cast<float>(x[i]), scale[i], shift[i], gg)));
  } else {
    const float s = scale[0], t = shift[0];
    for (int64_t i = 0; i < n; ++i)
      y[i] = static_cast<Y>(static_cast<int32_t>(scale_shift_one<Relu>(static_cast<float>(x[i]), s, t, gg)));
  }
}

#ifdef OPFORGE_SCALE_SHIFT_AVX512
// The AVX-512 build: the same operations on 16 lanes, the quotient as in quantize.cpp's AVX-512
// loop (the product by the correctly rounded reciprocal and one FMA correction step: the
// correctly rounded x / s_out, at a third of vdivps's cost) where 1/s_out is a normal float,
// vdivps otherwise; the same bytes as the baseline build (test_cpu_int8_scale_shift.py runs both).
struct Wide {
  __m512 s_in, z_in, s_out, r_out, zero, lo, hi;
  __m512i z_out, qlo, qhi;
  bool product;
};

OPFORGE_SCALE_SHIFT_TARGET inline Wide wide_consts(const Grid& g) {
  Wide w;
  const float r = 1.f / g.s_out;
  w.product = std::isnormal(g.s_out) && std::isnormal(r);
  w.s_in = _mm512_set1_ps(g.s_in);
  w.z_in = _mm512_set1_ps(g.z_in);
  w.s_out = _mm512_set1_ps(g.s_out);
  w.r_out = _mm512_set1_ps(r);
  w.zero = _mm512_setzero_ps();
  w.lo = _mm512_set1_ps(-1073741824.f);
  w.hi = _mm512_set1_ps(1073741824.f);
  w.z_out = _mm512_set1_epi32(static_cast<int32_t>(g.z_out));
  w.qlo = _mm512_set1_epi32(static_cast<int32_t>(g.lo));
  w.qhi = _mm512_set1_epi32(static_cast<int32_t>(g.hi));
  return w;
}

// 16 bytes (as int32 lanes) -> 16 output bytes
template <bool Relu>
OPFORGE_SCALE_SHIFT_TARGET inline __m128i scale_shift16(__m512i q, __m512 scale, __m512 shift, const Wide& w) {
  const __m512 d = _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(q), w.z_in), w.s_in);
  __m512 u = _mm512_add_ps(_mm512_mul_ps(d, scale), shift);
  if (Relu) u = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(u, w.zero, _CMP_LT_OQ), u, w.zero);  // NaN stays NaN
  __m512 v;
  if (w.product) {
    const __m512 p = _mm512_mul_ps(u, w.r_out);
    v = _mm512_fmadd_ps(_mm512_fnmadd_ps(p, w.s_out, u), w.r_out, p);
    v = _mm512_mask_blend_ps(_mm512_fpclass_ps_mask(p, 0x18), v, p);  // +-inf: keep it
  } else {
    v = _mm512_div_ps(u, w.s_out);
  }
  v = _mm512_min_ps(_mm512_max_ps(v, w.lo), w.hi);  // NaN -> the low bound, as the baseline
  __m512i r = _mm512_add_epi32(_mm512_cvtps_epi32(v), w.z_out);
  r = _mm512_min_epi32(_mm512_max_epi32(r, w.qlo), w.qhi);
  return _mm512_cvtepi32_epi8(r);
}

template <class X> OPFORGE_SCALE_SHIFT_TARGET inline __m512i load16(const X* x, __mmask16 k) {
  const __m128i b = _mm_maskz_loadu_epi8(k, x);
  return std::is_same<X, uint8_t>::value ? _mm512_cvtepu8_epi32(b) : _mm512_cvtepi8_epi32(b);
}

// n elements; per_element: scale[i], shift[i] for element i (a channels-last pixel), else one
// scale and shift for all (a plain row)
template <bool Relu, class X, class Y>
OPFORGE_SCALE_SHIFT_TARGET void span_avx512(const X* x, Y* y, int64_t n, const float* scale, const float* shift,
                                            bool per_element, const Wide& w) {
  __m512 s = _mm512_set1_ps(scale[0]), t = _mm512_set1_ps(shift[0]);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (n - i)) - 1u);
    if (per_element) {
      s = _mm512_maskz_loadu_ps(k, scale + i);
      t = _mm512_maskz_loadu_ps(k, shift + i);
    }
    _mm_mask_storeu_epi8(y + i, k, scale_shift16<Relu>(load16(x + i, k), s, t, w));
  }
}

// An AVX2 host (no AVX-512; ONEDNN_MAX_CPU_ISA=AVX2 emulates one): the AVX-512 build's operations
// 8 lanes wide (the infinite products found by comparing |p| with inf, no fpclass), the last
// n % 8 elements by the baseline loop; the same bytes. The compiler's SSE2 vectorisation of the
// baseline loop took 8.4 ms over densenet121's 62 BNs (emulated AVX2), more than the Dequantize,
// BatchNormInference and Quantize kernels it replaces (6.4 ms). OPFORGE_CPU_INT8_AVX2=0: the
// baseline (the switch of QuantizedInterpolate's AVX2 build).
#define OPFORGE_SCALE_SHIFT_AVX2 __attribute__((target("avx2,fma")))
bool scale_shift_avx2() {
  static const bool on = host_has_avx2_fma() && env_switch_on("OPFORGE_CPU_INT8_AVX2");
  return on;
}

struct Mid {
  __m256 s_in, z_in, s_out, r_out, zero, lo, hi, inf, abs_mask;
  __m256i z_out, qlo, qhi;
  bool product;
};

OPFORGE_SCALE_SHIFT_AVX2 inline Mid mid_consts(const Grid& g) {
  Mid w;
  const float r = 1.f / g.s_out;
  w.product = std::isnormal(g.s_out) && std::isnormal(r);
  w.s_in = _mm256_set1_ps(g.s_in);
  w.z_in = _mm256_set1_ps(g.z_in);
  w.s_out = _mm256_set1_ps(g.s_out);
  w.r_out = _mm256_set1_ps(r);
  w.zero = _mm256_setzero_ps();
  w.lo = _mm256_set1_ps(-1073741824.f);
  w.hi = _mm256_set1_ps(1073741824.f);
  w.inf = _mm256_set1_ps(INFINITY);
  w.abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  w.z_out = _mm256_set1_epi32(static_cast<int32_t>(g.z_out));
  w.qlo = _mm256_set1_epi32(static_cast<int32_t>(g.lo));
  w.qhi = _mm256_set1_epi32(static_cast<int32_t>(g.hi));
  return w;
}

// 8 bytes (as int32 lanes) -> 8 results in the output's range, as int32 lanes
template <bool Relu>
OPFORGE_SCALE_SHIFT_AVX2 inline __m256i scale_shift8(__m256i q, __m256 scale, __m256 shift, const Mid& w) {
  const __m256 d = _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(q), w.z_in), w.s_in);
  __m256 u = _mm256_add_ps(_mm256_mul_ps(d, scale), shift);
  if (Relu) u = _mm256_blendv_ps(u, w.zero, _mm256_cmp_ps(u, w.zero, _CMP_LT_OQ));  // NaN stays NaN
  __m256 v;
  if (w.product) {
    const __m256 p = _mm256_mul_ps(u, w.r_out);
    v = _mm256_fmadd_ps(_mm256_fnmadd_ps(p, w.s_out, u), w.r_out, p);
    v = _mm256_blendv_ps(v, p, _mm256_cmp_ps(_mm256_and_ps(p, w.abs_mask), w.inf, _CMP_EQ_OQ));  // +-inf: keep it
  } else {
    v = _mm256_div_ps(u, w.s_out);
  }
  v = _mm256_min_ps(_mm256_max_ps(v, w.lo), w.hi);  // NaN -> the low bound, as the baseline
  const __m256i r = _mm256_add_epi32(_mm256_cvtps_epi32(v), w.z_out);
  return _mm256_min_epi32(_mm256_max_epi32(r, w.qlo), w.qhi);
}

template <bool Relu, class X, class Y>
OPFORGE_SCALE_SHIFT_AVX2 void span_avx2(const X* x, Y* y, int64_t n, const float* scale, const float* shift,
                                        bool per_element, const Mid& w, const Grid& g) {
  __m256 s = _mm256_set1_ps(scale[0]), t = _mm256_set1_ps(shift[0]);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    if (per_element) {
      s = _mm256_loadu_ps(scale + i);
      t = _mm256_loadu_ps(shift + i);
    }
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + i));
    const __m256i q = std::is_same<X, uint8_t>::value ? _mm256_cvtepu8_epi32(b) : _mm256_cvtepi8_epi32(b);
    const __m256i r = scale_shift8<Relu>(q, s, t, w);
    // (in range already: the saturating packs change nothing)
    const __m128i h = _mm_packs_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
    const __m128i bytes = std::is_same<Y, uint8_t>::value ? _mm_packus_epi16(h, h) : _mm_packs_epi16(h, h);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), bytes);
  }
  if (i < n) span_baseline<Relu>(x + i, y + i, n - i, per_element ? scale + i : scale, per_element ? shift + i : shift,
                                 per_element, g);
}
#endif

class QuantizedScaleShiftKernel : public StagedKernel {
 public:
  explicit QuantizedScaleShiftKernel(NodeDesc& n) {
    const Shape& xs = n.in(0).shape;
    c_ = xs[1];
    hw_ = xs[2] * xs[3];
    planes_ = xs[0] * c_;
    pixels_ = xs[0] * hw_;
    tx_ = n.in(0).dtype;
    ty_ = n.outputs[0].dtype;
    relu_ = n.attrs.b("relu", false);
    const bool u8 = ty_ == DType::u8;
    grid_ = {static_cast<float>(n.attrs.f("src_scale")), static_cast<float>(n.attrs.i("src_zero_point", 0)),
             static_cast<float>(n.attrs.f("dst_scale")), static_cast<float>(n.attrs.i("dst_zero_point", 0)),
             u8 ? 0.f : -128.f, u8 ? 255.f : 127.f};
    scale_.resize(static_cast<size_t>(c_));
    shift_.resize(static_cast<size_t>(c_));
    std::memcpy(scale_.data(), n.inputs[1].const_data, scale_.size() * sizeof(float));
    std::memcpy(shift_.data(), n.inputs[2].const_data, shift_.size() * sizeof(float));
    channels_last_ = !n.allow_blocked_output.empty() && n.allow_blocked_output[0];
    std::vector<int> order(4);
    std::iota(order.begin(), order.end(), 0);
    if (channels_last_) order = channels_last_order(4);
    staged_.add(n.in(0), order);
    n.outputs[0].md = ordered_md(ty_, n.outputs[0].shape, order);
    n.outputs[0].blocked = channels_last_;
  }
  std::string impl_name() const override {
    const char* isa = int8_isa_suffix();
#ifdef OPFORGE_SCALE_SHIFT_AVX512
    if (!int8_avx512() && scale_shift_avx2()) isa = ":avx2";
#endif
    return staged_name(channels_last_ ? "loop:nhwc" : "loop") + isa;
  }
  // scale and shift were copied when the kernel was built
  bool packs_input(int i) const override { return i == 1 || i == 2; }
  // element for element: the output may be written over the input read in place
  int inplace_input(int out) const override { return out == 0 && !staged_.any() ? 0 : -1; }

 private:
  void compute(RunContext& ctx, const std::vector<const void*>& data, TensorView* out) const override {
    with_int8_input(tx_, data[0], [&](auto* x) {
      with_int8_output(ty_, out[0].data, [&](auto* y, float, float) {
        if (relu_) run_rows<true>(ctx, x, y);
        else run_rows<false>(ctx, x, y);
      });
    });
  }
  template <bool Relu, class X, class Y> void run_rows(RunContext& ctx, const X* x, Y* y) const {
    // channels-last: rows are pixels of c_ channels; plain: rows are (n, c) planes of hw_ pixels
    const int64_t rows = channels_last_ ? pixels_ : planes_, len = channels_last_ ? c_ : hw_;
    const float *scale = scale_.data(), *shift = shift_.data();
    const Grid g = grid_;
    const bool cl = channels_last_;
    const int64_t c = c_;
#ifdef OPFORGE_SCALE_SHIFT_AVX512
    const bool wide = int8_avx512(), mid = !wide && scale_shift_avx2();
#endif
    parallel_range(rows, ctx.num_threads, [&](int64_t r0, int64_t r1) {
#ifdef OPFORGE_SCALE_SHIFT_AVX512
      if (wide) {
        const Wide w = wide_consts(g);
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t k = cl ? 0 : r % c;
          span_avx512<Relu>(x + r * len, y + r * len, len, scale + k, shift + k, cl, w);
        }
        return;
      }
      if (mid) {
        const Mid w = mid_consts(g);
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t k = cl ? 0 : r % c;
          span_avx2<Relu>(x + r * len, y + r * len, len, scale + k, shift + k, cl, w, g);
        }
        return;
      }
#endif
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t k = cl ? 0 : r % c;
        span_baseline<Relu>(x + r * len, y + r * len, len, scale + k, shift + k, cl, g);
      }
    }, std::max<int64_t>(1, 32768 / std::max<int64_t>(1, len)));
  }

  int64_t c_ = 1, hw_ = 1, planes_ = 1, pixels_ = 1;
  DType tx_ = DType::u8, ty_ = DType::u8;
  bool relu_ = false, channels_last_ = false;
  Grid grid_;
  std::vector<float> scale_, shift_;
};
}  // namespace

std::string check_quantized_scale_shift(const NodeDesc& n) {
  if (n.inputs.size() != 3) return "needs the data, the scale and the shift";
  if (!is_int8(n.in(0).dtype)) return std::string("input is ") + dtype_name(n.in(0).dtype) + ", expected u8 or i8";
  const Shape& xs = n.in(0).shape;
  if (xs.size() != 4) return "input must be an image [N, C, H, W], got rank " + std::to_string(xs.size());
  for (int i = 1; i <= 2; ++i)
    if (!n.is_const(i) || n.in(i).dtype != DType::f32 || n.in(i).shape != Shape{xs[1]})
      return "input " + std::to_string(i) + " must be a constant f32 vector of the " + std::to_string(xs[1]) + " channels";
  if (n.outputs.empty() || !is_int8(n.outputs[0].dtype)) return "output must be u8 or i8";
  for (const char* k : {"src_scale", "dst_scale"}) {
    const double s = n.attrs.f(k, 0.0);
    if (!(s > 0) || !std::isfinite(s)) return std::string(k) + " must be positive and finite";
  }
  return "";
}

std::unique_ptr<Kernel> make_quantized_scale_shift(NodeDesc& n) {
  std::string why = check_quantized_scale_shift(n);
  if (!why.empty()) throw CompileFailure(why);
  return std::make_unique<QuantizedScaleShiftKernel>(n);
}

OPFORGE_KERNEL(QuantizedScaleShift, make_quantized_scale_shift, check_quantized_scale_shift).layout_flexible();

}  // namespace opforge_cpu
