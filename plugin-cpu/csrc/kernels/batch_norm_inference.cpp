// BatchNormInference-5: per-channel (axis 1) gamma * (x - mean) / sqrt(var + eps) + beta.
// Usually folded into the preceding convolution at compile time; this kernel runs the rest.
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
}  // namespace

std::unique_ptr<Kernel> make_batch_norm_inference(NodeDesc& n) {
  std::unique_ptr<Kernel> k;
  dispatch_float(n.in(0).dtype, [&](auto tag) { k = std::make_unique<BatchNormKernel<OPF_TYPE_OF(tag)>>(n); });
  return k;
}

std::string check_batch_norm_inference(const NodeDesc& n) { return check_unary(n, Types::Float); }

OPFORGE_KERNEL(BatchNormInference, make_batch_norm_inference, check_batch_norm_inference);

}  // namespace opforge_cpu
