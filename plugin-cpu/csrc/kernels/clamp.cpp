// Clamp: min(max(x, min), max); f32 runs oneDNN's clip, integers clamp to [ceil(min), floor(max)].
#include "kernels/common.hpp"

namespace opforge_cpu {

Eltwise clamp_eltwise(const Attrs& a) {
  return {dnnl::algorithm::eltwise_clip_v2, static_cast<float>(a.f("min")), static_cast<float>(a.f("max"))};
}

std::unique_ptr<Kernel> make_clamp(NodeDesc& n) {
  double lo = n.attrs.f("min"), hi = n.attrs.f("max");
  if (n.in(0).dtype == DType::f32) {
    return make_unary<Types::Float>(n, [](auto x) { return x; }, clamp_eltwise);
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

OPFORGE_KERNEL(Clamp, make_clamp, check_clamp).layout_flexible().post_op(clamp_eltwise);

}  // namespace opforge_cpu
