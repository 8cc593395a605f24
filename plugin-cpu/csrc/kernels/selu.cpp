// Selu: lambda * x for x > 0, lambda * alpha * (exp(x) - 1) otherwise; alpha and lambda are
// constant inputs (scalars).
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_selu(NodeDesc& n) {
  const double alpha = n.const_floats(1).at(0), lambda = n.const_floats(2).at(0);
  return make_unary<Types::Float>(n, [alpha, lambda](auto x) {
    using T = decltype(x);
    const double v = static_cast<double>(x);
    return T(v > 0 ? lambda * v : lambda * alpha * std::expm1(v));
  });
}

std::string check_selu(const NodeDesc& n) {
  if (!n.is_const(1) || !n.is_const(2)) return "Selu needs constant alpha and lambda on the CPU device";
  return check_unary(n, Types::Float);
}

OPFORGE_KERNEL(Selu, make_selu, check_selu);

}  // namespace opforge_cpu
