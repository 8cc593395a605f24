// The rules for our depthwise kernels. bf16 (dw_conv_bf16.cpp): every bf16 depthwise 2D
// convolution that oneDNN would run channels-last, when the kernel has a tile for its width and
// stride and runs its fused ops. Measured per shape against oneDNN 3.2's brdgmm_dw at one thread
// (benchmarks/dw_conv_bench.cpp, docs/kernel-library.md "Our bf16 depthwise kernel"). f32
// (dw_conv_f32.cpp): the same conditions, where it beat brdgmm_dw (benchmarks/dw_conv_f32_bench.cpp,
// docs/kernel-library.md "Our f32 depthwise kernel").
#include "core/dw_conv_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/env_switch.hpp"
#include "core/fused_post_ops.hpp"
#include "core/host_isa.hpp"

namespace opforge_cpu {

namespace {

bool enabled() {
  // OPFORGE_CPU_DW_KERNEL=0: oneDNN's primitive instead, for same-build A/B measurements
  static const bool on = env_switch_on("OPFORGE_CPU_DW_KERNEL");
  return on;
}

// Whether the bf16 kernel's host rule applies (plan_dw_conv_bf16). OPFORGE_CPU_DW_BF16_HOST_RULE=0:
// our kernel for every shape it runs on every AVX512_BF16 host, as before stop 18, for
// same-build A/B measurements.
bool bf16_host_rule() {
  static const bool on = env_switch_on("OPFORGE_CPU_DW_BF16_HOST_RULE");
  return on;
}

bool f32_enabled() {
  // OPFORGE_CPU_DW_F32=0: oneDNN's primitive for f32 ones, for same-build A/B measurements
  static const bool on = env_switch_on("OPFORGE_CPU_DW_F32");
  return on;
}

// Whether 3x3 f32 ones take the 3x3 tile (dw_conv_f32_tile3.inc) and, with ReLU/Clip/nothing
// fused, our kernel where it beat brdgmm_dw (plan_dw_conv_f32). OPFORGE_CPU_DW_F32_3X3_RELU=0:
// stop 17's rule and the general tile, for same-build A/B measurements.
bool f32_3x3_relu() {
  static const bool on = env_switch_on("OPFORGE_CPU_DW_F32_3X3_RELU");
  return on;
}

// The fused ops as the kernel's post-ops (oneDNN's order: out_scale, then the fused list), or
// false for one it does not run.
bool dw_post_ops(const NodeDesc& n, std::vector<PostOp>& post) {
  if (n.attrs.has("out_scale")) post.push_back({PostOp::linear, static_cast<float>(n.attrs.f("out_scale")), 0.f});
  return append_post_ops(n.attrs.fused_ops("post_ops"), post);
}

// The geometry of a depthwise convolution our kernels can run over pd's source and destination
// of type `t` (dense channels-last), with its fused ops, or false.
bool dw_geometry(const NodeDesc& n, const dnnl::convolution_forward::primitive_desc& pd, dnnl::memory::data_type t,
                 DwGeometry& g, std::vector<PostOp>& post) {
  using dt = dnnl::memory::data_type;
  const Shape& ws = n.in(1).shape;
  const Shape& xs = n.in(0).shape;
  const Shape& ys = n.outputs[0].shape;
  // weights [C, 1, 1, kh, kw] of a 2D convolution over C channels, constant f32
  if (ws.size() != 5 || xs.size() != 4 || ys.size() != 4 || ws[1] != 1 || ws[2] != 1) return false;
  if (ws[0] != xs[1] || ys[1] != xs[1] || !n.is_const(1) || n.in(1).dtype != DType::f32) return false;
  if (n.attrs.i("sum_input", -1) >= 0) return false;
  if (n.attrs.b("has_bias", false) && (!n.is_const(2) || n.in(2).dtype != DType::f32)) return false;
  const auto src = pd.src_desc(), dst = pd.dst_desc();
  if (src.get_data_type() != t) return false;
  if (dst.get_data_type() != t && !(t == dt::bf16 && dst.get_data_type() == dt::f32)) return false;
  if (!dense_nhwc(src) || !dense_nhwc(dst)) return false;
  const auto strides = pd.get_strides(), dil = pd.get_dilations(), pl = pd.get_padding_l();
  if (dil[0] != 0 || dil[1] != 0 || pl[0] < 0 || pl[1] < 0) return false;
  if (!DwConvBf16::shape_supported(ws[4], strides[1]) || strides[0] < 1 || ws[3] > 7) return false;
  for (int64_t d : xs)
    if (d <= 0) return false;
  if (!dw_post_ops(n, post)) return false;
  g = DwGeometry{xs[0], xs[1], xs[2], xs[3], ys[2], ys[3], ws[3], ws[4], strides[0], strides[1], pl[0], pl[1]};
  return true;
}

}  // namespace

bool dense_nhwc(const dnnl::memory::desc& md) {
  return md.get_ndims() == 4 &&
         md == dnnl::memory::desc(md.get_dims(), md.get_data_type(), dnnl::memory::format_tag::acdb);
}

std::unique_ptr<DwConvBf16> plan_dw_conv_bf16(const NodeDesc& n, const dnnl::convolution_forward::primitive_desc& pd) {
  // AVX512_BF16 in the CPU and in oneDNN's effective ISA (host_isa.hpp: ONEDNN_MAX_CPU_ISA=AVX2
  // emulates an AVX2 host, which keeps oneDNN)
  if (!enabled() || !DwConvBf16::host_supported()) return nullptr;
  DwGeometry g{};
  std::vector<PostOp> post;
  if (!dw_geometry(n, pd, dnnl::memory::data_type::bf16, g, post)) return nullptr;
  // Without AMX (an AMD EPYC Zen 5 VM, stop 18) oneDNN's brdgmm_dw beat ours at one thread on
  // 3x3 kernels without a Swish: 0.64-1.02 of our time per step on mobilenet_v2's 17 (ReLU6),
  // 0.70-0.94 on mobilenet_v3_large's 3x3 ones (ReLU, HardSwish), while ours stayed ahead with a
  // Swish (tv_efficientnet_b0: ours 0.63-0.95 of brdgmm_dw's time on all 16 steps) and level on
  // 5x5 (docs/kernel-library.md "Our bf16 depthwise kernel on a host without AMX"). The rule is
  // the f32 kernel's at AVX-512 (plan_dw_conv_f32). It is keyed on AMX because the AMX hosts of
  // stops 16-17 are where ours was measured faster: they keep every shape on ours, unchanged.
  const bool swish = std::any_of(post.begin(), post.end(), [](const PostOp& p) { return p.kind == PostOp::swish; });
  if (bf16_host_rule() && !host_has_amx() && g.kw < 5 && !swish) return nullptr;
  const bool has_bias = n.attrs.b("has_bias", false);
  return std::make_unique<DwConvBf16>(g, static_cast<const float*>(n.inputs[1].const_data),
                                      has_bias ? static_cast<const float*>(n.inputs[2].const_data) : nullptr,
                                      std::move(post), pd.dst_desc().get_data_type() == dnnl::memory::data_type::bf16);
}

std::unique_ptr<DwConvF32> plan_dw_conv_f32(const NodeDesc& n, const dnnl::convolution_forward::primitive_desc& pd) {
  if (!enabled() || !f32_enabled()) return nullptr;
  // the widest build the CPU and oneDNN's effective ISA allow (host_isa.hpp)
  DwConvF32::Isa isa;
  if (DwConvF32::host_supported(DwConvF32::Isa::avx512)) isa = DwConvF32::Isa::avx512;
  else if (DwConvF32::host_supported(DwConvF32::Isa::avx2)) isa = DwConvF32::Isa::avx2;
  else return nullptr;
  DwGeometry g{};
  std::vector<PostOp> post;
  if (!dw_geometry(n, pd, dnnl::memory::data_type::f32, g, post)) return nullptr;
  // 3x3 with ReLU / Clip / nothing: brdgmm_dw was as fast (0.8-1.4 per shape at AVX-512, 1.1-2.2
  // at AVX2); its Swish costs more than ours (3x3 with Swish 0.7-1.0 at AVX-512; at AVX2 0.84-1.02
  // at stride 1, 1.02-1.38 at stride 2). 5x5 and 7x7: 0.7-1.0 (stride-2 5x5 level) at both.
  const bool swish = std::any_of(post.begin(), post.end(), [](const PostOp& p) { return p.kind == PostOp::swish; });
  // Stop 21: the 3x3 tile (two output rows at once, each source vector loaded once for both)
  // beat brdgmm_dw with ReLU6 on every 3x3 stride-1 shape measured (Zen 5 VM, one thread), at
  // AVX-512 (0.57-0.72 per shape) and at AVX2 (0.69-0.87); at stride 2 it was 0.80-1.05 at
  // AVX-512 (summed 0.95-0.96: taken) and 1.09-1.16 at AVX2 (kept on brdgmm_dw)
  // (docs/kernel-library.md "A 3x3 tile for ReLU/ReLU6 (stop 21)"). HardSwish was not measured
  // against brdgmm_dw: it keeps it. The 3x3 Swish ones take the 3x3 tile too (same bits,
  // 0.52-0.76 of brdgmm_dw at AVX-512 where the general tile was 0.60-0.90).
  const bool tile3 = f32_3x3_relu() && DwConvF32::tile3_supported(g);
  const bool relu_like = std::all_of(post.begin(), post.end(), [](const PostOp& p) {
    return p.kind == PostOp::relu || p.kind == PostOp::clip || p.kind == PostOp::linear;
  });
  const bool take_swish = swish && (isa == DwConvF32::Isa::avx512 || g.sw == 1);
  const bool take_relu = tile3 && relu_like && (isa == DwConvF32::Isa::avx512 || g.sw == 1);
  if (g.kw < 5 && !take_swish && !take_relu) return nullptr;
  const bool has_bias = n.attrs.b("has_bias", false);
  return std::make_unique<DwConvF32>(g, static_cast<const float*>(n.inputs[1].const_data),
                                     has_bias ? static_cast<const float*>(n.inputs[2].const_data) : nullptr,
                                     std::move(post), isa, tile3);
}

// Groups of 4 on an AVX2 host (stop 22): oneDNN 3.2 runs them as gemm:jit there, ~3.5 ms for
// each of ResNeXt-50's 128-channel 56x56 ones at one thread (docs/kernel-library.md "Groups of 4
// on an AVX2 host (stop 22)"). AVX-512 hosts have oneDNN's jit kernel for them and keep it.
bool grouped4_conv_f32_candidate(const NodeDesc& n) {
  static const bool on = env_switch_on("OPFORGE_CPU_GROUPED4_F32");
  if (!on || !enabled() || !Grouped4ConvF32::host_supported()) return false;
  const Shape& ws = n.in(1).shape;  // [G, O/G, I/G, kh, kw]
  const Shape& xs = n.in(0).shape;
  return ws.size() == 5 && xs.size() == 4 && ws[1] == 4 && ws[2] == 4 && ws[0] * 4 == xs[1] && xs[1] % 8 == 0 &&
         n.is_const(1) && n.in(1).dtype == DType::f32 && n.in(0).dtype == DType::f32 &&
         n.attrs.i("sum_input", -1) < 0 && (!n.attrs.b("has_bias", false) || (n.is_const(2) && n.in(2).dtype == DType::f32));
}

std::unique_ptr<Grouped4ConvF32> plan_grouped4_conv_f32(const NodeDesc& n,
                                                        const dnnl::convolution_forward::primitive_desc& pd) {
  if (!grouped4_conv_f32_candidate(n)) return nullptr;
  const Shape& ws = n.in(1).shape;
  const Shape& xs = n.in(0).shape;
  const Shape& ys = n.outputs[0].shape;
  using dt = dnnl::memory::data_type;
  if (ys.size() != 4 || ys[1] != xs[1]) return nullptr;
  const auto src = pd.src_desc(), dst = pd.dst_desc();
  if (src.get_data_type() != dt::f32 || dst.get_data_type() != dt::f32 || !dense_nhwc(src) || !dense_nhwc(dst))
    return nullptr;
  const auto strides = pd.get_strides(), dil = pd.get_dilations(), pl = pd.get_padding_l();
  if (dil[0] != 0 || dil[1] != 0) return nullptr;
  std::vector<PostOp> post;
  if (!dw_post_ops(n, post)) return nullptr;
  const DwGeometry g{xs[0], xs[1], xs[2], xs[3], ys[2], ys[3], ws[3], ws[4], strides[0], strides[1], pl[0], pl[1]};
  if (!Grouped4ConvF32::shape_supported(g)) return nullptr;
  // (a window's columns outside the image are read as zeros and multiplied in: exact only for
  // finite weights)
  const float* w = static_cast<const float*>(n.inputs[1].const_data);
  const int64_t count = ws[0] * 16 * ws[3] * ws[4];
  for (int64_t i = 0; i < count; ++i)
    if (!std::isfinite(w[i])) return nullptr;
  const bool has_bias = n.attrs.b("has_bias", false);
  return std::make_unique<Grouped4ConvF32>(g, w, has_bias ? static_cast<const float*>(n.inputs[2].const_data) : nullptr,
                                           std::move(post));
}

}  // namespace opforge_cpu
