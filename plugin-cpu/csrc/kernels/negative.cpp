// Negative: element-wise, every numeric type.
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_negative(NodeDesc& n) {
  return make_unary<Types::Numeric>(n, [](auto x) {
    using T = decltype(x);
    return T(-x);
  });
}

std::string check_negative(const NodeDesc& n) { return check_unary(n, Types::Numeric); }

OPFORGE_KERNEL(Negative, make_negative, check_negative);

}  // namespace opforge_cpu
