// RoPE (CPU-internal, opforge_cpu/ops/rope.py, made by passes/rope.py): a decoder's rotary position
// embedding of Q or K as one step. Per output row (b, h, s) of [B, H, S, D]:
//   y[i]     = x[i] * cos[i] - x[i + R/2] * sin[i]         i < R/2
//   y[i]     = x[i] * cos[i] + x[i - R/2] * sin[i]         R/2 <= i < R
//   y[i]     = x[i]                                         R <= i < D (partial rotary's tail)
// where x is the head's row read where the projection wrote it: [B, H, S, W] or, with the head
// split folded in (input_layout 'bshd'), [B, S, H, W], from column column_offset on (GPT-NeoX's Q
// and K inside the fused QKV projection). Before, the same was a Transpose, one or two Slices, a
// Negative, two Concats, two Multiplies and an Add: eight passes over the tensor, each its own
// step. The same products and sums as those steps (x * cos, (-x2) * sin, then the add; the
// compiler is told not to contract them into FMAs), so the result equals theirs bit for bit.
// Threads split the B * H * S rows.
#include <cstring>

#include "kernels/common.hpp"
#include "core/isa_clones.hpp"

namespace opforge_cpu {

namespace {
struct RopeGeom {
  int64_t batch, heads, seq, width, head_size, rotary, offset, cos_batch;
  bool bshd;
};

// Rows [r0, r1) of the [B, H, S] row space. Inlined into the ISA clones below.
static inline __attribute__((always_inline)) void rope_rows(const RopeGeom& g, const float* x, const float* cosv,
                                                            const float* sinv, float* y, int64_t r0, int64_t r1) {
  const int64_t half = g.rotary / 2, d = g.head_size, r = g.rotary;
  for (int64_t row = r0; row < r1; ++row) {
    const int64_t s = row % g.seq, bh = row / g.seq, h = bh % g.heads, b = bh / g.heads;
    const float* xr = x + (g.bshd ? ((b * g.seq + s) * g.heads + h) : ((b * g.heads + h) * g.seq + s)) * g.width
                      + g.offset;
    const int64_t cs = ((g.cos_batch == 1 ? 0 : b) * g.seq + s) * r;
    const float* c = cosv + cs;
    const float* sn = sinv + cs;
    float* yr = y + row * d;
#pragma GCC ivdep
    for (int64_t i = 0; i < half; ++i) {
      const float a = xr[i] * c[i];
      const float t = -xr[i + half] * sn[i];
      yr[i] = a + t;
    }
#pragma GCC ivdep
    for (int64_t i = half; i < r; ++i) {
      const float a = xr[i] * c[i];
      const float t = xr[i - half] * sn[i];
      yr[i] = a + t;
    }
    if (d > r) std::memcpy(yr + r, xr + r, static_cast<size_t>(d - r) * sizeof(float));
  }
}

// Vectorised for the host's ISA (the module builds for baseline x86-64; core/isa_clones.hpp);
// fp-contract off: the rounding of the separate Multiply and Add steps it replaces.
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
OPFORGE_ISA_CLONES(, "avx512f", rope_rows_f32, rope_rows,
                   (const RopeGeom& g, const float* x, const float* cosv, const float* sinv, float* y, int64_t r0,
                    int64_t r1),
                   (g, x, cosv, sinv, y, r0, r1))
#pragma GCC pop_options

class RopeKernel : public Kernel {
 public:
  explicit RopeKernel(const NodeDesc& n) {
    const Shape& xs = n.in(0).shape;
    g_.bshd = n.attrs.s("input_layout", "bhsd") == "bshd";
    g_.batch = xs[0];
    g_.heads = g_.bshd ? xs[2] : xs[1];
    g_.seq = g_.bshd ? xs[1] : xs[2];
    g_.width = xs[3];
    g_.head_size = n.attrs.i("head_size");
    g_.rotary = n.attrs.i("rotary_dims");
    g_.offset = n.attrs.i("column_offset", 0);
    g_.cos_batch = n.in(1).shape[0];
  }
  std::string impl_name() const override {
    return std::string("rope:") + (g_.bshd ? "bshd" : "bhsd") + (g_.rotary < g_.head_size ? "_partial" : "");
  }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const float* x = in[0].ptr<float>();
    const float* c = in[1].ptr<float>();
    const float* s = in[2].ptr<float>();
    float* y = out[0].ptr<float>();
    const RopeGeom g = g_;
    parallel_range(g.batch * g.heads * g.seq, ctx.num_threads, [&](int64_t r0, int64_t r1) {
      rope_rows_f32(g, x, c, s, y, r0, r1);
    }, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, g.head_size)));
  }

 private:
  RopeGeom g_{};
};
}  // namespace

std::string check_rope(const NodeDesc& n) {
  if (n.inputs.size() != 3) return "expected 3 inputs (x, cos, sin)";
  for (size_t i = 0; i < 3; ++i)
    if (n.in(i).dtype != DType::f32) return "input " + std::to_string(i) + " is " + dtype_name(n.in(i).dtype) + ", expected f32";
  const Shape& xs = n.in(0).shape;
  if (xs.size() != 4) return "input 0 is not rank 4";
  const bool bshd = n.attrs.s("input_layout", "bhsd") == "bshd";
  const int64_t b = xs[0], h = bshd ? xs[2] : xs[1], s = bshd ? xs[1] : xs[2], w = xs[3];
  const int64_t d = n.attrs.i("head_size"), r = n.attrs.i("rotary_dims"), off = n.attrs.i("column_offset", 0);
  if (d < 1 || off < 0 || off + d > w) return "head columns do not fit input 0's last axis";
  if (r < 2 || r % 2 || r > d) return "rotary_dims " + std::to_string(r) + " is not even and within head_size";
  const Shape& cs = n.in(1).shape;
  if (cs != n.in(2).shape || cs.size() != 4 || (cs[0] != 1 && cs[0] != b) || cs[1] != 1 || cs[2] != s || cs[3] != r)
    return "cos/sin are not one [1 or B, 1, S, rotary_dims] shape";
  const Shape& os = n.outputs[0].shape;
  if (os != Shape{b, h, s, d}) return "output is not [B, H, S, head_size]";
  return "";
}

std::unique_ptr<Kernel> make_rope(NodeDesc& n) { return std::make_unique<RopeKernel>(n); }

OPFORGE_KERNEL(RoPE, make_rope, check_rope);

}  // namespace opforge_cpu
