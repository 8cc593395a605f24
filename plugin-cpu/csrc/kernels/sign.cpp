// Sign: element-wise, every numeric type.
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_sign(NodeDesc& n) {
  return make_unary<Types::Numeric>(n, [](auto x) {
    using T = decltype(x);
    if (x != x) return x;  // sign(NaN) = NaN
    return T((x > T(0)) - (x < T(0)));
  });
}

std::string check_sign(const NodeDesc& n) { return check_unary(n, Types::Numeric); }

OPFORGE_KERNEL(Sign, make_sign, check_sign);

}  // namespace opforge_cpu
