// Tanh: element-wise, f32/f64; f32 runs oneDNN's eltwise "tanh".
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_tanh(NodeDesc& n) {
  return make_unary<Types::Float>(n, [](auto x) {
    using T = decltype(x);
    return std::tanh(x);
  }, "tanh");
}

std::string check_tanh(const NodeDesc& n) { return check_unary(n, Types::Float); }

}  // namespace opforge_cpu
