// Ceiling: element-wise, every numeric type.
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_ceiling(NodeDesc& n) {
  return make_unary<Types::Numeric>(n, [](auto x) {
    using T = decltype(x);
    return std::is_floating_point_v<T> ? T(std::ceil(x)) : x;
  });
}

std::string check_ceiling(const NodeDesc& n) { return check_unary(n, Types::Numeric); }

OPFORGE_KERNEL(Ceiling, make_ceiling, check_ceiling);

}  // namespace opforge_cpu
