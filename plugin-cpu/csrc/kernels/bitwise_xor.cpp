// BitwiseXor: element-wise a ^ b on integers and booleans, with NumPy broadcasting.
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_bitwise_xor(NodeDesc& n) {
  return make_integral_binary(n, [](auto a, auto b) { return decltype(a)(a ^ b); });
}

std::string check_bitwise_xor(const NodeDesc& n) { return check_integral(n); }

OPFORGE_KERNEL(BitwiseXor, make_bitwise_xor, check_bitwise_xor);

}  // namespace opforge_cpu
