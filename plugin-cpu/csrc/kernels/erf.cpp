// Erf: element-wise, f32/f64.
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_erf(NodeDesc& n) {
  return make_unary<Types::Float>(n, [](auto x) {
    using T = decltype(x);
    return std::erf(x);
  });
}

std::string check_erf(const NodeDesc& n) { return check_unary(n, Types::Float); }

OPFORGE_KERNEL(Erf, make_erf, check_erf);

}  // namespace opforge_cpu
