// Exact integer (i32) Convolution and GroupConvolution, for ConvInteger and QLinearConv, which
// lower to i32 convolutions of zero-point-centred operands: a direct loop whose products and sums
// wrap modulo 2^32 like the NumPy reference (oneDNN has no s32 x s32 convolution).
#pragma once

#include "core/env_switch.hpp"
#include "core/isa_clones.hpp"
#include "core/nn.hpp"
#include "kernels/common.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace opforge_cpu {

// A convolution's spatial geometry with its spatial dims padded to D with leading ones (padding
// 0), so one loop nest serves 1-D to D-D: sizes in and out, kernel, strides, dilations, padding
// before (after: whatever the output size implies). Shared by IntConvKernel (D 3) and
// integer_convolution.cpp's int8 im2col kernel (D 2).
template <int D> struct ConvWindow {
  int64_t in[D], out[D], k[D], st[D], dl[D], pb[D];

  explicit ConvWindow(const NodeDesc& n) {
    const Shape& xs = n.in(0).shape;
    const Shape& ws = n.in(1).shape;
    const Shape& ys = n.outputs.at(0).shape;
    const int sp = static_cast<int>(xs.size()) - 2;
    if (sp < 1 || sp > D || static_cast<int>(ws.size()) < sp || ys.size() != xs.size())
      throw CompileFailure("integer convolution of " + std::to_string(sp) + " spatial dims (1 to " + std::to_string(D) +
                           ")");
    std::vector<int64_t> kernel(ws.end() - sp, ws.end());
    std::vector<int64_t> strides = n.attrs.ints("strides", std::vector<int64_t>(sp, 1));
    std::vector<int64_t> dil = n.attrs.ints("dilations", std::vector<int64_t>(sp, 1));
    std::vector<int64_t> pb_v, pe_v;
    window_pads(n, xs, ys, kernel, strides, dil, pb_v, pe_v);
    const int lead = D - sp;
    for (int d = 0; d < D; ++d) {
      const int s = d - lead;
      in[d] = s < 0 ? 1 : xs[2 + s];
      out[d] = s < 0 ? 1 : ys[2 + s];
      k[d] = s < 0 ? 1 : kernel[s];
      st[d] = s < 0 ? 1 : strides[s];
      dl[d] = s < 0 ? 1 : dil[s];
      pb[d] = s < 0 ? 0 : pb_v[s];
    }
  }
};

// y[i] += x[i * st] * w for i in [0, n), modulo 2^32: one kernel tap over one output row.
inline __attribute__((always_inline)) void int_conv_row_mac_loop(uint32_t* __restrict y, const int32_t* __restrict x,
                                                                 int64_t n, int64_t st, uint32_t w) {
  if (st == 1) {
    for (int64_t i = 0; i < n; ++i) y[i] += static_cast<uint32_t>(x[i]) * w;
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] += static_cast<uint32_t>(x[i * st]) * w;
  }
}
OPFORGE_ISA_CLONES(static, "avx512f", int_conv_row_mac, int_conv_row_mac_loop,
                   (uint32_t* __restrict y, const int32_t* __restrict x, int64_t n, int64_t st, uint32_t w),
                   (y, x, n, st, w))

class IntConvKernel : public Kernel {
 public:
  // Convolution weights [O, C, k...]; GroupConvolution weights [G, O/G, C/G, k...].
  IntConvKernel(const NodeDesc& n, bool grouped) : w_(n) {
    const Shape& xs = n.in(0).shape;
    const Shape& ws = n.in(1).shape;
    const Shape& ys = n.outputs.at(0).shape;
    if (n.in(0).blocked) throw CompileFailure("integer convolution reads plain layouts only");
    groups_ = grouped ? ws[0] : 1;
    const int64_t wo = grouped ? 1 : 0;
    ocg_ = ws[wo];
    icg_ = ws[wo + 1];
    N_ = xs[0];
    if (icg_ * groups_ != xs[1] || ocg_ * groups_ != ys[1]) throw CompileFailure("integer convolution: channel counts do not match the weights");
  }
  std::string impl_name() const override { return rows_ ? "int_conv:rows" : "int_conv"; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound* b) override {
    if (rows_) {
      run_rows(ctx, in, out);
      return;
    }
    run_direct(ctx, in, out, b);
  }

