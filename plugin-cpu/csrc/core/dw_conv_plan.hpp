// Which depthwise convolutions run our own kernels (dw_conv_bf16.hpp, dw_conv_f32.hpp) instead
// of oneDNN's primitive (dw_conv_plan.cpp).
#pragma once

#include <memory>

#include "core/dw_conv_bf16.hpp"
#include "core/dw_conv_f32.hpp"
#include "core/grouped4_conv_f32.hpp"
#include "core/nn.hpp"

namespace opforge_cpu {

// Whether `md` is a dense channels-last (nhwc) 4D tensor: what our depthwise and grouped
// kernels read and write in a primitive's place (also the int8 one, quantized_dw_conv.cpp).
bool dense_nhwc(const dnnl::memory::desc& md);

// The kernel for GroupConvolution node `n` whose chosen bf16 primitive is `pd`, reading and
// writing exactly pd's source and destination (so the neighbours see what oneDNN would have
// given), or nullptr (then oneDNN's primitive runs): OPFORGE_CPU_DW_KERNEL=0 (read once), a host
// without AVX512_BF16, a layout other than dense channels-last, dilation, a kernel width or stride
// without a tile, run-time weights or bias, a residual sum or a fused op it does not run.
std::unique_ptr<DwConvBf16> plan_dw_conv_bf16(const NodeDesc& n, const dnnl::convolution_forward::primitive_desc& pd);

// The same for an f32 one (dense channels-last f32 source and destination, as brdgmm_dw): the
// AVX-512 build where oneDNN's effective ISA reaches AVX512_CORE, the AVX2 one where it reaches
// AVX2 (ONEDNN_MAX_CPU_ISA=AVX2 picks it), for a 5x5 or 7x7 kernel, or a 3x3 one with a fused
// Swish, ReLU, Clip or nothing on the 3x3 tile (stop 21; at AVX2 a 3x3 one only at stride 1; a
// 3x3 HardSwish keeps brdgmm_dw), where it was faster than brdgmm_dw per shape;
// OPFORGE_CPU_DW_F32_3X3_RELU=0 gives stop 17's rule (3x3 only with a Swish, on the general
// tile); OPFORGE_CPU_DW_F32=0 (read once) keeps oneDNN's primitive for all.
std::unique_ptr<DwConvF32> plan_dw_conv_f32(const NodeDesc& n, const dnnl::convolution_forward::primitive_desc& pd);

// Whether GroupConvolution node `n` (f32, groups of 4 in and 4 out, constant weights, no residual
// sum) is one for our grouped-4 kernel on this host (an AVX2 host without AVX-512, stop 22), so
// that nn.cpp asks oneDNN for a channels-last primitive to run it over; OPFORGE_CPU_GROUPED4_F32=0
// (read once): never.
bool grouped4_conv_f32_candidate(const NodeDesc& n);
// The kernel for such a node over pd's source and destination (dense channels-last f32), or
// nullptr: another layout, dilation, a shape or fused op it does not run, non-finite weights.
std::unique_ptr<Grouped4ConvF32> plan_grouped4_conv_f32(const NodeDesc& n,
                                                        const dnnl::convolution_forward::primitive_desc& pd);

}  // namespace opforge_cpu
