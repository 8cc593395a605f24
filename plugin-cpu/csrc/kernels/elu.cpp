// Elu: x > 0 ? x : alpha * (exp(x) - 1); f32 runs oneDNN's eltwise.
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_elu(NodeDesc& n) {
  double alpha = n.attrs.f("alpha");
  return make_unary<Types::Float>(n, [alpha](auto x) {
    using T = decltype(x);
    return x > T(0) ? x : T(alpha * (std::exp(static_cast<double>(x)) - 1.0));
  }, ("elu:" + num_str(alpha)).c_str());
}

std::string check_elu(const NodeDesc& n) { return check_unary(n, Types::Float); }

}  // namespace opforge_cpu
