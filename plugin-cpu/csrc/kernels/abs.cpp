// Abs: element-wise, every numeric type; f32 runs oneDNN's eltwise "abs".
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_abs(NodeDesc& n) {
  return make_unary<Types::Numeric>(n, [](auto x) {
    using T = decltype(x);
    return std::is_unsigned_v<T> ? x : (x < T(0) ? T(-x) : x);
  }, "abs");
}

std::string check_abs(const NodeDesc& n) { return check_unary(n, Types::Numeric); }

}  // namespace opforge_cpu
