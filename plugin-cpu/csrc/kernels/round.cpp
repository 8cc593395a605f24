// Round-5: half_to_even (banker's rounding) or half_away_from_zero; integers pass through.
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_round(NodeDesc& n) {
  if (n.attrs.s("mode", "half_to_even") == "half_away_from_zero") {
    return make_unary<Types::Numeric>(n, [](auto x) {
      using T = decltype(x);
      if constexpr (std::is_floating_point_v<T>) return T(std::round(x));
      else return x;
    });
  }
  return make_unary<Types::Numeric>(n, [](auto x) {
    using T = decltype(x);
    // nearbyint follows the current rounding mode, which is round-to-nearest-even by default.
    if constexpr (std::is_floating_point_v<T>) return T(std::nearbyint(x));
    else return x;
  });
}

std::string check_round(const NodeDesc& n) { return check_unary(n, Types::Numeric); }

OPFORGE_KERNEL(Round, make_round, check_round);

}  // namespace opforge_cpu
