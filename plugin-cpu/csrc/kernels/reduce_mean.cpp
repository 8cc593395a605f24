// ReduceMean: see core/reduce_common.hpp.
#include "core/reduce_common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_reduce_mean(NodeDesc& n) { return make_reduce(n, Reduce::Mean); }

std::string check_reduce_mean(const NodeDesc& n) { return check_reduce(n); }

}  // namespace opforge_cpu
