// oneDNN-backed building blocks shared by several kernels (convolutions, pooling, matmul).
#pragma once

#include "core/dnnl_util.hpp"

namespace opforge_cpu {

// Convolution / GroupConvolution, with fused bias, sum and eltwise post-ops (attributes
// "has_bias", "sum_input", "post_ops" set by the Python fusion pass).
std::unique_ptr<Kernel> make_dnnl_conv(NodeDesc& n, bool grouped);
// ConvolutionBackpropData / GroupConvolutionBackpropData.
std::unique_ptr<Kernel> make_dnnl_deconv(NodeDesc& n, bool grouped);
// MaxPool / AvgPool.
std::unique_ptr<Kernel> make_dnnl_pool(NodeDesc& n, bool max_pool);
// Begin/end paddings of a sliding window, resolving auto_pad against the known output size.
void window_pads(const NodeDesc& n, const Shape& in, const Shape& out, const std::vector<int64_t>& kernel,
                 const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations,
                 std::vector<int64_t>& pb, std::vector<int64_t>& pe);

std::string check_conv(const NodeDesc& n);

// A convolution node's window in oneDNN's terms (shared by the f32/bf16 and the int8
// convolutions): strides, dilations counted from 0, paddings resolved against the output size.
struct ConvGeometry {
  dnnl::memory::dims strides, dilations, pads_begin, pads_end;
};
ConvGeometry conv_geometry(const NodeDesc& n);
// A descriptor in the layout oneDNN prefers ("any").
dnnl::memory::desc any_md(DType t, const Shape& s);
// The forward-inference direct convolution of `g`; `bias` with zero dimensions means none.
dnnl::convolution_forward::primitive_desc conv_primitive(const ConvGeometry& g, const dnnl::memory::desc& src,
                                                         const dnnl::memory::desc& weights, const dnnl::memory::desc& bias,
                                                         const dnnl::memory::desc& dst, const dnnl::primitive_attr& attr);

}  // namespace opforge_cpu

namespace opforge_cpu {
// MatMul with transposes read in place, constant weights pre-packed, fused bias/sum/eltwise.
std::unique_ptr<Kernel> make_dnnl_matmul(NodeDesc& n);
std::string check_matmul(const NodeDesc& n);
// A fused attention (stop 16): when `qk` is a bf16 Q x K^T and `pv` the bf16 P x V that folds the
// Softmax of its scores, both split into chunks (attn_split.hpp) whose chunks can be paired, `pv`
// takes `qk`'s kernel and runs both in one parallel region; `qk` becomes a kernel that does
// nothing. The caller appends qk's inputs to pv's step after its `pv_inputs` own ones. False, and
// nothing changed, otherwise (OPFORGE_CPU_FUSED_ATTN=0 included).
bool fuse_attention(std::unique_ptr<Kernel>& qk, Kernel* pv, int pv_inputs);
}  // namespace opforge_cpu
