// Floor: element-wise, every numeric type.
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_floor(NodeDesc& n) {
  return make_unary<Types::Numeric>(n, [](auto x) {
    using T = decltype(x);
    return std::is_floating_point_v<T> ? T(std::floor(x)) : x;
  });
}

std::string check_floor(const NodeDesc& n) { return check_unary(n, Types::Numeric); }

OPFORGE_KERNEL(Floor, make_floor, check_floor);

}  // namespace opforge_cpu
