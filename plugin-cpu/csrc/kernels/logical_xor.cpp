// LogicalXor: element-wise with NumPy/PDPD broadcasting (boolean output).
#include "kernels/common.hpp"

namespace opforge_cpu {

struct Xor {
  uint8_t operator()(uint8_t a, uint8_t b) const { return uint8_t((a != 0) != (b != 0)); }
};

std::unique_ptr<Kernel> make_logical_xor(NodeDesc& n) { return std::make_unique<BinaryKernel<uint8_t, uint8_t, Xor>>(n, Xor{}); }

std::string check_logical_xor(const NodeDesc& n) { return check_boolean(n); }

OPFORGE_KERNEL(LogicalXor, make_logical_xor, check_logical_xor);

}  // namespace opforge_cpu
