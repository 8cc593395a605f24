// HSwish: element-wise, f32/f64; f32 runs oneDNN's eltwise_hardswish.
#include "kernels/common.hpp"

namespace opforge_cpu {

// oneDNN's hard swish is x * clip(alpha * x + beta, 0, 1): alpha = 1/6, beta = 1/2.
Eltwise h_swish_eltwise(const Attrs&) { return {dnnl::algorithm::eltwise_hardswish, 1.f / 6.f, 0.5f}; }

std::unique_ptr<Kernel> make_h_swish(NodeDesc& n) {
  return make_unary<Types::Float>(n, [](auto x) {
    using T = decltype(x);
    return x * std::min(std::max(x + T(3), T(0)), T(6)) / T(6);
  }, h_swish_eltwise);
}

std::string check_h_swish(const NodeDesc& n) { return check_unary(n, Types::Float); }

OPFORGE_KERNEL(HSwish, make_h_swish, check_h_swish).layout_flexible().post_op(h_swish_eltwise);

}  // namespace opforge_cpu
