// Swish-4: x * sigmoid(beta * x); `beta` is an optional scalar second input (1.0 when absent).
// f32 with no beta or a constant one runs oneDNN's eltwise_swish (alpha = beta) in the input's
// layout, blocked or plain, so SiLU between two convolutions costs no reorder. f64, and a beta
// that is not a constant when the kernel is built (planning normally makes it one: beta is a
// value input), run the loop below, which reads beta at run time.
// Without beta it is also the post-op of a convolution/MatMul before it (FuseSwish makes such
// Swishes out of x * Sigmoid(x)); a node with a beta input is never fused, as the post-op
// builder sees attributes only.
#include "kernels/common.hpp"

namespace opforge_cpu {

Eltwise swish_eltwise(const Attrs&) { return {dnnl::algorithm::eltwise_swish, 1.f}; }

namespace {
template <class T> class SwishKernel : public ElementwiseKernel {
 public:
  explicit SwishKernel(const NodeDesc& n)
      : ElementwiseKernel(n),
        has_beta_(n.inputs.size() > 1),
        // a blocked tensor is element-wise like a plain one, padding included (swish(0) = 0)
        count_(n.in(0).blocked ? static_cast<int64_t>(n.in(0).md.get_size() / sizeof(T)) : numel(n.in(0).shape)) {}
  std::string impl_name() const override { return "swish"; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const T beta = has_beta_ ? in[1].ptr<T>()[0] : T(1);
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    parallel_range(count_, ctx.num_threads, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const T v = x[i];
        y[i] = static_cast<T>(v / (T(1) + std::exp(-beta * v)));
      }
    });
  }

 private:
  bool has_beta_;
  int64_t count_;
};
}  // namespace

std::unique_ptr<Kernel> make_swish(NodeDesc& n) {
  std::unique_ptr<Kernel> k;
  if (n.in(0).dtype == DType::f32 && (n.inputs.size() == 1 || n.is_const(1))) {
    const float beta = n.inputs.size() > 1 ? static_cast<float>(n.const_floats(1).at(0)) : 1.f;
    k = make_dnnl_eltwise(n, Eltwise{dnnl::algorithm::eltwise_swish, beta});
  } else {
    dispatch_float(n.in(0).dtype, [&](auto tag) { k = std::make_unique<SwishKernel<OPF_TYPE_OF(tag)>>(n); });
  }
  if (n.in(0).blocked) {  // the output keeps the input's layout
    n.outputs[0].blocked = true;
    n.outputs[0].md = n.in(0).md;
  }
  return k;
}

std::string check_swish(const NodeDesc& n) {
  if (n.inputs.size() > 1 && numel(n.in(1).shape) != 1) return "Swish needs a scalar beta";
  return check_unary(n, Types::Float);
}

OPFORGE_KERNEL(Swish, make_swish, check_swish).layout_flexible().post_op(swish_eltwise);

}  // namespace opforge_cpu
