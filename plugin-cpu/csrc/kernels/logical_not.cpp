// LogicalNot: element-wise negation of a boolean tensor.
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_logical_not(NodeDesc& n) {
  auto f = [](uint8_t x) { return uint8_t(x == 0); };
  return std::make_unique<UnaryKernel<uint8_t, decltype(f)>>(n, f);
}

std::string check_logical_not(const NodeDesc& n) { return check_boolean(n); }

OPFORGE_KERNEL(LogicalNot, make_logical_not, check_logical_not);

}  // namespace opforge_cpu
