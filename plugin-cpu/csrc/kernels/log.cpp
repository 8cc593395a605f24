// Log: element-wise, f32/f64.
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_log(NodeDesc& n) {
  return make_unary<Types::Float>(n, [](auto x) {
    using T = decltype(x);
    return std::log(x);
  });
}

std::string check_log(const NodeDesc& n) { return check_unary(n, Types::Float); }

OPFORGE_KERNEL(Log, make_log, check_log);

}  // namespace opforge_cpu
