// Gelu-7: x * Phi(x), exact (ERF) or tanh approximation; f32 runs oneDNN's eltwise.
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_gelu(NodeDesc& n) {
  std::string mode = n.attrs.s("approximation_mode", "ERF");
  bool tanh_mode = mode == "TANH" || mode == "tanh";
  if (tanh_mode) {
    return make_unary<Types::Float>(n, [](auto x) {
      using T = decltype(x);
      return T(0.5) * x * (T(1) + std::tanh(T(0.7978845608028654) * (x + T(0.044715) * x * x * x)));
    }, "gelu_tanh");
  }
  return make_unary<Types::Float>(n, [](auto x) {
    using T = decltype(x);
    return T(0.5) * x * (T(1) + std::erf(x * T(0.7071067811865476)));
  }, "gelu_erf");
}

std::string check_gelu(const NodeDesc& n) { return check_unary(n, Types::Float); }

}  // namespace opforge_cpu
