// Minimum: element-wise with NumPy/PDPD broadcasting (numeric types).
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_minimum(NodeDesc& n) { return make_binary<Types::Numeric>(n, [](auto a, auto b) { return a < b || a != a ? a : b; }  /* NaN in a or b gives NaN */); }

std::string check_minimum(const NodeDesc& n) { return check_binary(n); }

OPFORGE_KERNEL(Minimum, make_minimum, check_minimum);

}  // namespace opforge_cpu
