// VariadicSplit-1: parts of given lengths along a constant axis (lengths are in the output shapes).
#include "core/split_common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_variadic_split(NodeDesc& n) {
  return std::make_unique<SplitKernel>(n, n.const_ints(1).at(0));
}

std::string check_variadic_split(const NodeDesc& n) { return n.is_const(1) ? "" : "VariadicSplit needs a constant axis"; }

OPFORGE_KERNEL(VariadicSplit, make_variadic_split, check_variadic_split);

}  // namespace opforge_cpu
