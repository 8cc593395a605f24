// BitwiseLeftShift: a << b on integers; shifts outside [0, bit width) give 0 (ONNX BitShift).
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_bitwise_left_shift(NodeDesc& n) {
  return make_integral_binary(n, [](auto a, auto b) {
    using T = decltype(a);
    using U = std::make_unsigned_t<T>;
    const int64_t width = sizeof(T) * 8;
    const int64_t s = static_cast<int64_t>(b);
    return (s < 0 || s >= width) ? T(0) : T(static_cast<U>(a) << s);
  });
}

std::string check_bitwise_left_shift(const NodeDesc& n) { return check_integral(n, false); }

OPFORGE_KERNEL(BitwiseLeftShift, make_bitwise_left_shift, check_bitwise_left_shift);

}  // namespace opforge_cpu
