// Divide: a / b; integers with m_pythondiv round toward -inf (Python's //), else toward zero.
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_divide(NodeDesc& n) {
  if (is_float(n.in(0).dtype)) return make_binary<Types::Float>(n, [](auto a, auto b) { return a / b; });
  if (n.attrs.b("m_pythondiv", true)) {
    return make_binary<Types::Numeric>(n, [](auto a, auto b) {
      using T = decltype(a);
      if constexpr (std::is_floating_point_v<T>) {
        return T(a / b);
      } else {
        if (b == T(0)) return T(0);  // undefined in the spec; 0 instead of a crash
        T q = T(a / b);
        if constexpr (std::is_signed_v<T>)
          if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
        return q;
      }
    });
  }
  return make_binary<Types::Numeric>(n, [](auto a, auto b) {
    using T = decltype(a);
    if constexpr (std::is_floating_point_v<T>) return T(a / b);
    else return b == T(0) ? T(0) : T(a / b);
  });
}

std::string check_divide(const NodeDesc& n) { return check_binary(n); }

OPFORGE_KERNEL(Divide, make_divide, check_divide);

}  // namespace opforge_cpu
