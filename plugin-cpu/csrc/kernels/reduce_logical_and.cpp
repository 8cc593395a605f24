// ReduceLogicalAnd: see core/reduce_common.hpp.
#include "core/reduce_common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_reduce_logical_and(NodeDesc& n) { return make_reduce(n, Reduce::And); }

std::string check_reduce_logical_and(const NodeDesc& n) { return check_reduce(n); }

OPFORGE_KERNEL(ReduceLogicalAnd, make_reduce_logical_and, check_reduce_logical_and).layout_flexible();

}  // namespace opforge_cpu
