// Mod: truncated remainder (the sign of the dividend), like C's fmod / %.
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_mod(NodeDesc& n) {
  return make_binary<Types::Numeric>(n, [](auto a, auto b) {
    using T = decltype(a);
    if constexpr (std::is_floating_point_v<T>) {
      return T(std::fmod(a, b));
    } else {
      return b == T(0) ? T(0) : T(a % b);
    }
  });
}

std::string check_mod(const NodeDesc& n) { return check_binary(n); }

OPFORGE_KERNEL(Mod, make_mod, check_mod);

}  // namespace opforge_cpu
