// Elu: x > 0 ? x : alpha * (exp(x) - 1); f32 runs oneDNN's eltwise.
#include "kernels/common.hpp"

namespace opforge_cpu {

Eltwise elu_eltwise(const Attrs& a) { return {dnnl::algorithm::eltwise_elu, static_cast<float>(a.f("alpha"))}; }

std::unique_ptr<Kernel> make_elu(NodeDesc& n) {
  double alpha = n.attrs.f("alpha");
  return make_unary<Types::Float>(n, [alpha](auto x) {
    using T = decltype(x);
    return x > T(0) ? x : T(alpha * (std::exp(static_cast<double>(x)) - 1.0));
  }, elu_eltwise);
}

std::string check_elu(const NodeDesc& n) { return check_unary(n, Types::Float); }

OPFORGE_KERNEL(Elu, make_elu, check_elu).layout_flexible().post_op(elu_eltwise);

}  // namespace opforge_cpu
