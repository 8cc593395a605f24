// Add: element-wise with NumPy/PDPD broadcasting (numeric types). Layout-flexible: a blocked
// input (a per-channel bias or an unfused residual on a convolution's nChw16c output) runs as a
// oneDNN binary in that layout, see core/binary_blocked.hpp.
#include "core/binary_blocked.hpp"
#include "kernels/common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_add(NodeDesc& n) {
  auto plain = [](NodeDesc& d) { return make_binary<Types::Numeric>(d, [](auto a, auto b) { return decltype(a)(a + b); }); };
  if (has_blocked_input(n)) return make_blocked_binary(n, dnnl::algorithm::binary_add, true, plain);
  return plain(n);
}

std::string check_add(const NodeDesc& n) { return check_binary(n); }

OPFORGE_KERNEL(Add, make_add, check_add).layout_flexible();

}  // namespace opforge_cpu
