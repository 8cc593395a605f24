// Mish: element-wise, f32/f64; f32 runs oneDNN's eltwise "mish".
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_mish(NodeDesc& n) {
  return make_unary<Types::Float>(n, [](auto x) {
    using T = decltype(x);
    return x * std::tanh(x > T(20) ? x : T(std::log1p(std::exp(x))));
  }, "mish");
}

std::string check_mish(const NodeDesc& n) { return check_unary(n, Types::Float); }

}  // namespace opforge_cpu
