// Acosh: element-wise, f32/f64.
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_acosh(NodeDesc& n) {
  return make_unary<Types::Float>(n, [](auto x) {
    using T = decltype(x);
    return std::acosh(x);
  });
}

std::string check_acosh(const NodeDesc& n) { return check_unary(n, Types::Float); }

OPFORGE_KERNEL(Acosh, make_acosh, check_acosh);

}  // namespace opforge_cpu
