// Swish-4: x * sigmoid(beta * x); `beta` is an optional scalar second input (1.0 when absent),
// read at run time so a computed beta needs no re-planning.
#include "kernels/common.hpp"

namespace opforge_cpu {

namespace {
template <class T> class SwishKernel : public ElementwiseKernel {
 public:
  explicit SwishKernel(const NodeDesc& n) : ElementwiseKernel(n), has_beta_(n.inputs.size() > 1) {}
  std::string impl_name() const override { return "swish"; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const T beta = has_beta_ ? in[1].ptr<T>()[0] : T(1);
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    parallel_range(out[0].size(), ctx.num_threads, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const T v = x[i];
        y[i] = static_cast<T>(v / (T(1) + std::exp(-beta * v)));
      }
    });
  }

 private:
  bool has_beta_;
};
}  // namespace

std::unique_ptr<Kernel> make_swish(NodeDesc& n) {
  std::unique_ptr<Kernel> k;
  dispatch_float(n.in(0).dtype, [&](auto tag) { k = std::make_unique<SwishKernel<OPF_TYPE_OF(tag)>>(n); });
  return k;
}

std::string check_swish(const NodeDesc& n) {
  if (n.inputs.size() > 1 && numel(n.in(1).shape) != 1) return "Swish needs a scalar beta";
  return check_unary(n, Types::Float);
}

OPFORGE_KERNEL(Swish, make_swish, check_swish);

}  // namespace opforge_cpu
