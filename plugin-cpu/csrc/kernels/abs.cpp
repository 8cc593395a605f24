// Abs: element-wise, every numeric type; f32 runs oneDNN's eltwise_abs.
#include "kernels/common.hpp"

namespace opforge_cpu {

Eltwise abs_eltwise(const Attrs&) { return {dnnl::algorithm::eltwise_abs}; }

std::unique_ptr<Kernel> make_abs(NodeDesc& n) {
  return make_unary<Types::Numeric>(n, [](auto x) {
    using T = decltype(x);
    return std::is_unsigned_v<T> ? x : (x < T(0) ? T(-x) : x);
  }, abs_eltwise);
}

std::string check_abs(const NodeDesc& n) { return check_unary(n, Types::Numeric); }

OPFORGE_KERNEL(Abs, make_abs, check_abs).layout_flexible().post_op(abs_eltwise);

}  // namespace opforge_cpu
