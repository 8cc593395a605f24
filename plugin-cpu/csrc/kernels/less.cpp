// Less: element-wise with NumPy/PDPD broadcasting (boolean output).
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_less(NodeDesc& n) { return make_compare(n, [](auto a, auto b) { return uint8_t(a < b); }); }

std::string check_less(const NodeDesc& n) { return check_compare(n); }

OPFORGE_KERNEL(Less, make_less, check_less);

}  // namespace opforge_cpu
