// Relu: element-wise, every numeric type; f32 runs oneDNN's eltwise "relu".
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_relu(NodeDesc& n) {
  return make_unary<Types::Numeric>(n, [](auto x) {
    using T = decltype(x);
    return x < T(0) ? T(0) : x;  // NaN stays NaN
  }, "relu");
}

std::string check_relu(const NodeDesc& n) { return check_unary(n, Types::Numeric); }

}  // namespace opforge_cpu
