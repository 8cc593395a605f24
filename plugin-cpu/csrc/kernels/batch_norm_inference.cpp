// BatchNormInference-5: per-channel (axis 1) gamma * (x - mean) / sqrt(var + eps) + beta.
// Usually folded into the preceding convolution at compile time; this kernel runs the rest.
#include "core/bf16_bits.hpp"
#include "core/binary_blocked.hpp"
#include "core/dnnl_util.hpp"
#include "core/host_isa.hpp"
#include "core/isa_clones.hpp"
#include "kernels/common.hpp"

#include <immintrin.h>

#include <string>
#include <utility>

namespace opforge_cpu {

namespace {
template <class T> class BatchNormKernel : public ElementwiseKernel {
 public:
  explicit BatchNormKernel(const NodeDesc& n) : ElementwiseKernel(n) {
    const Shape& s = n.in(0).shape;
    n_ = s.empty() ? 1 : s[0];
    c_ = s.size() > 1 ? s[1] : 1;
    inner_ = 1;
    for (size_t i = 2; i < s.size(); ++i) inner_ *= s[i];
    eps_ = n.attrs.f("epsilon");
    relu_ = n.attrs.b("fused_relu", false);
    inplace_ = 0;
  }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const T* x = in[0].ptr<T>();
    const T *g = in[1].ptr<T>(), *b = in[2].ptr<T>(), *m = in[3].ptr<T>(), *v = in[4].ptr<T>();
    T* y = out[0].ptr<T>();
    parallel_range(n_ * c_, ctx.num_threads, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        int64_t c = r % c_;
        double scale = g[c] / std::sqrt(static_cast<double>(v[c]) + eps_);
        double shift = b[c] - m[c] * scale;
        const T* xp = x + r * inner_;
        T* yp = y + r * inner_;
        const T s = static_cast<T>(scale), t = static_cast<T>(shift);
        if (relu_) {
          for (int64_t i = 0; i < inner_; ++i) {
            const T u = xp[i] * s + t;
            yp[i] = u < T(0) ? T(0) : u;  // (NaN stays NaN, as the Relu kernel keeps it)
          }
        } else {
          for (int64_t i = 0; i < inner_; ++i) yp[i] = xp[i] * s + t;
        }
      }
    }, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, inner_)));
  }

 private:
  int64_t n_ = 1, c_ = 1, inner_ = 1;
  double eps_ = 1e-5;
  bool relu_ = false;
};

// y = x * s[c] + t[c] (then max with 0, NaN kept) over rows of c channels.
inline __attribute__((always_inline)) void scale_shift_loops(const float* __restrict x, float* __restrict y,
                                                            const float* __restrict s, const float* __restrict t,
                                                            int64_t rows, int64_t c, bool relu) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xp = x + r * c;
    float* yp = y + r * c;
    if (relu) {
      for (int64_t i = 0; i < c; ++i) {
        const float u = xp[i] * s[i] + t[i];
        yp[i] = u < 0.f ? 0.f : u;
      }
    } else {
      for (int64_t i = 0; i < c; ++i) yp[i] = xp[i] * s[i] + t[i];
    }
  }
}
// (built per ISA, picked at run time: core/isa_clones.hpp)
OPFORGE_ISA_CLONES(, "avx512f", scale_shift_rows, scale_shift_loops,
                   (const float* __restrict x, float* __restrict y, const float* __restrict s,
                    const float* __restrict t, int64_t rows, int64_t c, bool relu),
                   (x, y, s, t, rows, c, relu))

// The same on bf16 rows (a bf16 program's DenseNet concatenation, see emit.py _bf16_storable):
// f32 arithmetic on the exact f32 value of each element, the result rounded to nearest even
// (NaN kept). AVX512_BF16 by hand: GCC's vectorisation of the portable loop (bf16_bits.hpp's
// rounding select) ran 2x slower than the f32 kernel on twice the bytes; the portable loop is
// for hosts without it.
// `y` is bf16 (uint16_t) or, where the result leaves the bf16 part of the program (DenseNet's
// last BN -> ReLU before the global pooling), f32.
template <class Out>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
void scale_shift_row_bf16_avx512(const uint16_t* x, Out* y, const float* s, const float* t, int64_t c, bool relu) {
  const __m512 zero = _mm512_setzero_ps();
  for (int64_t i = 0; i < c; i += 16) {
    const __mmask16 lanes = c - i >= 16 ? static_cast<__mmask16>(0xffff)
                                        : static_cast<__mmask16>((1u << (c - i)) - 1u);
    const __m512 v = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(lanes, x + i)), 16));
    __m512 u = _mm512_fmadd_ps(v, _mm512_maskz_loadu_ps(lanes, s + i), _mm512_maskz_loadu_ps(lanes, t + i));
    if (relu) u = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(u, zero, _CMP_LT_OQ), u, zero);  // NaN stays NaN
    if constexpr (sizeof(Out) == 2) _mm256_mask_storeu_epi16(y + i, lanes, reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(u)));
    else _mm512_mask_storeu_ps(y + i, lanes, u);
  }
}

