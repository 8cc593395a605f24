// Multiply: element-wise with NumPy/PDPD broadcasting (numeric types).
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_multiply(NodeDesc& n) { return make_binary<Types::Numeric>(n, [](auto a, auto b) { return decltype(a)(a * b); }); }

std::string check_multiply(const NodeDesc& n) { return check_binary(n); }

OPFORGE_KERNEL(Multiply, make_multiply, check_multiply);

}  // namespace opforge_cpu
