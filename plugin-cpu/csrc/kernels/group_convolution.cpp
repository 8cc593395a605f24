// GroupConvolution: f32 as one oneDNN primitive (weights pre-packed at compile time, fused
// post-ops), see core/nn.cpp; i32 as an exact direct loop (integer_conv_common.hpp).
#include "kernels/integer_conv_common.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_group_convolution(NodeDesc& n) { return make_conv_any(n, true); }
std::string check_group_convolution(const NodeDesc& n) { return check_conv_any(n); }

OPFORGE_KERNEL(GroupConvolution, make_group_convolution, check_group_convolution).layout_flexible();

}  // namespace opforge_cpu
