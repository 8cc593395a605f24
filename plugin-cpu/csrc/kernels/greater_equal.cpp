// GreaterEqual: element-wise with NumPy/PDPD broadcasting (boolean output).
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_greater_equal(NodeDesc& n) { return make_compare(n, [](auto a, auto b) { return uint8_t(a >= b); }); }

std::string check_greater_equal(const NodeDesc& n) { return check_compare(n); }

OPFORGE_KERNEL(GreaterEqual, make_greater_equal, check_greater_equal);

}  // namespace opforge_cpu
