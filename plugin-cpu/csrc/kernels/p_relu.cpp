// PRelu: x >= 0 ? x : slope * x. A 1-D slope as long as the data's dimension 1 is per channel;
// any other slope broadcasts by NumPy rules.
#include "kernels/common.hpp"

namespace opforge_cpu {

namespace {
template <class T> class PReluKernel : public ElementwiseKernel {
 public:
  explicit PReluKernel(const NodeDesc& n) : ElementwiseKernel(n), plan_(make_plan(n)) {}
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    broadcast_binary(plan_, in[0].ptr<T>(), in[1].ptr<T>(), out[0].ptr<T>(), ctx.num_threads,
                     [](T x, T s) { return x < T(0) ? T(s * x) : x; });
  }

 private:
  static BroadcastPlan make_plan(const NodeDesc& n) {
    const Shape& xs = n.in(0).shape;
    Shape ss = n.in(1).shape;
    if (ss.size() == 1 && xs.size() >= 2 && ss[0] == xs[1] && ss[0] != 1) {
      Shape per(xs.size(), 1);
      per[1] = ss[0];
      ss = per;
    }
    return BroadcastPlan(xs, xs, align_for_broadcast(xs, ss, "numpy", -1, true));
  }
  BroadcastPlan plan_;
};
}  // namespace

std::unique_ptr<Kernel> make_p_relu(NodeDesc& n) {
  std::unique_ptr<Kernel> k;
  dispatch_float(n.in(0).dtype, [&](auto tag) { k = std::make_unique<PReluKernel<OPF_TYPE_OF(tag)>>(n); });
  return k;
}

std::string check_p_relu(const NodeDesc& n) { return check_unary(n, Types::Float); }

OPFORGE_KERNEL(PRelu, make_p_relu, check_p_relu);

}  // namespace opforge_cpu
