// Cos: element-wise, f32/f64.
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_cos(NodeDesc& n) {
  return make_unary<Types::Float>(n, [](auto x) {
    using T = decltype(x);
    return std::cos(x);
  });
}

std::string check_cos(const NodeDesc& n) { return check_unary(n, Types::Float); }

OPFORGE_KERNEL(Cos, make_cos, check_cos);

}  // namespace opforge_cpu
