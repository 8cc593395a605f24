// GroupConvolutionBackpropData: one oneDNN primitive (weights pre-packed at compile time, fused post-ops), see core/nn.cpp.
#include "core/nn.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_group_convolution_backprop_data(NodeDesc& n) { return make_dnnl_deconv(n, true); }

OPFORGE_KERNEL(GroupConvolutionBackpropData, make_group_convolution_backprop_data, check_conv).layout_flexible();

}  // namespace opforge_cpu
