// HSwish: element-wise, f32/f64; f32 runs oneDNN's eltwise "hswish".
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_h_swish(NodeDesc& n) {
  return make_unary<Types::Float>(n, [](auto x) {
    using T = decltype(x);
    return x * std::min(std::max(x + T(3), T(0)), T(6)) / T(6);
  }, "hswish");
}

std::string check_h_swish(const NodeDesc& n) { return check_unary(n, Types::Float); }

}  // namespace opforge_cpu
