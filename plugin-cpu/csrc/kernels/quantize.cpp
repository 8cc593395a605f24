// Quantize (opforge_cpu/ops/quantize.py): f32 -> u8/s8, saturate(round_half_to_even(x / scale) +
// zero_point), exactly QuantizeLinear's arithmetic (a division, not a reciprocal's product: the
// two differ at .5 ties). A blocked source (from a pooling) is first reordered to plain in scratch.
#include <cmath>
#include <type_traits>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define OPFORGE_QUANTIZE_AVX512 1
#endif

#include "core/elementwise.hpp"
#include "kernels/int8_layout.hpp"
#include "kernels/quantized_common.hpp"

namespace opforge_cpu {

namespace {
struct PlainBound : Bound {
  std::unordered_map<int, dnnl::memory> reorder_args;
  const void* src = nullptr;
};
}  // namespace

// The quantize/dequantize loop, over a plain view of the source. oneDNN's reorder would do the
// same with scale and zero-point attributes, but oneDNN 3.2's reorder from a blocked u8 layout
// silently drops the source zero point (measured: every element off by scale * zero_point).
class ScaledConvertKernel : public Kernel {
 public:
  ScaledConvertKernel(const TensorInfo& src, const TensorInfo& dst, bool quantize, float scale, int32_t zero_point)
      : quantize_(quantize), scale_(scale), zero_point_(zero_point), src_type_(src.dtype), dst_type_(dst.dtype) {
    if (src.blocked) {
      auto plain = plain_md(src.dtype, src.shape);
      reorder_ = dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), src.md, cpu_engine(), plain));
      src_md_ = src.md;
      plain_md_ = plain;
      scratch_ = (plain.get_size() + 63) / 64 * 64;
    }
  }
  size_t scratch_bytes() const override { return scratch_; }
  std::string impl_name() const override {
    return std::string(scratch_ ? "reorder+loop" : "loop") + (wide() ? ":avx512" : "");
  }
  std::unique_ptr<Bound> bind(const TensorView* in, size_t, const TensorView*, size_t, void* scratch) override {
    auto b = std::make_unique<PlainBound>();
    b->src = in[0].data;
    if (scratch_) {
      auto& eng = cpu_engine();
      b->reorder_args = {{DNNL_ARG_FROM, dnnl::memory(src_md_, eng, in[0].data)},
                         {DNNL_ARG_TO, dnnl::memory(plain_md_, eng, scratch)}};
      b->src = scratch;
    }
    return b;
  }
  void run(RunContext& ctx, const TensorView*, TensorView* out, Bound* bound) override {
    auto* b = static_cast<PlainBound*>(bound);
    if (scratch_) {
      reorder_.execute(*ctx.stream, b->reorder_args);
      ctx.stream->wait();
    }
    const int64_t n = out[0].size();
    if (quantize_) {
      const float* x = static_cast<const float*>(b->src);
      if (dst_type_ == DType::u8) quantize_with<uint8_t>(ctx, x, out[0].ptr<uint8_t>(), n, scale_, zero_point_, 0.f, 255.f);
      else quantize_with<int8_t>(ctx, x, out[0].ptr<int8_t>(), n, scale_, zero_point_, -128.f, 127.f);
    } else {
      if (src_type_ == DType::u8) dequantize_loop<uint8_t>(ctx, static_cast<const uint8_t*>(b->src), out[0].ptr<float>(), n);
      else dequantize_loop<int8_t>(ctx, static_cast<const int8_t*>(b->src), out[0].ptr<float>(), n);
    }
  }
  // The loop with the scale and zero point given (quantize_u8 below: DynamicQuantize's scale
  // and zero point come with each run).
  template <class Q>
  static void quantize_with(RunContext& ctx, const float* x, Q* y, int64_t n, float s, int32_t z, float lo, float hi) {
    const bool w = wide();
    parallel_range(n, ctx.num_threads, [&](int64_t b, int64_t e) {
#ifdef OPFORGE_QUANTIZE_AVX512
      if (w) b = quantize_avx512<Q>(x, y, b, e, s, z);
#endif
      quantize_span<Q>(x, y, b, e, s, z, lo, hi);
    });
  }

 private:
  // AVX-512 builds of both loops (the build targets baseline x86-64; int8_layout.hpp): 16 lanes
  // of the same operations in the same order, so the same bytes and floats. The SSE2 quantize
  // and the compiler's SSE2 dequantize were EdgeNeXt int8's fourth and seventh largest node
  // types (1.05 and 0.63 ms at 1 thread: 37 LayerNorm outputs and GELU inputs a run).
  static bool wide() {
#ifdef OPFORGE_QUANTIZE_AVX512
    return int8_avx512();
#else
    return false;
#endif
  }