  // Tap by tap over whole output rows: for each input channel and kernel tap (kz, ky, kx), every
  // output row (oz, oy) whose input row exists gets x_row[ox * st + kx * dl - pb] * w added over
  // the ox range that reads inside the row, a unit-stride loop the compiler vectorises (isa
  // clones). The direct loop below tested every tap's bounds per output pixel, scalar: SegFormer's
  // Mix-FFN depthwise 3x3 (ConvInteger of ONNX Runtime's quantize_dynamic, [1, 128, 64, 64])
  // took 5.9 ms at 1 thread. Products and sums wrap modulo 2^32 in both, and modular addition
  // does not depend on the order, so both give the same bits. OPFORGE_CPU_INT_CONV_ROWS=0: the
  // direct loop.
  void run_rows(RunContext& ctx, const TensorView* in, TensorView* out) {
    const int32_t* x = in[0].ptr<int32_t>();
    const int32_t* w = in[1].ptr<int32_t>();
    int32_t* y = out[0].ptr<int32_t>();
    const int64_t in_sp = w_.in[0] * w_.in[1] * w_.in[2], out_sp = w_.out[0] * w_.out[1] * w_.out[2],
                  k_sp = w_.k[0] * w_.k[1] * w_.k[2];
    const int64_t oc_total = groups_ * ocg_;
    parallel_range(N_ * oc_total, ctx.num_threads, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t b = r / oc_total, oc = r % oc_total, g = oc / ocg_;
        const int32_t* wk = w + oc * icg_ * k_sp;
        uint32_t* yr = reinterpret_cast<uint32_t*>(y + r * out_sp);
        std::fill(yr, yr + out_sp, 0u);
        for (int64_t ic = 0; ic < icg_; ++ic) {
          const int32_t* xc = x + (b * groups_ * icg_ + g * icg_ + ic) * in_sp;
          const int32_t* wc = wk + ic * k_sp;
          for (int64_t kz = 0; kz < w_.k[0]; ++kz)
            for (int64_t ky = 0; ky < w_.k[1]; ++ky)
              for (int64_t kx = 0; kx < w_.k[2]; ++kx) {
                const uint32_t wv = static_cast<uint32_t>(wc[(kz * w_.k[1] + ky) * w_.k[2] + kx]);
                // ox reads ix = ox * st + off, inside [0, in) for ox in [lo, hi)
                const int64_t off = kx * w_.dl[2] - w_.pb[2], st = w_.st[2];
                const int64_t lo = off >= 0 ? 0 : (-off + st - 1) / st;
                const int64_t hi = w_.in[2] - 1 - off < 0 ? 0 : std::min(w_.out[2], (w_.in[2] - 1 - off) / st + 1);
                if (wv == 0 || hi <= lo) continue;  // a zero tap adds nothing (mod 2^32 too)
                for (int64_t oz = 0; oz < w_.out[0]; ++oz) {
                  const int64_t iz = oz * w_.st[0] + kz * w_.dl[0] - w_.pb[0];
                  if (iz < 0 || iz >= w_.in[0]) continue;
                  for (int64_t oy = 0; oy < w_.out[1]; ++oy) {
                    const int64_t iy = oy * w_.st[1] + ky * w_.dl[1] - w_.pb[1];
                    if (iy < 0 || iy >= w_.in[1]) continue;
                    const int32_t* xrow = xc + (iz * w_.in[1] + iy) * w_.in[2];
                    int_conv_row_mac(yr + (oz * w_.out[1] + oy) * w_.out[2] + lo, xrow + lo * st + off, hi - lo, st, wv);
                  }
                }
              }
        }
      }
    }, 1);
  }

  void run_direct(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) {
    const int32_t* x = in[0].ptr<int32_t>();
    const int32_t* w = in[1].ptr<int32_t>();
    int32_t* y = out[0].ptr<int32_t>();
    const int64_t in_sp = w_.in[0] * w_.in[1] * w_.in[2], out_sp = w_.out[0] * w_.out[1] * w_.out[2], k_sp = w_.k[0] * w_.k[1] * w_.k[2];
    const int64_t oc_total = groups_ * ocg_;
    parallel_range(N_ * oc_total, ctx.num_threads, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t b = r / oc_total, oc = r % oc_total, g = oc / ocg_;
        const int32_t* wk = w + oc * icg_ * k_sp;  // [G, O/G, C/G, k] and [O, C, k] lay out alike
        for (int64_t oz = 0; oz < w_.out[0]; ++oz)
          for (int64_t oy = 0; oy < w_.out[1]; ++oy)
            for (int64_t ox = 0; ox < w_.out[2]; ++ox) {
              uint32_t acc = 0;
              for (int64_t ic = 0; ic < icg_; ++ic) {
                const int32_t* xc = x + (b * groups_ * icg_ + g * icg_ + ic) * in_sp;
                const int32_t* wc = wk + ic * k_sp;
                for (int64_t kz = 0; kz < w_.k[0]; ++kz) {
                  const int64_t iz = oz * w_.st[0] + kz * w_.dl[0] - w_.pb[0];
                  if (iz < 0 || iz >= w_.in[0]) continue;
                  for (int64_t ky = 0; ky < w_.k[1]; ++ky) {
                    const int64_t iy = oy * w_.st[1] + ky * w_.dl[1] - w_.pb[1];
                    if (iy < 0 || iy >= w_.in[1]) continue;
                    for (int64_t kx = 0; kx < w_.k[2]; ++kx) {
                      const int64_t ix = ox * w_.st[2] + kx * w_.dl[2] - w_.pb[2];
                      if (ix < 0 || ix >= w_.in[2]) continue;
                      acc += static_cast<uint32_t>(xc[(iz * w_.in[1] + iy) * w_.in[2] + ix]) *
                             static_cast<uint32_t>(wc[(kz * w_.k[1] + ky) * w_.k[2] + kx]);
                    }
                  }
                }
              }
              y[r * out_sp + (oz * w_.out[1] + oy) * w_.out[2] + ox] = static_cast<int32_t>(acc);
            }
      }
    }, 1);
  }

 private:
  static bool rows_switch() {
    static const bool on = env_switch_on("OPFORGE_CPU_INT_CONV_ROWS");
    return on;
  }
  bool rows_ = rows_switch();
  int64_t groups_ = 1, ocg_ = 1, icg_ = 1, N_ = 1;
  ConvWindow<3> w_;
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
