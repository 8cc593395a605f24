// Minimum: element-wise with NumPy/PDPD broadcasting (numeric types).
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_minimum(NodeDesc& n) { return make_binary<Types::Numeric>(n, [](auto a, auto b) { return a < b ? a : b; }); }

std::string check_minimum(const NodeDesc& n) { return check_binary(n); }

}  // namespace opforge_cpu
