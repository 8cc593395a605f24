// Which int8 depthwise QuantizedConvolutions run our own kernel (core/dw_conv_int8.hpp, stop 22)
// instead of oneDNN's primitive (quantized_dw_conv.cpp).
#pragma once

#include <memory>

#include "kernels/quantized_common.hpp"

namespace opforge_cpu {

// The kernel for QuantizedConvolution node `n` whose chosen primitive is `pd`, run with the
// final (possibly zero-point-folded) parameters `q`, reading the user's source `user_src` and
// writing pd's destination (the same bytes oneDNN's primitive writes), or nullptr (then oneDNN's
// primitive runs): OPFORGE_CPU_INT8_DW=0 (read once); a host without AVX2+FMA; not a depthwise
// 2D convolution ([C, 1, 1, k, k] weights over C channels); a source or destination that is not
// dense channels-last u8/s8, or a source pd would reorder; an f32 output, a residual sum,
// dilation; a kernel, stride or fused op without a tile (DwConvInt8::why_not); a primitive other
// than the ones whose bytes were checked (brdgmm_dw, jit_int8 with zero points, jit_uni_int8 at
// AVX2); and, at AVX-512, a 3x3 stride-2 one on brdgmm_dw (level with it: see the .cpp).
std::unique_ptr<Kernel> plan_quantized_dw_conv(const NodeDesc& n, const dnnl::convolution_forward::primitive_desc& pd,
                                               const QuantParams& q, const dnnl::memory::desc& user_src);

}  // namespace opforge_cpu
