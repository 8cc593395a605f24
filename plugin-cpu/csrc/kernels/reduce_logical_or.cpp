// ReduceLogicalOr: see core/reduce_common.hpp.
#include "core/reduce_common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_reduce_logical_or(NodeDesc& n) { return make_reduce(n, Reduce::Or); }

std::string check_reduce_logical_or(const NodeDesc& n) { return check_reduce(n); }

OPFORGE_KERNEL(ReduceLogicalOr, make_reduce_logical_or, check_reduce_logical_or).layout_flexible();

}  // namespace opforge_cpu
