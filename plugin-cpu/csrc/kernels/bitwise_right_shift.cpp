// BitwiseRightShift: a >> b on integers (arithmetic for signed types); shifts outside
// [0, bit width) shift every bit out: 0, or -1 for a negative signed value.
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_bitwise_right_shift(NodeDesc& n) {
  return make_integral_binary(n, [](auto a, auto b) {
    using T = decltype(a);
    const int64_t width = sizeof(T) * 8;
    const int64_t s = static_cast<int64_t>(b);
    if (s < 0 || s >= width) {
      if constexpr (std::is_signed_v<T>) return T(a < 0 ? -1 : 0);
      return T(0);
    }
    return T(a >> s);
  });
}

std::string check_bitwise_right_shift(const NodeDesc& n) { return check_integral(n, false); }

OPFORGE_KERNEL(BitwiseRightShift, make_bitwise_right_shift, check_bitwise_right_shift);

}  // namespace opforge_cpu
