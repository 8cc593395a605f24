// ReduceL2: see core/reduce_common.hpp.
#include "core/reduce_common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_reduce_l2(NodeDesc& n) { return make_reduce(n, Reduce::L2); }

std::string check_reduce_l2(const NodeDesc& n) { return check_reduce(n); }

OPFORGE_KERNEL(ReduceL2, make_reduce_l2, check_reduce_l2).layout_flexible();

}  // namespace opforge_cpu
