// IsInf: a boolean per element of a floating-point tensor.
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_is_inf(NodeDesc& n) {
  const bool neg = n.attrs.b("detect_negative", true), pos = n.attrs.b("detect_positive", true);
  return make_float_predicate(n, [neg, pos](double x) { return std::isinf(x) && ((x > 0 && pos) || (x < 0 && neg)); });
}

std::string check_is_inf(const NodeDesc& n) { return check_unary(n, Types::Float); }

OPFORGE_KERNEL(IsInf, make_is_inf, check_is_inf);

}  // namespace opforge_cpu
