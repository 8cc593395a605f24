// ReduceSum: see core/reduce_common.hpp.
#include "core/reduce_common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_reduce_sum(NodeDesc& n) { return make_reduce(n, Reduce::Sum); }

std::string check_reduce_sum(const NodeDesc& n) { return check_reduce(n); }

OPFORGE_KERNEL(ReduceSum, make_reduce_sum, check_reduce_sum).layout_flexible();

}  // namespace opforge_cpu
