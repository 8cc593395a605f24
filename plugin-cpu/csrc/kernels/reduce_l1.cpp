// ReduceL1: see core/reduce_common.hpp.
#include "core/reduce_common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_reduce_l1(NodeDesc& n) { return make_reduce(n, Reduce::L1); }

std::string check_reduce_l1(const NodeDesc& n) { return check_reduce(n); }

OPFORGE_KERNEL(ReduceL1, make_reduce_l1, check_reduce_l1).layout_flexible();

}  // namespace opforge_cpu
