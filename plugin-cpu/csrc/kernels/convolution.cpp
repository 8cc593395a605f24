// Convolution: one oneDNN primitive (weights pre-packed at compile time, fused post-ops), see core/nn.cpp.
#include "core/nn.hpp"

namespace opforge_cpu {

std::unique_ptr<Kernel> make_convolution(NodeDesc& n) { return make_dnnl_conv(n, false); }

}  // namespace opforge_cpu
