// FloorMod: element-wise with NumPy/PDPD broadcasting (numeric types).
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_floor_mod(NodeDesc& n) { return make_binary<Types::Numeric>(n, [](auto a, auto b) { return floor_mod(a, b); }); }

std::string check_floor_mod(const NodeDesc& n) { return check_binary(n); }

OPFORGE_KERNEL(FloorMod, make_floor_mod, check_floor_mod);

}  // namespace opforge_cpu
