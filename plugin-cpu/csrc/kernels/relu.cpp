// Relu: element-wise, every numeric type; f32 runs oneDNN's eltwise_relu. A bf16 tensor of a
// bf16 program (a Concat of bf16 convolution outputs that GoogLeNet's modules end with) stays
// bf16: a select on its bit patterns, in place, in its own layout.
#include "core/bf16_bits.hpp"
#include "core/binary_blocked.hpp"
#include "core/dnnl_util.hpp"
#include "core/isa_clones.hpp"
#include "kernels/common.hpp"

namespace opforge_cpu {

namespace {
// (built per ISA, picked at run time: core/isa_clones.hpp)
inline __attribute__((always_inline)) void relu_bf16_bits_loop(const uint16_t* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = bf16_bits_negative(x[i]) ? uint16_t{0} : x[i];  // NaN stays NaN
}
OPFORGE_ISA_CLONES(, "avx512f,avx512bw,avx512vl,avx512dq", relu_bf16_bits, relu_bf16_bits_loop,
                   (const uint16_t* x, uint16_t* y, int64_t n), (x, y, n))

// The f32 result of a bf16 input (exact), where it leaves the bf16 part of the program
// (GoogLeNet's last module before the global pooling).
inline __attribute__((always_inline)) void relu_bf16_to_f32_loop(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = bf16_bits_to_f32(bf16_bits_negative(x[i]) ? uint16_t{0} : x[i]);
}
OPFORGE_ISA_CLONES(, "avx512f,avx512bw,avx512vl,avx512dq", relu_bf16_to_f32, relu_bf16_to_f32_loop,
                   (const uint16_t* x, float* y, int64_t n), (x, y, n))

// Over the whole buffer (a channel-padded layout's zero padding stays zero), bf16 -> bf16 in
// place, or bf16 -> f32 in the same dense layout.
class Bf16Relu : public Kernel {
 public:
  Bf16Relu(const NodeDesc& n, bool f32_out)
      : count_(static_cast<int64_t>(n.in(0).md.get_size() / sizeof(uint16_t))), f32_out_(f32_out) {}
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const auto* x = static_cast<const uint16_t*>(in[0].data);
    parallel_range(count_, ctx.num_threads, [&](int64_t b, int64_t e) {
      if (f32_out_) relu_bf16_to_f32(x + b, static_cast<float*>(out[0].data) + b, e - b);
      else relu_bf16_bits(x + b, static_cast<uint16_t*>(out[0].data) + b, e - b);
    }, 65536);
  }
  int inplace_input(int out) const override { return out == 0 && !f32_out_ ? 0 : -1; }
  std::string impl_name() const override { return f32_out_ ? "loop:bf16_f32" : "loop:bf16"; }

 private:
  int64_t count_;
  bool f32_out_;
};
}  // namespace

Eltwise relu_eltwise(const Attrs&) { return {dnnl::algorithm::eltwise_relu}; }

std::unique_ptr<Kernel> make_relu(NodeDesc& n) {
  const TensorInfo& x = n.in(0);
  if (x.blocked && x.md.get_data_type() == dnnl::memory::data_type::bf16) {
    // bf16 out where the emitter found every reader takes bf16 ("bf16_output"), else f32
    dnnl::memory::desc f32_md;
    if (n.attrs.b("bf16_output", false)) {
      n.outputs[0].blocked = true;
      n.outputs[0].md = x.md;
      return std::make_unique<Bf16Relu>(n, false);
    }
    if (f32_like(x.md, f32_md)) {
      n.outputs[0].blocked = f32_md != plain_md(DType::f32, n.outputs[0].shape);
      n.outputs[0].md = f32_md;
      return std::make_unique<Bf16Relu>(n, true);
    }
    return make_plain_inputs_kernel(n, make_relu);  // (a channel-blocked bf16 layout: reordered to plain f32)
  }
  return make_unary<Types::Numeric>(n, [](auto x) {
    using T = decltype(x);
    return x < T(0) ? T(0) : x;  // NaN stays NaN
  }, relu_eltwise);
}

std::string check_relu(const NodeDesc& n) { return check_unary(n, Types::Numeric); }

OPFORGE_KERNEL(Relu, make_relu, check_relu).layout_flexible().post_op(relu_eltwise);

}  // namespace opforge_cpu
