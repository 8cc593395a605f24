// Which bf16 depthwise convolutions run our own kernel (dw_conv_bf16.hpp) instead of oneDNN's
// primitive (dw_conv_plan.cpp).
#pragma once

#include <memory>

#include "core/dw_conv_bf16.hpp"
#include "core/nn.hpp"

namespace opforge_cpu {

// The kernel for GroupConvolution node `n` whose chosen bf16 primitive is `pd`, reading and
// writing exactly pd's source and destination (so the neighbours see what oneDNN would have
// given), or nullptr (then oneDNN's primitive runs): OPFORGE_CPU_DW_KERNEL=0 (read once), a host
// without AVX512_BF16, a layout other than dense channels-last, dilation, a kernel width or stride
// without a tile, run-time weights or bias, a residual sum or a fused op it does not run.
std::unique_ptr<DwConvBf16> plan_dw_conv_bf16(const NodeDesc& n, const dnnl::convolution_forward::primitive_desc& pd);

}  // namespace opforge_cpu
