// Asin: element-wise, f32/f64.
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_asin(NodeDesc& n) {
  return make_unary<Types::Float>(n, [](auto x) {
    using T = decltype(x);
    return std::asin(x);
  });
}

std::string check_asin(const NodeDesc& n) { return check_unary(n, Types::Float); }

OPFORGE_KERNEL(Asin, make_asin, check_asin);

}  // namespace opforge_cpu
