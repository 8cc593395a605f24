// Greater: element-wise with NumPy/PDPD broadcasting (boolean output).
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_greater(NodeDesc& n) { return make_compare(n, [](auto a, auto b) { return uint8_t(a > b); }); }

std::string check_greater(const NodeDesc& n) { return check_compare(n); }

OPFORGE_KERNEL(Greater, make_greater, check_greater);

}  // namespace opforge_cpu
