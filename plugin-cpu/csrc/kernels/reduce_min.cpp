// ReduceMin: see core/reduce_common.hpp.
#include "core/reduce_common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_reduce_min(NodeDesc& n) { return make_reduce(n, Reduce::Min); }

std::string check_reduce_min(const NodeDesc& n) { return check_reduce(n); }

OPFORGE_KERNEL(ReduceMin, make_reduce_min, check_reduce_min).layout_flexible();

}  // namespace opforge_cpu
