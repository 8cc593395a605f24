// Relu: element-wise, every numeric type; f32 runs oneDNN's eltwise_relu.
#include "kernels/common.hpp"

namespace opforge_cpu {

Eltwise relu_eltwise(const Attrs&) { return {dnnl::algorithm::eltwise_relu}; }

std::unique_ptr<Kernel> make_relu(NodeDesc& n) {
  return make_unary<Types::Numeric>(n, [](auto x) {
    using T = decltype(x);
    return x < T(0) ? T(0) : x;  // NaN stays NaN
  }, relu_eltwise);
}

std::string check_relu(const NodeDesc& n) { return check_unary(n, Types::Numeric); }

OPFORGE_KERNEL(Relu, make_relu, check_relu).layout_flexible().post_op(relu_eltwise);

}  // namespace opforge_cpu
