// Sigmoid: element-wise, f32/f64; f32 runs oneDNN's eltwise "sigmoid".
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_sigmoid(NodeDesc& n) {
  return make_unary<Types::Float>(n, [](auto x) {
    using T = decltype(x);
    return T(1) / (T(1) + std::exp(-x));
  }, "sigmoid");
}

std::string check_sigmoid(const NodeDesc& n) { return check_unary(n, Types::Float); }

}  // namespace opforge_cpu
