// Tanh: element-wise, f32/f64; f32 runs oneDNN's eltwise_tanh.
#include "kernels/common.hpp"

namespace opforge_cpu {

Eltwise tanh_eltwise(const Attrs&) { return {dnnl::algorithm::eltwise_tanh}; }

std::unique_ptr<Kernel> make_tanh(NodeDesc& n) {
  return make_unary<Types::Float>(n, [](auto x) {
    using T = decltype(x);
    return std::tanh(x);
  }, tanh_eltwise);
}

std::string check_tanh(const NodeDesc& n) { return check_unary(n, Types::Float); }

OPFORGE_KERNEL(Tanh, make_tanh, check_tanh).layout_flexible().post_op(tanh_eltwise);

}  // namespace opforge_cpu
