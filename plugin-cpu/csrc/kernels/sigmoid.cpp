// Sigmoid: element-wise, f32/f64; f32 runs oneDNN's eltwise_logistic.
#include "kernels/common.hpp"

namespace opforge_cpu {

Eltwise sigmoid_eltwise(const Attrs&) { return {dnnl::algorithm::eltwise_logistic}; }

std::unique_ptr<Kernel> make_sigmoid(NodeDesc& n) {
  return make_unary<Types::Float>(n, [](auto x) {
    using T = decltype(x);
    return T(1) / (T(1) + std::exp(-x));
  }, sigmoid_eltwise);
}

std::string check_sigmoid(const NodeDesc& n) { return check_unary(n, Types::Float); }

OPFORGE_KERNEL(Sigmoid, make_sigmoid, check_sigmoid).layout_flexible().post_op(sigmoid_eltwise);

}  // namespace opforge_cpu
