// The rule for our int8 depthwise kernel (core/dw_conv_int8.cpp, stop 22) and the Kernel that runs
// it in a QuantizedConvolution's place. Measured per shape against oneDNN 3.2 at one thread on
// the Zen 5 VM (benchmarks/dw_conv_int8_bench.cpp, docs/kernel-library.md "Our int8 depthwise
// kernel"): the same bytes on every shape, and
//   AVX-512 against brdgmm_dw:avx512_core_vnni (u8, zero points 0, ReLU6: the models' case):
//     3x3 stride 1 0.80-0.95, 5x5 0.75-0.92 (one stride-2 shape, 72 channels 56x56, 1.10),
//     3x3 stride 2 0.86-1.03 (level: kept on brdgmm_dw);
//   AVX-512 against jit_int8:avx512_core_vnni (what oneDNN gives a depthwise one with a source or
//     destination zero point it cannot fold): 0.39-0.96 (one 40-channel shape 1.32), summed
//     0.55-0.58;
//   AVX2 (ONEDNN_MAX_CPU_ISA=AVX2) against jit_uni_int8:avx2: 3x3 0.60-0.90, 5x5 0.71-0.90.
#include "kernels/quantized_dw_conv.hpp"

#include <string>
#include <utility>
#include <vector>

#include "core/dw_conv_int8.hpp"
#include "core/dw_conv_plan.hpp"
#include "core/env_switch.hpp"
#include "core/fused_post_ops.hpp"

namespace opforge_cpu {

namespace {

bool enabled() {
  // OPFORGE_CPU_INT8_DW=0: oneDNN's primitive for every int8 depthwise one, for same-build A/B
  // measurements
  static const bool on = env_switch_on("OPFORGE_CPU_INT8_DW");
  return on;
}

bool starts_with(const char* s, const char* prefix) { return s != nullptr && std::string(s).rfind(prefix, 0) == 0; }

// The fused ops as the kernel's post-ops, in quant_attr's order (the fused list, then the
// zero-point fold's shift), or false for one it does not run.
// (A fused Swish/HardSwish translates, and DwConvInt8::why_not(post) then refuses it.)
bool post_ops_of(const QuantParams& q, std::vector<PostOp>& post) {
  if (!append_post_ops(q.post_ops, post)) return false;
  if (q.dst_shift != 0.f) post.push_back({PostOp::linear, 1.f, q.dst_shift});
  return true;
}

class QuantizedDwKernel final : public Kernel {
 public:
  explicit QuantizedDwKernel(std::unique_ptr<DwConvInt8> dw) : dw_(std::move(dw)) {}
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    ctx.stream->wait();  // (whatever oneDNN work came before is done)
    dw_->run(in[0].data, out[0].data, ctx.num_threads);
  }
  std::string impl_name() const override { return dw_->exec_type(); }
  // weights, their scales and the bias are copied into the kernel
  bool packs_input(int i) const override { return i >= 1; }

 private:
  std::unique_ptr<DwConvInt8> dw_;
};

}  // namespace

std::unique_ptr<Kernel> plan_quantized_dw_conv(const NodeDesc& n, const dnnl::convolution_forward::primitive_desc& pd,
                                               const QuantParams& q, const dnnl::memory::desc& user_src) {
  if (!enabled()) return nullptr;
  // the widest build the CPU and oneDNN's effective ISA allow (host_isa.hpp)
  DwConvInt8::Isa isa;
  if (DwConvInt8::host_supported(DwConvInt8::Isa::avx512)) isa = DwConvInt8::Isa::avx512;
  else if (DwConvInt8::host_supported(DwConvInt8::Isa::avx2)) isa = DwConvInt8::Isa::avx2;
  else return nullptr;
  const Shape& xs = n.in(0).shape;
  const Shape& ws = n.in(1).shape;
  const Shape& ys = n.outputs[0].shape;
  // weights [C, 1, 1, kh, kw] of a 2D convolution over C channels (one output channel a group)
  if (xs.size() != 4 || ws.size() != 5 || ys.size() != 4 || ws[1] != 1 || ws[2] != 1) return nullptr;
  if (ws[0] != xs[1] || ys[1] != xs[1]) return nullptr;
  if (q.sum_input >= 0 || q.out == DType::f32) return nullptr;
  const auto src = pd.src_desc(), dst = pd.dst_desc();
  // the user's tensor read as it is (no reorder), bytes both ways
  if (src != user_src || !dense_nhwc(src) || !dense_nhwc(dst)) return nullptr;
  const char* impl = pd.impl_info_str();
  const bool brdgmm = starts_with(impl, "brdgmm_dw");
  if (!brdgmm && !starts_with(impl, "jit_int8") && !starts_with(impl, "jit_uni_int8")) return nullptr;
  const auto strides = pd.get_strides(), dil = pd.get_dilations(), pl = pd.get_padding_l();
  if (dil[0] != 0 || dil[1] != 0) return nullptr;
  const DwGeometry g{xs[0], xs[1], xs[2], xs[3], ys[2], ys[3], ws[3], ws[4], strides[0], strides[1], pl[0], pl[1]};
  std::vector<PostOp> post;
  if (!post_ops_of(q, post)) return nullptr;
  if (!DwConvInt8::why_not(g).empty() || !DwConvInt8::why_not(post).empty()) return nullptr;
  // 3x3 stride 2 at AVX-512 was level with brdgmm_dw (0.86-1.03 per shape): it keeps it
  if (isa == DwConvInt8::Isa::avx512 && brdgmm && g.kw == 3 && g.sw == 2) return nullptr;
  // An s8 source at AVX2: oneDNN's jit_uni_int8:avx2 wrote other bytes than the exact sums give
  // (1-2 steps on 14 % of one test's outputs, tests/test_cpu_int8_dw.py, under
  // ONEDNN_MAX_CPU_ISA=AVX2): not the same bytes, so it keeps oneDNN's (u8 sources, the models'
  // case, matched on every shape)
  if (isa == DwConvInt8::Isa::avx2 && n.in(0).dtype == DType::i8) return nullptr;
  DwInt8Quant dq;
  dq.src_signed = n.in(0).dtype == DType::i8;
  dq.dst_signed = q.out == DType::i8;
  dq.src_zero_point = q.src_zero_point;
  dq.src_scale = q.src_scale;
  dq.wei_scales = q.wei_scales.data();
  dq.bias = q.has_bias ? q.bias.data() : nullptr;
  dq.dst_scale = q.dst_scale;
  dq.dst_zero_point = q.dst_zero_point;
  auto dw = std::make_unique<DwConvInt8>(g, static_cast<const int8_t*>(n.inputs[1].const_data), dq, std::move(post), isa);
  return std::make_unique<QuantizedDwKernel>(std::move(dw));
}

}  // namespace opforge_cpu
