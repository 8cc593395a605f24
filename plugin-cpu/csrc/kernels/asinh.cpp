// Asinh: element-wise, f32/f64.
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_asinh(NodeDesc& n) {
  return make_unary<Types::Float>(n, [](auto x) {
    using T = decltype(x);
    return std::asinh(x);
  });
}

std::string check_asinh(const NodeDesc& n) { return check_unary(n, Types::Float); }

OPFORGE_KERNEL(Asinh, make_asinh, check_asinh);

}  // namespace opforge_cpu
