// Gelu-7: x * Phi(x), exact (ERF) or tanh approximation; f32 runs oneDNN's eltwise.
#include "kernels/common.hpp"

namespace opforge_cpu {

namespace {
bool tanh_mode(const Attrs& a) {
  const std::string mode = a.s("approximation_mode", "ERF");
  return mode == "TANH" || mode == "tanh";
}
}  // namespace

Eltwise gelu_eltwise(const Attrs& a) {
  return {tanh_mode(a) ? dnnl::algorithm::eltwise_gelu_tanh : dnnl::algorithm::eltwise_gelu_erf};
}

std::unique_ptr<Kernel> make_gelu(NodeDesc& n) {
  if (tanh_mode(n.attrs)) {
    return make_unary<Types::Float>(n, [](auto x) {
      using T = decltype(x);
      return T(0.5) * x * (T(1) + std::tanh(T(0.7978845608028654) * (x + T(0.044715) * x * x * x)));
    }, gelu_eltwise);
  }
  return make_unary<Types::Float>(n, [](auto x) {
    using T = decltype(x);
    return T(0.5) * x * (T(1) + std::erf(x * T(0.7071067811865476)));
  }, gelu_eltwise);
}

std::string check_gelu(const NodeDesc& n) { return check_unary(n, Types::Float); }

OPFORGE_KERNEL(Gelu, make_gelu, check_gelu).layout_flexible().post_op(gelu_eltwise);

}  // namespace opforge_cpu
