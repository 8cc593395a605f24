// LogicalAnd: element-wise with NumPy/PDPD broadcasting (boolean output).
#include "kernels/common.hpp"

namespace opforge_cpu {

struct And {
  uint8_t operator()(uint8_t a, uint8_t b) const { return uint8_t((a != 0) && (b != 0)); }
};

std::unique_ptr<Kernel> make_logical_and(NodeDesc& n) { return std::make_unique<BinaryKernel<uint8_t, uint8_t, And>>(n, And{}); }

std::string check_logical_and(const NodeDesc& n) { return check_boolean(n); }

OPFORGE_KERNEL(LogicalAnd, make_logical_and, check_logical_and);

}  // namespace opforge_cpu
