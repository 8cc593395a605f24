// IsNaN: a boolean per element of a floating-point tensor.
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_is_nan(NodeDesc& n) {
  return make_float_predicate(n, [](double x) { return std::isnan(x); });
}

std::string check_is_nan(const NodeDesc& n) { return check_unary(n, Types::Float); }

OPFORGE_KERNEL(IsNaN, make_is_nan, check_is_nan);

}  // namespace opforge_cpu
