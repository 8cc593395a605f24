// ReduceProd: see core/reduce_common.hpp.
#include "core/reduce_common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_reduce_prod(NodeDesc& n) { return make_reduce(n, Reduce::Prod); }

std::string check_reduce_prod(const NodeDesc& n) { return check_reduce(n); }

OPFORGE_KERNEL(ReduceProd, make_reduce_prod, check_reduce_prod).layout_flexible();

}  // namespace opforge_cpu
