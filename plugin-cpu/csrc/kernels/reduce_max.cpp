// ReduceMax: see core/reduce_common.hpp.
#include "core/reduce_common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_reduce_max(NodeDesc& n) { return make_reduce(n, Reduce::Max); }

std::string check_reduce_max(const NodeDesc& n) { return check_reduce(n); }

OPFORGE_KERNEL(ReduceMax, make_reduce_max, check_reduce_max).layout_flexible();

}  // namespace opforge_cpu
