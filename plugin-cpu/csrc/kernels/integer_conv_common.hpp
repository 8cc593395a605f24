// Exact integer (i32) Convolution and GroupConvolution, for ConvInteger and QLinearConv, which
// lower to i32 convolutions of zero-point-centred operands: a direct loop whose products and sums
// wrap modulo 2^32 like the NumPy reference (oneDNN has no s32 x s32 convolution).
#pragma once

#include "core/nn.hpp"
#include "kernels/common.hpp"

namespace opforge_cpu {

class IntConvKernel : public Kernel {
 public:
  // Convolution weights [O, C, k...]; GroupConvolution weights [G, O/G, C/G, k...].
  IntConvKernel(const NodeDesc& n, bool grouped) {
    const Shape& xs = n.in(0).shape;
    const Shape& ws = n.in(1).shape;
    const Shape& ys = n.outputs.at(0).shape;
    const int sp = static_cast<int>(xs.size()) - 2;
    if (n.in(0).blocked) throw CompileFailure("integer convolution reads plain layouts only");
    if (sp < 1 || sp > 3) throw CompileFailure("integer convolution of " + std::to_string(sp) + " spatial dims (1 to 3)");
    groups_ = grouped ? ws[0] : 1;
    const int64_t wo = grouped ? 1 : 0;
    ocg_ = ws[wo];
    icg_ = ws[wo + 1];
    N_ = xs[0];
    if (icg_ * groups_ != xs[1] || ocg_ * groups_ != ys[1]) throw CompileFailure("integer convolution: channel counts do not match the weights");
    std::vector<int64_t> kernel(ws.end() - sp, ws.end());
    std::vector<int64_t> strides = n.attrs.ints("strides", std::vector<int64_t>(sp, 1));
    std::vector<int64_t> dil = n.attrs.ints("dilations", std::vector<int64_t>(sp, 1));
    std::vector<int64_t> pb, pe;
    window_pads(n, xs, ys, kernel, strides, dil, pb, pe);
    // spatial dims padded to 3 with leading 1s, so one loop nest serves 1-D to 3-D
    const int pad = 3 - sp;
    for (int d = 0; d < 3; ++d) {
      const int s = d - pad;
      in_[d] = s < 0 ? 1 : xs[2 + s];
      out_[d] = s < 0 ? 1 : ys[2 + s];
      k_[d] = s < 0 ? 1 : kernel[s];
      st_[d] = s < 0 ? 1 : strides[s];
      dl_[d] = s < 0 ? 1 : dil[s];
      pb_[d] = s < 0 ? 0 : pb[s];
    }
  }
  std::string impl_name() const override { return "int_conv"; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const int32_t* x = in[0].ptr<int32_t>();
    const int32_t* w = in[1].ptr<int32_t>();
    int32_t* y = out[0].ptr<int32_t>();
    const int64_t in_sp = in_[0] * in_[1] * in_[2], out_sp = out_[0] * out_[1] * out_[2], k_sp = k_[0] * k_[1] * k_[2];
    const int64_t oc_total = groups_ * ocg_;
    parallel_range(N_ * oc_total, ctx.num_threads, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t b = r / oc_total, oc = r % oc_total, g = oc / ocg_;
        const int32_t* wk = w + oc * icg_ * k_sp;  // [G, O/G, C/G, k] and [O, C, k] lay out alike
        for (int64_t oz = 0; oz < out_[0]; ++oz)
          for (int64_t oy = 0; oy < out_[1]; ++oy)
            for (int64_t ox = 0; ox < out_[2]; ++ox) {
              uint32_t acc = 0;
              for (int64_t ic = 0; ic < icg_; ++ic) {
                const int32_t* xc = x + (b * groups_ * icg_ + g * icg_ + ic) * in_sp;
                const int32_t* wc = wk + ic * k_sp;
                for (int64_t kz = 0; kz < k_[0]; ++kz) {
                  const int64_t iz = oz * st_[0] + kz * dl_[0] - pb_[0];
                  if (iz < 0 || iz >= in_[0]) continue;
                  for (int64_t ky = 0; ky < k_[1]; ++ky) {
                    const int64_t iy = oy * st_[1] + ky * dl_[1] - pb_[1];
                    if (iy < 0 || iy >= in_[1]) continue;
                    for (int64_t kx = 0; kx < k_[2]; ++kx) {
                      const int64_t ix = ox * st_[2] + kx * dl_[2] - pb_[2];
                      if (ix < 0 || ix >= in_[2]) continue;
                      acc += static_cast<uint32_t>(xc[(iz * in_[1] + iy) * in_[2] + ix]) *
                             static_cast<uint32_t>(wc[(kz * k_[1] + ky) * k_[2] + kx]);
                    }
                  }
                }
              }
              y[r * out_sp + (oz * out_[1] + oy) * out_[2] + ox] = static_cast<int32_t>(acc);
            }
      }
    }, 1);
  }

 private:
  int64_t groups_ = 1, ocg_ = 1, icg_ = 1, N_ = 1;
  int64_t in_[3] = {1, 1, 1}, out_[3] = {1, 1, 1}, k_[3] = {1, 1, 1}, st_[3] = {1, 1, 1}, dl_[3] = {1, 1, 1},
          pb_[3] = {0, 0, 0};
};

inline bool int_conv_types(const NodeDesc& n) {
  return n.inputs.size() >= 2 && n.in(0).dtype == DType::i32 && n.in(1).dtype == DType::i32 &&
         n.outputs.at(0).dtype == DType::i32;
}

// Integer nodes get the direct loop (no fused bias/post-ops: the lowering fuses f32 only).
inline std::unique_ptr<Kernel> make_conv_any(NodeDesc& n, bool grouped) {
  if (int_conv_types(n)) {
    if (n.attrs.b("has_bias", false)) throw CompileFailure("integer convolution takes no fused bias");
    return std::make_unique<IntConvKernel>(n, grouped);
  }
  return make_dnnl_conv(n, grouped);
}

inline std::string check_conv_any(const NodeDesc& n) {
  if (int_conv_types(n)) {
    const size_t r = n.in(0).shape.size();
    return r >= 3 && r <= 5 ? "" : "convolution of rank " + std::to_string(r) + " is not supported (1D to 3D)";
  }
  const std::string why = check_conv(n);
  return why.empty() ? why : why + " (or i32)";
}

}  // namespace opforge_cpu
