// IsFinite: a boolean per element of a floating-point tensor.
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_is_finite(NodeDesc& n) {
  return make_float_predicate(n, [](double x) { return std::isfinite(x); });
}

std::string check_is_finite(const NodeDesc& n) { return check_unary(n, Types::Float); }

OPFORGE_KERNEL(IsFinite, make_is_finite, check_is_finite);

}  // namespace opforge_cpu
