// Acos: element-wise, f32/f64.
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_acos(NodeDesc& n) {
  return make_unary<Types::Float>(n, [](auto x) {
    using T = decltype(x);
    return std::acos(x);
  });
}

std::string check_acos(const NodeDesc& n) { return check_unary(n, Types::Float); }

OPFORGE_KERNEL(Acos, make_acos, check_acos);

}  // namespace opforge_cpu
