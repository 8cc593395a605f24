// BitwiseNot: element-wise ~x on integers; logical not on booleans.
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_bitwise_not(NodeDesc& n) {
  if (n.in(0).dtype == DType::boolean) {
    auto f = [](uint8_t x) { return uint8_t(x == 0); };
    return std::make_unique<UnaryKernel<uint8_t, decltype(f)>>(n, f);
  }
  std::unique_ptr<Kernel> k;
  dispatch_integral(n.in(0).dtype, [&](auto tag) {
    using T = OPF_TYPE_OF(tag);
    auto f = [](T x) { return T(~x); };
    k = std::make_unique<UnaryKernel<T, decltype(f)>>(n, f);
  });
  return k;
}

std::string check_bitwise_not(const NodeDesc& n) { return check_integral(n); }

OPFORGE_KERNEL(BitwiseNot, make_bitwise_not, check_bitwise_not);

}  // namespace opforge_cpu
