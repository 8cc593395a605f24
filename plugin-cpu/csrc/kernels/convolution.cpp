// Convolution: f32 as one oneDNN primitive (weights pre-packed at compile time, fused post-ops),
// see core/nn.cpp; i32 as an exact direct loop (integer_conv_common.hpp).
#include "kernels/integer_conv_common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_convolution(NodeDesc& n) { return make_conv_any(n, false); }
std::string check_convolution(const NodeDesc& n) { return check_conv_any(n); }

OPFORGE_KERNEL(Convolution, make_convolution, check_convolution).layout_flexible();

}  // namespace opforge_cpu
