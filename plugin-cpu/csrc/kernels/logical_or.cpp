// LogicalOr: element-wise with NumPy/PDPD broadcasting (boolean output).
#include "kernels/common.hpp"

namespace opforge_cpu {

struct Or {
  uint8_t operator()(uint8_t a, uint8_t b) const { return uint8_t((a != 0) || (b != 0)); }
};

std::unique_ptr<Kernel> make_logical_or(NodeDesc& n) { return std::make_unique<BinaryKernel<uint8_t, uint8_t, Or>>(n, Or{}); }

std::string check_logical_or(const NodeDesc& n) { return check_boolean(n); }

OPFORGE_KERNEL(LogicalOr, make_logical_or, check_logical_or);

}  // namespace opforge_cpu
