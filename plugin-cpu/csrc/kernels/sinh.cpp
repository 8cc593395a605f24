// Sinh: element-wise, f32/f64.
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_sinh(NodeDesc& n) {
  return make_unary<Types::Float>(n, [](auto x) {
    using T = decltype(x);
    return std::sinh(x);
  });
}

std::string check_sinh(const NodeDesc& n) { return check_unary(n, Types::Float); }

OPFORGE_KERNEL(Sinh, make_sinh, check_sinh);

}  // namespace opforge_cpu
