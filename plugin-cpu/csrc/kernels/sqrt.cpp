// Sqrt: element-wise, f32/f64; f32 runs oneDNN's eltwise "sqrt".
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_sqrt(NodeDesc& n) {
  return make_unary<Types::Float>(n, [](auto x) {
    using T = decltype(x);
    return std::sqrt(x);
  }, "sqrt");
}

std::string check_sqrt(const NodeDesc& n) { return check_unary(n, Types::Float); }

}  // namespace opforge_cpu