#ifdef OPFORGE_QUANTIZE_AVX512
  // Elements [b, e) in whole vectors of 16; returns where the scalar tail starts.
  // The quotient is a product by the reciprocal and one FMA correction step (Markstein: with r
  // the correctly rounded 1/s and q within an ulp of x/s, q + (x - q*s)*r rounds to the correctly
  // rounded x/s, the residual being exact in an FMA), at a third of a vdivps's cost, which bound
  // the loop (EdgeNeXt's 150K-element LayerNorm outputs: 45 us each). An infinite product keeps
  // itself (its residual is NaN). Only for scales whose reciprocal is a normal float.
  template <class Q>
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma"))) static int64_t quantize_avx512(
      const float* x, Q* y, int64_t b, int64_t e, float s, int32_t z) {
    const float r = 1.f / s;
    const bool product = std::isnormal(s) && std::isnormal(r);
    const __m512 vs = _mm512_set1_ps(s), vr = _mm512_set1_ps(r);
    const __m512 vlo = _mm512_set1_ps(-1073741824.f), vhi = _mm512_set1_ps(1073741824.f);
    const __m512i vz = _mm512_set1_epi32(z);
    const __m512i qlo = _mm512_set1_epi32(std::is_same<Q, uint8_t>::value ? 0 : -128);
    const __m512i qhi = _mm512_set1_epi32(std::is_same<Q, uint8_t>::value ? 255 : 127);
    int64_t i = b;
    for (; i + 16 <= e; i += 16) {
      const __m512 xv = _mm512_loadu_ps(x + i);
      __m512 v;
      if (product) {
        const __m512 q = _mm512_mul_ps(xv, vr);
        v = _mm512_fmadd_ps(_mm512_fnmadd_ps(q, vs, xv), vr, q);
        v = _mm512_mask_blend_ps(_mm512_fpclass_ps_mask(q, 0x18), v, q);  // +-inf: keep it
      } else {
        v = _mm512_div_ps(xv, vs);
      }
      v = _mm512_min_ps(_mm512_max_ps(v, vlo), vhi);  // NaN -> the low bound, as the SSE2 loop
      __m512i qi = _mm512_add_epi32(_mm512_cvtps_epi32(v), vz);
      qi = _mm512_min_epi32(_mm512_max_epi32(qi, qlo), qhi);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm512_cvtepi32_epi8(qi));
    }
    return i;
  }
  template <class Q>
  OPFORGE_INT8_AVX512 static int64_t dequantize_avx512(const Q* x, float* y, int64_t b, int64_t e, float s, float z) {
    const __m512 vs = _mm512_set1_ps(s), vz = _mm512_set1_ps(z);
    int64_t i = b;
    for (; i + 16 <= e; i += 16) {
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
      const __m512i w = std::is_same<Q, uint8_t>::value ? _mm512_cvtepu8_epi32(bytes) : _mm512_cvtepi8_epi32(bytes);
      _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(w), vz), vs));
    }
    return i;
  }
