// LessEqual: element-wise with NumPy/PDPD broadcasting (boolean output).
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_less_equal(NodeDesc& n) { return make_compare(n, [](auto a, auto b) { return uint8_t(a <= b); }); }

std::string check_less_equal(const NodeDesc& n) { return check_compare(n); }

OPFORGE_KERNEL(LessEqual, make_less_equal, check_less_equal);

}  // namespace opforge_cpu
