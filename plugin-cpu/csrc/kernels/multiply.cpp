// Multiply: element-wise with NumPy/PDPD broadcasting (numeric types). Layout-flexible: a blocked
// input (a squeeze-excitation scale applied to a convolution's nChw16c output) runs as a oneDNN
// binary in that layout, see core/binary_blocked.hpp.
#include "core/binary_blocked.hpp"
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_multiply(NodeDesc& n) {
  auto plain = [](NodeDesc& d) { return make_binary<Types::Numeric>(d, [](auto a, auto b) { return decltype(a)(a * b); }); };
  if (has_blocked_input(n)) return make_blocked_binary(n, dnnl::algorithm::binary_mul, true, plain);
  return plain(n);
}

std::string check_multiply(const NodeDesc& n) { return check_binary(n); }

OPFORGE_KERNEL(Multiply, make_multiply, check_multiply).layout_flexible();

}  // namespace opforge_cpu
