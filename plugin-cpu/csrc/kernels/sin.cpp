// Sin: element-wise, f32/f64.
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_sin(NodeDesc& n) {
  return make_unary<Types::Float>(n, [](auto x) {
    using T = decltype(x);
    return std::sin(x);
  });
}

std::string check_sin(const NodeDesc& n) { return check_unary(n, Types::Float); }

OPFORGE_KERNEL(Sin, make_sin, check_sin);

}  // namespace opforge_cpu
