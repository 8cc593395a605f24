// Exp: element-wise, f32/f64; f32 runs oneDNN's eltwise_exp.
#include "kernels/common.hpp"

namespace opforge_cpu {

Eltwise exp_eltwise(const Attrs&) { return {dnnl::algorithm::eltwise_exp}; }

std::unique_ptr<Kernel> make_exp(NodeDesc& n) {
  return make_unary<Types::Float>(n, [](auto x) {
    using T = decltype(x);
    return std::exp(x);
  }, exp_eltwise);
}

std::string check_exp(const NodeDesc& n) { return check_unary(n, Types::Float); }

OPFORGE_KERNEL(Exp, make_exp, check_exp).layout_flexible().post_op(exp_eltwise);

}  // namespace opforge_cpu
