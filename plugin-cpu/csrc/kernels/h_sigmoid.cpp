// HSigmoid: element-wise, f32/f64; f32 runs oneDNN's eltwise "hsigmoid".
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_h_sigmoid(NodeDesc& n) {
  return make_unary<Types::Float>(n, [](auto x) {
    using T = decltype(x);
    return std::min(std::max(x + T(3), T(0)), T(6)) / T(6);
  }, "hsigmoid");
}

std::string check_h_sigmoid(const NodeDesc& n) { return check_unary(n, Types::Float); }

}  // namespace opforge_cpu
