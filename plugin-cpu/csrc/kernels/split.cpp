// Split-1: equal parts along a constant axis.
#include "core/split_common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_split(NodeDesc& n) { return std::make_unique<SplitKernel>(n, n.const_ints(1).at(0)); }

std::string check_split(const NodeDesc& n) { return n.is_const(1) ? "" : "Split needs a constant axis"; }

OPFORGE_KERNEL(Split, make_split, check_split);

}  // namespace opforge_cpu