template <class Out>
void scale_shift_rows_bf16(const uint16_t* x, Out* y, const float* s, const float* t, int64_t rows, int64_t c,
                           bool relu) {
  static const bool avx512_bf16 = host_has_avx512_bf16();
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t* xp = x + r * c;
    Out* yp = y + r * c;
    if (avx512_bf16) {
      scale_shift_row_bf16_avx512(xp, yp, s, t, c, relu);
      continue;
    }
    for (int64_t i = 0; i < c; ++i) {
      const float u = bf16_bits_to_f32(xp[i]) * s[i] + t[i];
      const float v = relu && u < 0.f ? 0.f : u;
      if constexpr (sizeof(Out) == 2) yp[i] = f32_to_bf16_bits(v);
      else yp[i] = v;
    }
  }
}

// An f32 nhwc input (brgconv's layout): the plain kernel's per-channel scale and shift (computed
// in double from the four inputs at each run: C values), applied over pixels with the channels
// as the vector, and a following ReLU fused (DenseNet's BN -> ReLU: one pass where oneDNN's batch
// norm plus the NaN-keeping Relu were two, and oneDNN's own fused ReLU would turn NaN into 0).
// Also a plain [N, C] input (`layout` "rows"), whose channels are innermost too: LeViT's
// BatchNorm1d after each Linear (48 of them), which the per-element loop of BatchNormKernel ran
// at 2.74 ms (a square root in double per element: one channel a row).
class ChannelsLastBatchNorm : public Kernel {
 public:
  // bf16: a bf16 input, written in bf16 unless `f32_out`
  ChannelsLastBatchNorm(const NodeDesc& n, bool bf16, bool f32_out, std::string layout = "nhwc")
      : bf16_(bf16), f32_out_(bf16 && f32_out), layout_(std::move(layout)) {
    const Shape& s = n.in(0).shape;
    c_ = s[1];
    pixels_ = c_ > 0 ? numel(s) / c_ : 0;
    eps_ = n.attrs.f("epsilon");
    relu_ = n.attrs.b("fused_relu", false);
  }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const float *g = in[1].ptr<float>(), *b = in[2].ptr<float>(), *m = in[3].ptr<float>(), *v = in[4].ptr<float>();
    float* st = static_cast<float*>(ctx.scratch);
    for (int64_t c = 0; c < c_; ++c) {
      const double scale = g[c] / std::sqrt(static_cast<double>(v[c]) + eps_);
      st[c] = static_cast<float>(scale);
      st[c_ + c] = static_cast<float>(b[c] - m[c] * scale);
    }
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, c_));
    if (bf16_) {
      const auto* x = static_cast<const uint16_t*>(in[0].data);
      parallel_range(pixels_, ctx.num_threads, [&](int64_t p0, int64_t p1) {
        if (f32_out_)
          scale_shift_rows_bf16(x + p0 * c_, static_cast<float*>(out[0].data) + p0 * c_, st, st + c_, p1 - p0, c_, relu_);
        else
          scale_shift_rows_bf16(x + p0 * c_, static_cast<uint16_t*>(out[0].data) + p0 * c_, st, st + c_, p1 - p0, c_,
                                relu_);
      }, grain);
      return;
    }
    const float* x = in[0].ptr<float>();
    float* y = out[0].ptr<float>();
    parallel_range(pixels_, ctx.num_threads, [&](int64_t p0, int64_t p1) {
      scale_shift_rows(x + p0 * c_, y + p0 * c_, st, st + c_, p1 - p0, c_, relu_);
    }, grain);
  }
  size_t scratch_bytes() const override { return static_cast<size_t>(2 * c_) * sizeof(float); }
  // (the planner takes it only where the sizes agree: not for bf16 -> f32)
  int inplace_input(int out) const override { return out == 0 ? 0 : -1; }
  std::string impl_name() const override {
    return std::string(relu_ ? "scale_shift_relu:" : "scale_shift:") + layout_ +
           (f32_out_ ? "_bf16_f32" : bf16_ ? "_bf16" : "");
  }

 private:
  bool bf16_ = false, f32_out_ = false;
  std::string layout_;
  int64_t c_ = 1, pixels_ = 1;
  double eps_ = 1e-5;
  bool relu_ = false;
};
// An f32 input in a convolution's layout (nhwc, nChw16c): oneDNN's inference batch norm (global
// statistics, scale and shift) in that layout, output in it too. DenseNet's pre-activation
// BN -> ReLU -> conv after each Concat then stays channels-last: before, the concat output was
// made plain for this kernel and the convolution reordered it back (1x1 convs 34 vs 29 ms).
class DnnlBatchNorm : public DnnlKernel {
 public:
  explicit DnnlBatchNorm(NodeDesc& n) {
    const auto src = n.in(0).md;
    const auto stat = dnnl::memory::desc({n.in(0).shape.at(1)}, dnnl::memory::data_type::f32,
                                         dnnl::memory::format_tag::a);
    const auto flags = dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale |
                       dnnl::normalization_flags::use_shift;
    dnnl::batch_normalization_forward::primitive_desc pd(cpu_engine(), dnnl::prop_kind::forward_inference, src, src,
                                                         static_cast<float>(n.attrs.f("epsilon")), flags,
                                                         default_attr());
    set_primitive(dnnl::batch_normalization_forward(pd), pd);
    arg_input(DNNL_ARG_SRC, 0, src);
    arg_input(DNNL_ARG_SCALE, 1, stat);
    arg_input(DNNL_ARG_SHIFT, 2, stat);
    arg_input(DNNL_ARG_MEAN, 3, stat);
    arg_input(DNNL_ARG_VARIANCE, 4, stat);
    arg_output(DNNL_ARG_DST, 0, pd.dst_desc());
    n.outputs[0].blocked = true;
    n.outputs[0].md = pd.dst_desc();
  }
  // (oneDNN's batch norm may write over its source)
  int inplace_input(int out) const override { return out == 0 ? 0 : -1; }
};
}  // namespace

