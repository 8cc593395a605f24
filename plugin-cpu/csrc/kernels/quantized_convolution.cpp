// QuantizedConvolution (opforge_cpu/ops/quantized_convolution.py): one oneDNN int8 convolution,
// u8/s8 source with a zero point, s8 weights with per-output-channel scales (packed once), f32
// bias, fused relu/clip, and a u8/s8 (requantized) or f32 destination. oneDNN picks the kernel
// for the host: AMX, AVX-512 VNNI, AVX2 VNNI or plain AVX2 u8s8.
#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/env_switch.hpp"
#include "core/nn.hpp"
#include "kernels/quantized_common.hpp"
#include "kernels/quantized_dw_conv.hpp"

namespace opforge_cpu {

namespace {

// OPFORGE_CPU_INT8_ZP_FOLD=0 keeps the zero points as oneDNN attributes (for A/B runs).
bool zp_fold_enabled() {
  static const bool on = env_switch_on("OPFORGE_CPU_INT8_ZP_FOLD");
  return on;
}

// OPFORGE_CPU_INT8_ZP_FOLD_ANY=0: fold only where that gets brgconv (stop 15's rule, for A/B
// runs). By default the zero points also fold where the kernel stays the same (an AVX2 host's
// jit_uni_int8, a VNNI host's brgconv that took the zero points): oneDNN's source zero point
// costs those kernels 1.01-1.09x on 1x1 and 1.25-1.9x on padded 3x3 convolutions (AVX2), 1.06-
// 1.40x (AVX2 VNNI), 1.08-1.11x (AVX-512 VNNI); see kernel-library.md "int8 on AVX2 hosts".
bool zp_fold_any() {
  static const bool on = env_switch_on("OPFORGE_CPU_INT8_ZP_FOLD_ANY");
  return on;
}

// oneDNN 3.2 offers its AMX brgconv kernels only without zero points (with them an AMX host gets
// the older jit_1x1 / jit kernels: 1x1 MobileNet/ResNet shapes ran 0.4-0.8x the time folded,
// 3x3 ones 0.4-0.9x over a source padded by the kernel; OpenVINO's own oneDNN fork runs brgconv
// there). Both zero points fold away when every cell a window reads holds real data or the
// source zero point:
//   s_src s_w[k] sum((x - z_src) w) + b[k] = s_src s_w[k] sum(x w) + (b[k] - s_src s_w[k] z_src sum(w[k]))
// and  round(y / s_dst) + z_dst = round((y + z_dst s_dst) / s_dst), the shift as a final
// eltwise_linear post-op. The s32 sum stays exact; only the float rounding of the scaled sum
// and of the shift differ, so a value within about 1e-5 of a rounding tie may land one step
// the other way (the tests hold every output within one step of ONNX Runtime).
QuantParams fold_zero_points(const QuantParams& q, const NodeDesc& n, int64_t channels) {
  QuantParams f = q;
  if (q.src_zero_point != 0) {
    const int8_t* w = static_cast<const int8_t*>(n.inputs[1].const_data);
    int64_t per = 1;  // weights of one output channel: [C_out(, per group), C_in / G, k...] rows
    for (size_t i = n.in(1).shape.size() == n.in(0).shape.size() ? 1 : 2; i < n.in(1).shape.size(); ++i) per *= n.in(1).shape[i];
    if (!f.has_bias) f.bias.assign(static_cast<size_t>(channels), 0.f);
    f.has_bias = true;
    for (int64_t k = 0; k < channels; ++k) {
      int64_t sum = 0;
      for (int64_t i = 0; i < per; ++i) sum += w[k * per + i];
      f.bias[k] = static_cast<float>(static_cast<double>(f.bias[k]) - static_cast<double>(q.src_scale) * q.wei_scales[k] *
                                                                            static_cast<double>(q.src_zero_point) * static_cast<double>(sum));
    }
    f.src_zero_point = 0;
  }
  if (q.out != DType::f32 && q.dst_zero_point != 0) {
    f.dst_shift = static_cast<float>(static_cast<double>(q.dst_zero_point) * q.dst_scale);
    f.dst_zero_point = 0;
  }
  return f;
}

// Padded 3x3 convolutions over fewer source channels than this ran as fast or slower folded
// (16->32 28x28 1.13x, 32->96 1.12x, 16->48 14x14 0.90x; from 64 channels 0.40-0.97x), before
// the border the kernel fills each run.
constexpr int64_t kMinPrepadChannels = 64;

bool is_brgconv(const dnnl::convolution_forward::primitive_desc& p) {
  const char* impl = p.impl_info_str();
  return impl != nullptr && std::string(impl).rfind("brg", 0) == 0;
}

// the folded primitive is worth taking: oneDNN's brgconv, or (zp_fold_any) the kernel the zero
// points had, now without them
bool fold_pays(const dnnl::convolution_forward::primitive_desc& alt, const dnnl::convolution_forward::primitive_desc& had) {
  if (is_brgconv(alt)) return true;
  const char* a = alt.impl_info_str();
  const char* h = had.impl_info_str();
  return zp_fold_any() && a != nullptr && h != nullptr && std::string(a) == h && std::string(a).rfind("ref", 0) != 0;
}

// oneDNN 3.2's int8 brgconv:avx512_core_amx sums wrongly when the window equals the stride (> 1:
// ConvNeXt's 2x2/2 downsampling, 4x4/4) and the input channels a group are 32 modulo 64 (96, 160,
// 224, 288): 9-18 quantization steps off ONNX Runtime with every zero point 0, 240 folded on
// ConvNeXt's 96 -> 192 at 56x56 (48, 80, 104-128, 192, 384 channels and 96 at 3x3/2, 2x2/1,
// 1x1/2 are exact; 32 only at 2x2/2: at 4x4/4 and at SegFormer's 8x8/8 it is 208-228 steps off
// with folded zero points, stop 28; real-models.md "Stop 27: int8 on the Intel AMX host" and
// "Stop 28: int8 re-runs"). Such a convolution takes the next implementation that is not
// brgconv (jit:avx512_core_amx there); the folded zero points stay exact on any kernel.
// OPFORGE_CPU_INT8_AMX_STRIDE_GUARD=0 keeps brgconv (to reproduce).
bool amx_brgconv_miscomputes(const dnnl::convolution_forward::primitive_desc& p, const ConvGeometry& geo,
                             const Shape& ws, bool grouped) {
  static const bool on = env_switch_on("OPFORGE_CPU_INT8_AMX_STRIDE_GUARD");
  const char* impl = p.impl_info_str();
  if (!on || impl == nullptr || std::string(impl).rfind("brgconv:avx512_core_amx", 0) != 0) return false;
  const size_t first_tap = grouped ? 3 : 2;  // [G, O/G, I/G, k...] or [O, I, k...]
  if (ws[first_tap - 1] % 64 != 32) return false;
  bool strided = false;
  for (size_t i = first_tap; i < ws.size(); ++i) {
    const size_t d = i - first_tap;
    if (d >= geo.strides.size() || ws[i] != geo.strides[d] || (d < geo.dilations.size() && geo.dilations[d] != 0)) return false;
    strided = strided || geo.strides[d] > 1;
  }
  return strided;
}

}  // namespace

std::string check_quantized_convolution(const NodeDesc& n) {
  std::string why = check_quantized(n);
  if (!why.empty()) return why;
  const size_t r = n.in(0).shape.size();
  if (r < 3 || r > 5) return "convolution of rank " + std::to_string(r) + " is not supported (1D to 3D)";
  if (n.in(1).shape.size() != r && n.in(1).shape.size() != r + 1) return "weights must have the data's rank (or one more: grouped)";
  return "";
}

std::unique_ptr<Kernel> make_quantized_convolution(NodeDesc& n) {
  std::string why = check_quantized_convolution(n);
  if (!why.empty()) throw CompileFailure(why);
  const Shape& xs = n.in(0).shape;
  const Shape& ws = n.in(1).shape;
  const Shape& ys = n.outputs[0].shape;
  const bool grouped = ws.size() == xs.size() + 1;
  const ConvGeometry geo = conv_geometry(n);
  const int64_t channels = ys[1];
  QuantParams q = quant_params(n, channels);
  // per output channel: dimension 0 of [C_out, C_in, k...], dimensions 0 and 1 of [G, C_out/G, ...]
  const int wei_mask = grouped ? 3 : 1;
  dnnl::primitive_attr attr = quant_attr(q, wei_mask);

  auto wdims = to_dims(ws);
  auto w_plain = plain_md(DType::i8, ws);
  auto w_any = dnnl::memory::desc(wdims, dnnl::memory::data_type::s8, dnnl::memory::format_tag::any);
  auto bias_md = dnnl::memory::desc({channels}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
  auto user_src = md_of(n.in(0));
  // with a residual operand the output is written over it, so it takes that tensor's layout
  auto mk = [&](const dnnl::memory::desc& s) {
    auto d = q.sum_input >= 0 ? md_of(n.in(q.sum_input)) : any_md(q.out, ys);
    return conv_primitive(geo, s, w_any, q.has_bias ? bias_md : dnnl::memory::desc(), d, attr);
  };
  auto is_ref = [](const dnnl::convolution_forward::primitive_desc& p) {
    const char* impl = p.impl_info_str();
    return impl == nullptr || std::string(impl).rfind("ref", 0) == 0;
  };
  bool sum_copy = false;
  auto select = [&]() {
    dnnl::convolution_forward::primitive_desc pd;
    sum_copy = false;
    try {
      // the source layout the fastest implementation wants (nhwc for int8); a tensor in another
      // layout is reordered into scratch by the kernel
      pd = mk(any_md(n.in(0).dtype, xs));
    } catch (const dnnl::error&) {
      pd = mk(user_src);
    }
    // A residual operand in a layout only oneDNN's reference convolution writes (a plain nchw
    // tensor from a Quantize) is copied into the output buffer in the layout the fast one wants,
    // by the kernel, instead of fixing the output's layout to it.
    if (q.sum_input >= 0 && is_ref(pd)) {
      const int keep = q.sum_input;
      q.sum_input = -1;  // build the descriptor with an "any" destination
      auto any_pd = mk(any_md(n.in(0).dtype, xs));
      q.sum_input = keep;
      if (!is_ref(any_pd)) {
        pd = any_pd;
        sum_copy = true;
      }
    }
    return pd;
  };
  dnnl::convolution_forward::primitive_desc pd = select();
  // The clamp before the sum (eltwise, then sum) is an order some oneDNN kernels may not take:
  // rather than a reference convolution, run without it (the result then goes unsaturated into
  // the sum, as before the clamp existed)
  if (!q.sum_clamp.empty() && is_ref(pd)) {
    q.sum_clamp.clear();
    attr = quant_attr(q, wei_mask);
    pd = select();
  }
  // A convolution with zero points that oneDNN gives a non-brgconv kernel: the same with the
  // zero points folded into the bias and a final shift (fold_zero_points), when that gets
  // brgconv. The destination's zero point always folds; the source's where no padding cell is
  // read, or, for a padded 2D convolution, over a source the kernel pads itself with the zero
  // point (a real 0, as the QDQ graph's padding is) and that the primitive reads unpadded.
  bool folded = false, prepadded = false;
  const int32_t src_zero_point = q.src_zero_point;
  const auto& pb = geo.pads_begin;
  const auto& pe = geo.pads_end;
  const bool unpadded = std::all_of(pb.begin(), pb.end(), [](auto p) { return p == 0; }) &&
                        std::all_of(pe.begin(), pe.end(), [](auto p) { return p == 0; });
  if (zp_fold_enabled() && (q.src_zero_point != 0 || (q.out != DType::f32 && q.dst_zero_point != 0)) &&
      (!is_brgconv(pd) || zp_fold_any())) {
    if (unpadded || q.src_zero_point == 0) {
      const QuantParams keep_q = q;
      const dnnl::primitive_attr keep_attr = attr;
      const bool keep_copy = sum_copy;
      q = fold_zero_points(q, n, channels);
      attr = quant_attr(q, wei_mask);
      dnnl::convolution_forward::primitive_desc alt;
      try {
        alt = select();
      } catch (const dnnl::error&) {
      }
      if (alt && fold_pays(alt, pd)) {
        pd = alt;
        folded = true;
      } else {
        q = keep_q;
        attr = keep_attr;
        sum_copy = keep_copy;
      }
    } else if (xs.size() == 4 && !grouped && q.sum_input < 0 && xs[1] >= kMinPrepadChannels &&
               std::all_of(pb.begin(), pb.end(), [](auto p) { return p >= 0; }) &&
               std::all_of(pe.begin(), pe.end(), [](auto p) { return p >= 0; })) {
      const QuantParams f = fold_zero_points(q, n, channels);
      const dnnl::primitive_attr fattr = quant_attr(f, wei_mask);
      const dnnl::memory::desc padded({xs[0], xs[1], xs[2] + pb[0] + pe[0], xs[3] + pb[1] + pe[1]}, dnnl_type(n.in(0).dtype),
                                      dnnl::memory::format_tag::acdb);
      ConvGeometry unpadded_geo = geo;
      unpadded_geo.pads_begin = {0, 0};
      unpadded_geo.pads_end = {0, 0};
      dnnl::convolution_forward::primitive_desc alt;
      try {
        alt = conv_primitive(unpadded_geo, padded, w_any, f.has_bias ? bias_md : dnnl::memory::desc(), any_md(f.out, ys), fattr);
      } catch (const dnnl::error&) {
      }
      if (alt && fold_pays(alt, pd) && alt.src_desc() == padded) {
        pd = alt;
        q = f;
        attr = fattr;
        folded = prepadded = true;
      }
    }
  }
  if (amx_brgconv_miscomputes(pd, geo, ws, grouped)) {
    bool moved = false;
    while (pd.next_impl()) {
      if (!is_brgconv(pd)) {
        moved = true;
        break;
      }
    }
    // oneDNN's reference convolution is slow but right; only brgconv variants left is a refusal
    if (!moved) throw CompileFailure("oneDNN 3.2 has no int8 kernel but brgconv:avx512_core_amx for this convolution (window == stride, " +
                                     std::to_string(ws[grouped ? 2 : 1]) + " input channels a group), and that kernel miscomputes it on AMX hosts");
  }
  // a depthwise one: our own kernel where it qualifies (quantized_dw_conv.cpp), with the final
  // parameters, writing pd's destination
  if (grouped && !prepadded && !sum_copy) {
    if (auto dw = plan_quantized_dw_conv(n, pd, q, user_src)) {
      n.outputs[0].md = pd.dst_desc();
      n.outputs[0].blocked = pd.dst_desc() != plain_md(q.out, ys);
      return dw;
    }
  }
  auto k = std::make_unique<QuantizedKernel>();
  k->finish(dnnl::convolution_forward(pd), pd, user_src, n.inputs[1].const_data, w_plain, bias_md, q);
  if (prepadded) k->prepad_source(pb[0], pb[1], static_cast<uint8_t>(src_zero_point));
  if (folded) k->add_impl_suffix(prepadded ? "+zp_folded+prepad" : "+zp_folded");
  if (sum_copy) k->copy_sum_operand(md_of(n.in(q.sum_input)));
  n.outputs[0].md = pd.dst_desc();
  n.outputs[0].blocked = pd.dst_desc() != plain_md(q.out, ys);
  return k;
}

OPFORGE_KERNEL(QuantizedConvolution, make_quantized_convolution, check_quantized_convolution).layout_flexible();

}  // namespace opforge_cpu
