// Exp: element-wise, f32/f64; f32 runs oneDNN's eltwise "exp".
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_exp(NodeDesc& n) {
  return make_unary<Types::Float>(n, [](auto x) {
    using T = decltype(x);
    return std::exp(x);
  }, "exp");
}

std::string check_exp(const NodeDesc& n) { return check_unary(n, Types::Float); }

}  // namespace opforge_cpu
