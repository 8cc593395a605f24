// Add: element-wise with NumPy/PDPD broadcasting (numeric types).
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_add(NodeDesc& n) { return make_binary<Types::Numeric>(n, [](auto a, auto b) { return decltype(a)(a + b); }); }

std::string check_add(const NodeDesc& n) { return check_binary(n); }

OPFORGE_KERNEL(Add, make_add, check_add);

}  // namespace opforge_cpu
