// HSigmoid: element-wise, f32/f64; f32 runs oneDNN's eltwise_hardsigmoid.
#include "kernels/common.hpp"

namespace opforge_cpu {

// oneDNN's hard sigmoid is clip(alpha * x + beta, 0, 1): alpha = 1/6, beta = 1/2.
Eltwise h_sigmoid_eltwise(const Attrs&) { return {dnnl::algorithm::eltwise_hardsigmoid, 1.f / 6.f, 0.5f}; }

std::unique_ptr<Kernel> make_h_sigmoid(NodeDesc& n) {
  return make_unary<Types::Float>(n, [](auto x) {
    using T = decltype(x);
    return std::min(std::max(x + T(3), T(0)), T(6)) / T(6);
  }, h_sigmoid_eltwise);
}

std::string check_h_sigmoid(const NodeDesc& n) { return check_unary(n, Types::Float); }

OPFORGE_KERNEL(HSigmoid, make_h_sigmoid, check_h_sigmoid).layout_flexible().post_op(h_sigmoid_eltwise);

}  // namespace opforge_cpu
