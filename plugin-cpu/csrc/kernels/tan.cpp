// Tan: element-wise, f32/f64.
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_tan(NodeDesc& n) {
  return make_unary<Types::Float>(n, [](auto x) {
    using T = decltype(x);
    return std::tan(x);
  });
}

std::string check_tan(const NodeDesc& n) { return check_unary(n, Types::Float); }

OPFORGE_KERNEL(Tan, make_tan, check_tan);

}  // namespace opforge_cpu