#endif
  // x / s rounded half to even (cvtps2dq rounds in the default mode: to nearest even), plus z,
  // saturated by the packing instructions. The float is clamped to +-2^30 first so that a huge
  // value (or inf) saturates on the right side; NaN goes to the low bound (maxps keeps its
  // second operand when either is NaN). SSE2 only: the plain x86-64 build has nothing newer,
  // and the compiler neither vectorises the scalar form nor inlines nearbyint (10 ms per
  // resnet18 inference with a libm call per element).
  template <class Q>
  static void quantize_span(const float* x, Q* y, int64_t b, int64_t e, float s, int32_t z, float lo, float hi) {
    const float big = 1073741824.f;
    int64_t i = b;
#if defined(__SSE2__)
    const __m128 vs = _mm_set1_ps(s), vlo = _mm_set1_ps(-big), vhi = _mm_set1_ps(big);
    const __m128i vz = _mm_set1_epi32(z);
    auto one = [&](int64_t k) {
      __m128 v = _mm_div_ps(_mm_loadu_ps(x + k), vs);
      v = _mm_min_ps(_mm_max_ps(v, vlo), vhi);
      return _mm_add_epi32(_mm_cvtps_epi32(v), vz);
    };
    for (; i + 16 <= e; i += 16) {
      __m128i a = _mm_packs_epi32(one(i), one(i + 4)), c = _mm_packs_epi32(one(i + 8), one(i + 12));
      __m128i packed = std::is_same<Q, uint8_t>::value ? _mm_packus_epi16(a, c) : _mm_packs_epi16(a, c);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), packed);
    }
#endif
    for (; i < e; ++i) {
      float v = x[i] / s;
      v = v > -big ? (v < big ? v : big) : -big;
      const float q = std::nearbyint(v) + static_cast<float>(z);
      y[i] = static_cast<Q>(q >= lo ? (q <= hi ? q : hi) : lo);
    }
  }
  template <class Q> void dequantize_loop(RunContext& ctx, const Q* x, float* y, int64_t n) const {
    const float s = scale_, z = static_cast<float>(zero_point_);
    const bool w = wide();
    parallel_range(n, ctx.num_threads, [&](int64_t b, int64_t e) {
#ifdef OPFORGE_QUANTIZE_AVX512
      if (w) b = dequantize_avx512<Q>(x, y, b, e, s, z);
#endif
      for (int64_t i = b; i < e; ++i) y[i] = (static_cast<float>(x[i]) - z) * s;
    });
  }

  bool quantize_;
  float scale_;
  int32_t zero_point_;
  DType src_type_, dst_type_;
  dnnl::reorder reorder_;
  dnnl::memory::desc src_md_, plain_md_;
  size_t scratch_ = 0;
};

float positive_scale(const NodeDesc& n) {
  const double s = n.attrs.f("scale");
  if (!(s > 0) || !std::isfinite(s)) throw CompileFailure("scale must be positive and finite, got " + std::to_string(s));
  return static_cast<float>(s);
}

std::unique_ptr<Kernel> make_scaled_convert(const TensorInfo& src, const TensorInfo& dst, bool quantize, float scale,
                                            int32_t zero_point) {
  return std::make_unique<ScaledConvertKernel>(src, dst, quantize, scale, zero_point);
}

void quantize_u8(RunContext& ctx, const float* x, uint8_t* y, int64_t n, float scale, int32_t zero_point) {
  ScaledConvertKernel::quantize_with<uint8_t>(ctx, x, y, n, scale, zero_point, 0.f, 255.f);
}

std::string check_quantize(const NodeDesc& n) {
  if (n.in(0).dtype != DType::f32) return std::string("input is ") + dtype_name(n.in(0).dtype) + ", expected f32";
  if (!n.outputs.empty() && n.outputs[0].dtype != DType::u8 && n.outputs[0].dtype != DType::i8)
    return "output must be u8 or i8";
  return "";
}

std::unique_ptr<Kernel> make_quantize(NodeDesc& n) {
  std::string why = check_quantize(n);
  if (!why.empty()) throw CompileFailure(why);
  return make_scaled_convert(n.in(0), n.outputs[0], true, positive_scale(n),
                             static_cast<int32_t>(n.attrs.i("zero_point", 0)));
}

OPFORGE_KERNEL(Quantize, make_quantize, check_quantize).layout_flexible();

}  // namespace opforge_cpu
