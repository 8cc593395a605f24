// SquaredDifference: element-wise with NumPy/PDPD broadcasting (numeric types).
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_squared_difference(NodeDesc& n) { return make_binary<Types::Numeric>(n, [](auto a, auto b) { return decltype(a)((a - b) * (a - b)); }); }

std::string check_squared_difference(const NodeDesc& n) { return check_binary(n); }

OPFORGE_KERNEL(SquaredDifference, make_squared_difference, check_squared_difference);

}  // namespace opforge_cpu
