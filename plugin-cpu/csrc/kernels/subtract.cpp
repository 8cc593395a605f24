// Subtract: element-wise with NumPy/PDPD broadcasting (numeric types).
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_subtract(NodeDesc& n) { return make_binary<Types::Numeric>(n, [](auto a, auto b) { return decltype(a)(a - b); }); }

std::string check_subtract(const NodeDesc& n) { return check_binary(n); }

OPFORGE_KERNEL(Subtract, make_subtract, check_subtract);

}  // namespace opforge_cpu
