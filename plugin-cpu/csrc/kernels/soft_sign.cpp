// SoftSign: element-wise, f32/f64.
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_soft_sign(NodeDesc& n) {
  return make_unary<Types::Float>(n, [](auto x) {
    using T = decltype(x);
    return x / (T(1) + std::abs(x));
  });
}

std::string check_soft_sign(const NodeDesc& n) { return check_unary(n, Types::Float); }

OPFORGE_KERNEL(SoftSign, make_soft_sign, check_soft_sign);

}  // namespace opforge_cpu
