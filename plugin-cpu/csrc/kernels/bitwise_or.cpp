// BitwiseOr: element-wise a | b on integers and booleans, with NumPy broadcasting.
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_bitwise_or(NodeDesc& n) {
  return make_integral_binary(n, [](auto a, auto b) { return decltype(a)(a | b); });
}

std::string check_bitwise_or(const NodeDesc& n) { return check_integral(n); }

OPFORGE_KERNEL(BitwiseOr, make_bitwise_or, check_bitwise_or);

}  // namespace opforge_cpu
