// BitwiseAnd: element-wise a & b on integers and booleans, with NumPy broadcasting.
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_bitwise_and(NodeDesc& n) {
  return make_integral_binary(n, [](auto a, auto b) { return decltype(a)(a & b); });
}

std::string check_bitwise_and(const NodeDesc& n) { return check_integral(n); }

OPFORGE_KERNEL(BitwiseAnd, make_bitwise_and, check_bitwise_and);

}  // namespace opforge_cpu
