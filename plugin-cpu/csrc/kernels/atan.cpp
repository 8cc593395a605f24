// Atan: element-wise, f32/f64.
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_atan(NodeDesc& n) {
  return make_unary<Types::Float>(n, [](auto x) {
    using T = decltype(x);
    return std::atan(x);
  });
}

std::string check_atan(const NodeDesc& n) { return check_unary(n, Types::Float); }

OPFORGE_KERNEL(Atan, make_atan, check_atan);

}  // namespace opforge_cpu
