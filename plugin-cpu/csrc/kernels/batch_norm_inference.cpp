// BatchNormInference-5: per-channel (axis 1) gamma * (x - mean) / sqrt(var + eps) + beta.
// Usually folded into the preceding convolution at compile time; this kernel runs the rest.
#include "core/binary_blocked.hpp"
#include "core/dnnl_util.hpp"
#include "kernels/common.hpp"

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
        for (int64_t i = 0; i < inner_; ++i) yp[i] = xp[i] * s + t;
      }
    }, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, inner_)));
  }

 private:
  int64_t n_ = 1, c_ = 1, inner_ = 1;
  double eps_ = 1e-5;
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
    for (size_t i = 1; i < n.inputs.size(); ++i) f32 = f32 && n.in(static_cast<int>(i)).dtype == DType::f32;
    if (f32 && n.inputs.size() == 5) return std::make_unique<DnnlBatchNorm>(n);
    return make_plain_inputs_kernel(n, [](NodeDesc& p) { return make_batch_norm_inference(p); });
  }
  std::unique_ptr<Kernel> k;
  dispatch_float(n.in(0).dtype, [&](auto tag) { k = std::make_unique<BatchNormKernel<OPF_TYPE_OF(tag)>>(n); });
  return k;
}

std::string check_batch_norm_inference(const NodeDesc& n) { return check_unary(n, Types::Float); }

OPFORGE_KERNEL(BatchNormInference, make_batch_norm_inference, check_batch_norm_inference).layout_flexible();

}  // namespace opforge_cpu
