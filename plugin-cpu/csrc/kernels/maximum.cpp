// Maximum: element-wise with NumPy/PDPD broadcasting (numeric types).
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_maximum(NodeDesc& n) { return make_binary<Types::Numeric>(n, [](auto a, auto b) { return a > b || a != a ? a : b; }  /* NaN in a or b gives NaN */); }

std::string check_maximum(const NodeDesc& n) { return check_binary(n); }

OPFORGE_KERNEL(Maximum, make_maximum, check_maximum);

}  // namespace opforge_cpu
