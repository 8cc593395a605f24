// Power: a ** b; integers by repeated squaring (negative exponents give 0 unless |a| == 1).
// A constant scalar exponent of 2, 3, 0.5, 1 or -1 on f32/f64 runs its cheaper exact form
// (core/power_scalar.cpp: x*x, x*x*x, sqrt, copy, 1/x, vectorised and threaded).
#include "core/power_scalar.hpp"
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_power(NodeDesc& n) {
  if (auto k = make_power_scalar(n)) return k;
  return make_binary<Types::Numeric>(n, [](auto a, auto b) {
    using T = decltype(a);
    if constexpr (std::is_floating_point_v<T>) {
      return T(std::pow(a, b));
    } else {
      if constexpr (std::is_signed_v<T>) {
        if (b < 0) return T(a == 1 ? 1 : (a == -1 ? ((b % 2) ? -1 : 1) : 0));
      }
      T r = 1, base = a;
      auto e = b;
      while (e > 0) {
        if (e & 1) r = T(r * base);
        base = T(base * base);
        e = decltype(e)(e >> 1);
      }
      return r;
    }
  });
}

std::string check_power(const NodeDesc& n) { return check_binary(n); }

OPFORGE_KERNEL(Power, make_power, check_power);

}  // namespace opforge_cpu