std::unique_ptr<Kernel> make_batch_norm_inference(NodeDesc& n) {
  const TensorInfo& x = n.in(0);
  if (x.blocked) {
    bool f32 = x.dtype == DType::f32 && x.md.get_data_type() == dnnl::memory::data_type::f32 && x.shape.size() >= 3;
    bool params = n.inputs.size() == 5;
    for (size_t i = 1; i < n.inputs.size(); ++i) params = params && n.in(static_cast<int>(i)).dtype == DType::f32;
    f32 = f32 && params;
    // nhwc, f32 or bf16 (a bf16 program's tensor, see emit.py _bf16_storable: written back in
    // bf16 where the emitter set "bf16_output", for the bf16 convolution that reads it, else f32)
    using dt = dnnl::memory::data_type;
    for (dt t : {dt::f32, dt::bf16}) {
      if (params && x.dtype == DType::f32 && x.shape.size() == 4 &&
          x.md == dnnl::memory::desc(to_dims(x.shape), t, dnnl::memory::format_tag::acdb)) {
        const bool f32_out = t == dt::bf16 && !n.attrs.b("bf16_output", false);
        n.outputs[0].blocked = true;
        n.outputs[0].md = f32_out ? dnnl::memory::desc(to_dims(x.shape), dt::f32, dnnl::memory::format_tag::acdb) : x.md;
        return std::make_unique<ChannelsLastBatchNorm>(n, t == dt::bf16, f32_out);
      }
    }
    // (oneDNN's batch norm has no ReLU that keeps NaN: a fused one runs on plain data)
    if (f32 && n.inputs.size() == 5 && !n.attrs.b("fused_relu", false)) return std::make_unique<DnnlBatchNorm>(n);
    return make_plain_inputs_kernel(n, [](NodeDesc& p) { return make_batch_norm_inference(p); });
  }
  // plain f32 [N, C] (every axis after the channels of size 1): channels innermost, as nhwc
  bool rows = x.dtype == DType::f32 && x.shape.size() >= 2 && n.inputs.size() == 5 && x.shape[1] > 0;
  for (size_t i = 2; rows && i < x.shape.size(); ++i) rows = x.shape[i] == 1;
  for (size_t i = 1; rows && i < n.inputs.size(); ++i) rows = n.in(static_cast<int>(i)).dtype == DType::f32;
  if (rows) return std::make_unique<ChannelsLastBatchNorm>(n, false, false, "rows");
  std::unique_ptr<Kernel> k;
  dispatch_float(n.in(0).dtype, [&](auto tag) { k = std::make_unique<BatchNormKernel<OPF_TYPE_OF(tag)>>(n); });
  return k;
}

std::string check_batch_norm_inference(const NodeDesc& n) { return check_unary(n, Types::Float); }

OPFORGE_KERNEL(BatchNormInference, make_batch_norm_inference, check_batch_norm_inference).layout_flexible();

}  // namespace opforge_cpu
