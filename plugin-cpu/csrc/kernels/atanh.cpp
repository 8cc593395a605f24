// Atanh: element-wise, f32/f64.
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_atanh(NodeDesc& n) {
  return make_unary<Types::Float>(n, [](auto x) {
    using T = decltype(x);
    return std::atanh(x);
  });
}

std::string check_atanh(const NodeDesc& n) { return check_unary(n, Types::Float); }

OPFORGE_KERNEL(Atanh, make_atanh, check_atanh);

}  // namespace opforge_cpu
