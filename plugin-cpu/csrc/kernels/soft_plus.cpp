// SoftPlus: element-wise, f32/f64.
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_soft_plus(NodeDesc& n) {
  return make_unary<Types::Float>(n, [](auto x) {
    using T = decltype(x);
    return x > T(20) ? x : T(std::log1p(std::exp(x)));
  });
}

std::string check_soft_plus(const NodeDesc& n) { return check_unary(n, Types::Float); }

OPFORGE_KERNEL(SoftPlus, make_soft_plus, check_soft_plus);

}  // namespace opforge_cpu
