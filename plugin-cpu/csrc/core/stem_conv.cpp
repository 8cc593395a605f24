// The stem rule: which first convolutions run our direct kernel (stem_conv_compute.cpp) instead
// of oneDNN 3.2's primitive. Measured per shape, one thread, alternating with oneDNN's reorder to
// nhwc + jit:avx512_core convolution in one process (stop 15, benchmarks/stem_conv_bench.cpp,
// load 4-5, ours/oneDNN over 3 runs): 3x3 kernels win (vgg11 3->64 s1 at 224x224 0.61-0.94 with
// non-temporal stores, squeezenet 3->64 s2 0.68-0.72, mobilenet_v2 3->32 s2 0.86-1.01,
// inception_v3 3->32 s2 at 299 0.76-0.81; in the models the stem node took 0.24-0.78 of
// oneDNN's time); the 7x7/2 of resnet/googlenet loses (1.10-1.24: its 37 KB of weights a
// 64-channel block and the 7 source rows no longer fit L1 together), so kernels of more than 9
// taps keep oneDNN. An AVX2 build of the same tile lost to oneDNN's jit:avx2 (1.6-3.4x), so
// AVX-512 hosts only.
#include "core/stem_conv.hpp"

#include <cstdlib>
#include <string>
#include <vector>

#include "core/stem_conv_compute.hpp"
#include "core/env_switch.hpp"
#include "core/fused_post_ops.hpp"
#include "core/host_isa.hpp"

namespace opforge_cpu {

namespace {

class StemConvKernel : public Kernel {
 public:
  StemConvKernel(const StemGeometry& g, StemDstLayout dst, const float* w, const float* b, std::vector<PostOp> post,
                 bool bias_packed)
      : compute_(g, dst, w, b, std::move(post)), bias_packed_(bias_packed) {}
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    compute_.run(in[0].ptr<float>(), out[0].ptr<float>(), ctx.num_threads);
  }
  std::string impl_name() const override { return "stem:avx512"; }
  bool packs_input(int i) const override { return i == 1 || (i == 2 && bias_packed_); }

 private:
  StemConvCompute compute_;
  bool bias_packed_;
};

bool avx512_host() { return host_has_avx512(); }

bool stem_swish_enabled() {
  static const bool on = env_switch_on("OPFORGE_CPU_STEM_SWISH");
  return on;
}

// The fused activations as the kernel's post-ops (the shared translation, fused_post_ops.hpp), or
// false for one it does not run: HardSwish, and Swish under OPFORGE_CPU_STEM_SWISH=0.
bool stem_post_ops(const NodeDesc& n, std::vector<PostOp>& post) {
  if (n.attrs.has("out_scale"))
    post.push_back({PostOp::linear, static_cast<float>(n.attrs.f("out_scale")), 0.f});
  if (!append_post_ops(n.attrs.fused_ops("post_ops"), post)) return false;
  for (const PostOp& p : post) {
    // MobileNetV3's stem (3->16 3x3/2 + HardSwish at 224x224): the tile with HardSwish was no
    // faster than oneDNN's jit:avx512_core (stop 25, Zen 5 VM, 1 thread, median stem node over 50
    // runs: 109-113 us vs 98-99 in mobilenet_v3_large, 91 vs 92 in mobilenet_v3_small), so it
    // keeps oneDNN; vpost's HardSwish case is there for the shared PostOp kinds, not used.
    if (p.kind == PostOp::hardswish) return false;
    // EfficientNet's stem (3->32 3x3/2 + SiLU) ran oneDNN's jit:avx512_core, 0.233 ms at one
    // thread on the Zen 5 VM against this kernel's 0.10-0.11 with ReLU (stop 20).
    // OPFORGE_CPU_STEM_SWISH=0: such stems keep oneDNN, for same-build A/B runs.
    if (p.kind == PostOp::swish && !stem_swish_enabled()) return false;
  }
  return true;
}

}  // namespace

std::unique_ptr<Kernel> make_stem_conv(const NodeDesc& n, const ConvGeometry& geo, const dnnl::memory::desc& dst_md) {
  // OPFORGE_CPU_STEM_CONV=0: oneDNN's primitive instead, for same-build A/B measurements
  static const bool enabled = env_switch_on("OPFORGE_CPU_STEM_CONV");
  if (!enabled || n.inputs.size() < 2 || !avx512_host()) return nullptr;
  const TensorInfo& x = n.in(0);
  const Shape& ws = n.in(1).shape;
  const Shape& ys = n.outputs[0].shape;
  // a plain NCHW f32 source of at most 4 channels, constant weights of at most 9 taps
  if (x.dtype != DType::f32 || x.blocked || x.shape.size() != 4 || ws.size() != 4 || ys.size() != 4) return nullptr;
  if (x.shape[1] > 4 || ws[1] != x.shape[1] || ws[2] * ws[3] > 9 || !n.is_const(1)) return nullptr;
  if (n.attrs.i("sum_input", -1) >= 0) return nullptr;
  const bool has_bias = n.attrs.b("has_bias", false);
  if (has_bias && (!n.is_const(2) || n.in(2).dtype != DType::f32)) return nullptr;
  for (int64_t d : x.shape)
    if (d <= 0) return nullptr;
  // the destination oneDNN chose: nhwc or nChw16c, f32
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const auto dims = to_dims(ys);
  StemDstLayout layout;
  if (dst_md == dnnl::memory::desc(dims, dt::f32, tag::nChw16c)) layout.block = 16;
  else if (dst_md != dnnl::memory::desc(dims, dt::f32, tag::nhwc)) return nullptr;
  std::vector<PostOp> post;
  if (!stem_post_ops(n, post)) return nullptr;
  StemGeometry g;
  g.n = x.shape[0];
  g.c = x.shape[1];
  g.h = x.shape[2];
  g.w = x.shape[3];
  g.o = ys[1];
  g.oh = ys[2];
  g.ow = ys[3];
  g.kh = ws[2];
  g.kw = ws[3];
  g.sh = geo.strides[0];
  g.sw = geo.strides[1];
  g.dh = geo.dilations[0] + 1;  // (oneDNN counts dilation from 0)
  g.dw = geo.dilations[1] + 1;
  g.pt = geo.pads_begin[0];
  g.pl = geo.pads_begin[1];
  if (ws[0] != g.o || g.sh < 1 || g.sw < 1 || g.pt < 0 || g.pl < 0) return nullptr;
  const float* w = static_cast<const float*>(n.inputs[1].const_data);
  const float* b = has_bias ? static_cast<const float*>(n.inputs[2].const_data) : nullptr;
  return std::make_unique<StemConvKernel>(g, layout, w, b, std::move(post), has_bias);
}

}  // namespace opforge_cpu
