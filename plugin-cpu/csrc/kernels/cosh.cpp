// Cosh: element-wise, f32/f64.
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_cosh(NodeDesc& n) {
  return make_unary<Types::Float>(n, [](auto x) {
    using T = decltype(x);
    return std::cosh(x);
  });
}

std::string check_cosh(const NodeDesc& n) { return check_unary(n, Types::Float); }

OPFORGE_KERNEL(Cosh, make_cosh, check_cosh);

}  // namespace opforge_cpu
