// Sqrt: element-wise, f32/f64; f32 runs oneDNN's eltwise_sqrt.
#include "kernels/common.hpp"

namespace opforge_cpu {

Eltwise sqrt_eltwise(const Attrs&) { return {dnnl::algorithm::eltwise_sqrt}; }

std::unique_ptr<Kernel> make_sqrt(NodeDesc& n) {
  return make_unary<Types::Float>(n, [](auto x) {
    using T = decltype(x);
    return std::sqrt(x);
  }, sqrt_eltwise);
}

std::string check_sqrt(const NodeDesc& n) { return check_unary(n, Types::Float); }

OPFORGE_KERNEL(Sqrt, make_sqrt, check_sqrt).layout_flexible().post_op(sqrt_eltwise);

}  // namespace opforge_cpu
