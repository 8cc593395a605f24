// Mish: element-wise, f32/f64; f32 runs oneDNN's eltwise_mish.
#include "kernels/common.hpp"

namespace opforge_cpu {

Eltwise mish_eltwise(const Attrs&) { return {dnnl::algorithm::eltwise_mish}; }

std::unique_ptr<Kernel> make_mish(NodeDesc& n) {
  return make_unary<Types::Float>(n, [](auto x) {
    using T = decltype(x);
    return x * std::tanh(x > T(20) ? x : T(std::log1p(std::exp(x))));
  }, mish_eltwise);
}

std::string check_mish(const NodeDesc& n) { return check_unary(n, Types::Float); }

OPFORGE_KERNEL(Mish, make_mish, check_mish).layout_flexible().post_op(mish_eltwise);

}  // namespace opforge_cpu
