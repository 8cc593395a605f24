// What QuantizedConvolution and QuantizedMatMul share (see opforge_cpu/ops/_quantized.py): the
// scales and zero points as oneDNN 3.x attributes, and a kernel that runs one int8 primitive
// (weights, weight scales and bias packed once at build time; a plain source reordered into the
// layout the primitive wants, in scratch, when they differ).
//
// oneDNN computes dst = saturate(round(post_ops(s_src * s_wei[c] * sum((src - z_src) * wei) + bias)
// / s_dst) + z_dst): DequantizeLinear -> op -> bias -> Relu/Clip -> QuantizeLinear of the QDQ
// graph, with the sum exact in s32 and rounding half to even (the CPU's default mode).
#pragma once

#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/dnnl_util.hpp"

namespace opforge_cpu {

struct QuantParams {
  float src_scale = 1.f;
  int32_t src_zero_point = 0;
  float dst_scale = 1.f;
  int32_t dst_zero_point = 0;
  DType out = DType::f32;
  bool has_bias = false;
  std::vector<float> wei_scales;
  std::vector<float> bias;
  int sum_input = -1;  // the residual operand the output buffer starts from (oneDNN sum)
  float sum_scale = 1.f;
  int32_t sum_zero_point = 0;
  std::vector<float> sum_clamp;  // [lo, hi] of the result before the residual is added, or empty
  std::vector<FusedOp> post_ops;  // fused Relu/Clamp, built by their kernels' post-ops
  // dst_zero_point * dst_scale added after the post-ops (eltwise_linear) instead of the
  // destination zero point: see fold_zero_points in quantized_convolution.cpp
  float dst_shift = 0.f;
};

// Reads the attributes and the constant inputs 2 (weight scales) and 3 (bias) of `n`, checking
// them against `channels` output channels; CompileFailure names what is wrong.
QuantParams quant_params(const NodeDesc& n, int64_t channels);
// "" when `n` is a quantized op the kernels can run (u8/i8 data, constant i8 weights, f32
// constant scales/bias, u8/i8/f32 output), else why not.
std::string check_quantized(const NodeDesc& n);
// src -> plain dst, quantizing (f32 -> u8/s8) or dequantizing (u8/s8 -> f32) with one scale and
// zero point: the kernels of Quantize and Dequantize.
std::unique_ptr<Kernel> make_scaled_convert(const TensorInfo& src, const TensorInfo& dst, bool quantize, float scale,
                                            int32_t zero_point);
// The "scale" attribute, checked positive and finite.
float positive_scale(const NodeDesc& n);
// The Quantize kernel's loop over n plain f32 values with a scale and zero point known only at
// run time (DynamicQuantize): y = saturate(round_half_to_even(x / scale) + zero_point) in u8.
void quantize_u8(RunContext& ctx, const float* x, uint8_t* y, int64_t n, float scale, int32_t zero_point);
// Scales (weights per `wei_mask`), zero points and post-ops on a primitive attribute.
dnnl::primitive_attr quant_attr(const QuantParams& q, int wei_mask);

class QuantizedKernel : public Kernel {
 public:
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound* bound) override;
  std::unique_ptr<Bound> bind(const TensorView* in, size_t n_in, const TensorView* out, size_t n_out,
                              void* scratch) override;
  size_t scratch_bytes() const override { return prim_scratch_ + src_bytes_ + 64; }
  std::string impl_name() const override { return impl_; }
  // appended to the exec type (after finish): how the kernel differs from oneDNN's defaults
  void add_impl_suffix(const std::string& s) { impl_ += s; }
  // The primitive reads a source padded by the kernel (after finish, whose source descriptor is
  // the padded dense channels-last [N, C, H + pads, W + pads] one): each run fills the border
  // with `value` (the source zero point: a real 0) and reorders the input into the interior,
  // which starts at (pad_top, pad_left).
  void prepad_source(int64_t pad_top, int64_t pad_left, uint8_t value);
  // weights, their scales and the bias are copied into the kernel: never read at run time
  bool packs_input(int i) const override { return i >= 1 && i != sum_input_; }
  // the residual operand is summed over the output buffer: the output is written over it
  // (unless the kernel copies it there itself, converting its layout)
  int required_inplace_input(int out) const override { return out == 0 && !sum_copy_ ? sum_input_ : -1; }
  // The residual operand (described by `src`) is reordered into the output buffer before each
  // run instead of sharing it.
  void copy_sum_operand(const dnnl::memory::desc& src);

  // Called once the primitive descriptor exists: packs the weights (plain `wei_plain` at
  // `wei_data`) into the layout it chose and keeps the scales, zero points and the bias
  // (described by `bias_md` when there is one).
  void finish(const dnnl::primitive& p, const dnnl::primitive_desc_base& pd, const dnnl::memory::desc& user_src,
              const void* wei_data, const dnnl::memory::desc& wei_plain, const dnnl::memory::desc& bias_md,
              const QuantParams& q);

 private:
  dnnl::primitive prim_;
  dnnl::reorder src_reorder_;
  bool has_src_reorder_ = false;
  dnnl::memory::desc src_md_, src_user_md_, dst_md_, scratch_md_;
  // prepad_source: the interior view of src_md_ the reorder writes, and the border
  bool prepad_ = false;
  dnnl::memory::desc interior_md_;
  int64_t pad_top_ = 0, pad_left_ = 0;
  uint8_t pad_value_ = 0;
  void fill_border(char* src) const;
  std::vector<std::pair<int, dnnl::memory>> consts_;  // weights, bias, scales, zero points
  size_t prim_scratch_ = 0, src_bytes_ = 0;
  int sum_input_ = -1;
  bool sum_copy_ = false;
  dnnl::reorder sum_reorder_;
  dnnl::memory::desc sum_md_;
  std::string impl_;
};

}  // namespace opforge_cpu
