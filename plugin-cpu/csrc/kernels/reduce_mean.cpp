// ReduceMean: see core/reduce_common.hpp.
#include "core/reduce_common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_reduce_mean(NodeDesc& n) { return make_reduce(n, Reduce::Mean); }

std::string check_reduce_mean(const NodeDesc& n) { return check_reduce(n); }

OPFORGE_KERNEL(ReduceMean, make_reduce_mean, check_reduce_mean).layout_flexible();

}  // namespace opforge_cpu
