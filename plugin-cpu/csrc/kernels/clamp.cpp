// Clamp: min(max(x, min), max); f32 runs oneDNN's clip, integers clamp to [ceil(min), floor(max)].
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_clamp(NodeDesc& n) {
  double lo = n.attrs.f("min"), hi = n.attrs.f("max");
  if (n.in(0).dtype == DType::f32) {
    return make_unary<Types::Float>(n, [](auto x) { return x; },
                      ("clip:" + num_str(lo) + ":" + num_str(hi)).c_str());
  }
  if (!is_float(n.in(0).dtype)) {
    lo = std::ceil(lo);
    hi = std::floor(hi);
  }
  return make_unary<Types::Numeric>(n, [lo, hi](auto x) {
    using T = decltype(x);
    double v = static_cast<double>(x);
    return T(v < lo ? lo : (v > hi ? hi : v));
  });
}

std::string check_clamp(const NodeDesc& n) { return check_unary(n, Types::Numeric); }

}  // namespace opforge_cpu
