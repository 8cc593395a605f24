// Clamp: min(max(x, min), max); f32 runs oneDNN's clip, integers clamp to [ceil(min), floor(max)].
// A bf16 tensor of a bf16 program (RexNet's ReLU6 after the squeeze-excitation scale, between
// two bf16 convolutions: emit.py _bf16_passes) is clamped in its own layout, bf16 -> bf16 where
// every reader takes bf16, else bf16 -> f32.
#include <algorithm>

#include "core/bf16_bits.hpp"
#include "core/binary_blocked.hpp"
#include "core/dnnl_util.hpp"
#include "core/isa_clones.hpp"
#include "kernels/common.hpp"

namespace opforge_cpu {

namespace {
// min(max(v, lo), hi) in place, NaN kept (both comparisons false). (built per ISA: isa_clones.hpp)
inline __attribute__((always_inline)) void clamp_f32_row_loop(float* __restrict v, int64_t n, float lo, float hi) {
  for (int64_t i = 0; i < n; ++i) {
    const float f = v[i] < lo ? lo : v[i];
    v[i] = f > hi ? hi : f;
  }
}
OPFORGE_ISA_CLONES(, "avx512f", clamp_f32_row, clamp_f32_row_loop, (float* __restrict v, int64_t n, float lo, float hi),
                   (v, n, lo, hi))

// bf16 -> bf16: each chunk widened (exact), clamped in f32 and narrowed to nearest even
// (bf16_rows.cpp: AVX512_BF16's vcvtneps2bf16 where the host has it, as oneDNN's reorders): what
// an f32 Clamp followed by a bf16 convolution's source conversion gives. (One loop converting
// element by element on bit patterns ran 1.55 ms for RexNet's 13 ReLU6 at one thread: GCC
// narrows bit patterns 16 lanes at a time poorly, see bf16_rows.cpp.)
void clamp_bf16_bits(const uint16_t* x, uint16_t* y, int64_t n, float lo, float hi) {
  constexpr int64_t kChunk = 1024;
  float buf[kChunk];
  for (int64_t i = 0; i < n; i += kChunk) {
    const int64_t m = std::min(kChunk, n - i);
    bf16_row_to_f32(x + i, buf, m);
    clamp_f32_row(buf, m, lo, hi);
    f32_row_to_bf16(buf, y + i, m);
  }
}

// The f32 result of a bf16 input, where it leaves the bf16 part of the program.
void clamp_bf16_to_f32(const uint16_t* x, float* y, int64_t n, float lo, float hi) {
  bf16_row_to_f32(x, y, n);
  clamp_f32_row(y, n, lo, hi);
}

// Over the whole buffer of a dense layout (no padding elements: f32_like / the input's own md).
class Bf16Clamp : public Kernel {
 public:
  Bf16Clamp(const NodeDesc& n, bool f32_out)
      : count_(static_cast<int64_t>(n.in(0).md.get_size() / sizeof(uint16_t))),
        lo_(static_cast<float>(n.attrs.f("min"))),
        hi_(static_cast<float>(n.attrs.f("max"))),
        f32_out_(f32_out) {}
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const auto* x = static_cast<const uint16_t*>(in[0].data);
    parallel_range(count_, ctx.num_threads, [&](int64_t b, int64_t e) {
      if (f32_out_) clamp_bf16_to_f32(x + b, static_cast<float*>(out[0].data) + b, e - b, lo_, hi_);
      else clamp_bf16_bits(x + b, static_cast<uint16_t*>(out[0].data) + b, e - b, lo_, hi_);
    }, 65536);
  }
  int inplace_input(int out) const override { return out == 0 && !f32_out_ ? 0 : -1; }
  std::string impl_name() const override { return f32_out_ ? "loop:bf16_f32" : "loop:bf16"; }

 private:
  int64_t count_;
  float lo_, hi_;
  bool f32_out_;
};
}  // namespace

Eltwise clamp_eltwise(const Attrs& a) {
  return {dnnl::algorithm::eltwise_clip_v2, static_cast<float>(a.f("min")), static_cast<float>(a.f("max"))};
}

std::unique_ptr<Kernel> make_clamp(NodeDesc& n) {
  double lo = n.attrs.f("min"), hi = n.attrs.f("max");
  const TensorInfo& x = n.in(0);
  if (x.blocked && x.md.get_data_type() == dnnl::memory::data_type::bf16) {
    // bf16 out where the emitter found every reader takes bf16 ("bf16_output"), else f32 (a
    // channel-blocked bf16 layout, with padding: reordered to plain f32 first)
    dnnl::memory::desc f32_md;
    const bool dense = f32_like(x.md, f32_md);
    if (dense && n.attrs.b("bf16_output", false)) {
      n.outputs[0].blocked = true;
      n.outputs[0].md = x.md;
      return std::make_unique<Bf16Clamp>(n, false);
    }
    if (dense) {
      n.outputs[0].blocked = f32_md != plain_md(DType::f32, n.outputs[0].shape);
      n.outputs[0].md = f32_md;
      return std::make_unique<Bf16Clamp>(n, true);
    }
    return make_plain_inputs_kernel(n, make_clamp);
  }
  if (n.in(0).dtype == DType::f32) {
    return make_unary<Types::Float>(n, [](auto x) { return x; }, clamp_eltwise);
  }
  if (!is_float(n.in(0).dtype)) {
    lo = std::ceil(lo);
    hi = std::floor(hi);
  }
  return make_unary<Types::Numeric>(n, [lo, hi](auto x) {
    using T = decltype(x);
    double v = static_cast<double>(x);
    return T(v < lo ? lo : (v > hi ? hi : v));
  });
}

std::string check_clamp(const NodeDesc& n) { return check_unary(n, Types::Numeric); }

OPFORGE_KERNEL(Clamp, make_clamp, check_clamp).layout_flexible().post_op(clamp_eltwise);

}  // namespace opforge_cpu
