// DeformableConvolution-8 (2-D): each kernel tap of each output position samples the input
// bilinearly at its regular position plus a learned offset (per deformable group), optionally
// scaled by a mask, then the taps are convolved with the filters (grouped). Sampling follows
// the reference (and OpenVINO's): with bilinear_interpolation_pad, points within one pixel
// outside the image blend with zeros; otherwise points outside are zero.
#include <cmath>
#include <vector>

#include "kernels/index_common.hpp"

namespace opforge_cpu {

namespace {
template <class T> class DeformConvKernel : public Kernel {
 public:
  explicit DeformConvKernel(const NodeDesc& n) {
    xs_ = n.in(0).shape;
    ws_ = n.in(2).shape;
    os_ = n.outputs[0].shape;
    st_ = n.attrs.ints("strides");
    dl_ = n.attrs.ints("dilations");
    group_ = n.attrs.i("group", 1);
    dg_ = n.attrs.i("deformable_group", 1);
    pad_ = n.attrs.b("bilinear_interpolation_pad", false);
    mask_ = n.inputs.size() > 3;
    const std::string ap = n.attrs.s("auto_pad", "explicit");
    std::vector<int64_t> pb = n.attrs.ints("pads_begin");
    for (int d = 0; d < 2; ++d) {
      const int64_t in = xs_[2 + d], k = ws_[2 + d];
      if (ap == "valid") pb_[d] = 0;
      else if (ap == "same_upper" || ap == "same_lower") {
        const int64_t out = (in + st_[d] - 1) / st_[d];
        const int64_t total = std::max<int64_t>((out - 1) * st_[d] + (k - 1) * dl_[d] + 1 - in, 0);
        pb_[d] = ap == "same_upper" ? total / 2 : total - total / 2;
      } else pb_[d] = pb.at(d);
    }
  }
  std::string impl_name() const override { return "deformable_convolution"; }

  double sample(const T* img, int64_t H, int64_t W, double y, double x) const {
    int64_t y0, x0, y1, x1;
    if (pad_) {
      if (!(y > -1 && y < H && x > -1 && x < W)) return 0.0;
      y0 = static_cast<int64_t>(std::floor(y));
      x0 = static_cast<int64_t>(std::floor(x));
      y1 = y0 + 1;
      x1 = x0 + 1;
    } else {
      if (!(y >= 0 && y < H && x >= 0 && x < W)) return 0.0;
      y0 = std::max<int64_t>(static_cast<int64_t>(std::floor(y)), 0);
      x0 = std::max<int64_t>(static_cast<int64_t>(std::floor(x)), 0);
      y1 = std::min<int64_t>(static_cast<int64_t>(std::ceil(y)), H - 1);
      x1 = std::min<int64_t>(static_cast<int64_t>(std::ceil(x)), W - 1);
    }
    const double ly = y - static_cast<double>(y0), lx = x - static_cast<double>(x0);
    double total = 0;
    const int64_t yy[2] = {y0, y1}, xx[2] = {x0, x1};
    const double wy[2] = {1 - ly, ly}, wx[2] = {1 - lx, lx};
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j)
        if (yy[i] >= 0 && yy[i] < H && xx[j] >= 0 && xx[j] < W)
          total += wy[i] * wx[j] * static_cast<double>(img[yy[i] * W + xx[j]]);
    return total;
  }

  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const T* x = in[0].ptr<T>();
    const T* off = in[1].ptr<T>();
    const T* w = in[2].ptr<T>();
    const T* mk = mask_ ? in[3].ptr<T>() : nullptr;
    const int64_t N = xs_[0], C = xs_[1], H = xs_[2], W = xs_[3];
    const int64_t CO = ws_[0], CG = ws_[1], KH = ws_[2], KW = ws_[3];
    const int64_t OH = os_[2], OW = os_[3];
    const int64_t per = C / dg_, og = CO / group_;
    T* y = out[0].ptr<T>();
    std::vector<double> cols(C * KH * KW);
    for (int64_t b = 0; b < N; ++b)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          for (int64_t c = 0; c < C; ++c) {
            const int64_t g = c / per;
            for (int64_t ky = 0; ky < KH; ++ky)
              for (int64_t kx = 0; kx < KW; ++kx) {
                const int64_t tap = (g * KH + ky) * KW + kx;
                const double dy = static_cast<double>(off[((b * dg_ * KH * KW * 2) + tap * 2) * OH * OW + oy * OW + ox]);
                const double dx = static_cast<double>(off[((b * dg_ * KH * KW * 2) + tap * 2 + 1) * OH * OW + oy * OW + ox]);
                const double py = static_cast<double>(oy * st_[0] - pb_[0] + ky * dl_[0]) + dy;
                const double px = static_cast<double>(ox * st_[1] - pb_[1] + kx * dl_[1]) + dx;
                double v = sample(x + (b * C + c) * H * W, H, W, py, px);
                if (mk) v *= static_cast<double>(mk[(b * dg_ * KH * KW + tap) * OH * OW + oy * OW + ox]);
                cols[(c * KH + ky) * KW + kx] = v;
              }
          }
          for (int64_t co = 0; co < CO; ++co) {
            const int64_t gi = co / og;
            double acc = 0;
            const T* wr = w + co * CG * KH * KW;
            const double* cr = cols.data() + gi * CG * KH * KW;
            for (int64_t k = 0; k < CG * KH * KW; ++k) acc += static_cast<double>(wr[k]) * cr[k];
            y[((b * CO + co) * OH + oy) * OW + ox] = static_cast<T>(acc);
          }
        }
  }

 private:
  Shape xs_, ws_, os_;
  std::vector<int64_t> st_, dl_;
  int64_t pb_[2] = {0, 0};
  int64_t group_ = 1, dg_ = 1;
  bool pad_ = false, mask_ = false;
};
}  // namespace

std::unique_ptr<Kernel> make_deformable_convolution(NodeDesc& n) {
  std::unique_ptr<Kernel> k;
  dispatch_float(n.in(0).dtype, [&](auto tag) { k = std::make_unique<DeformConvKernel<OPF_TYPE_OF(tag)>>(n); });
  return k;
}
std::string check_deformable_convolution(const NodeDesc& n) {
  if (n.in(0).shape.size() != 4) return "DeformableConvolution supports 2-D convolutions only";
  return check_unary(n, Types::Float);
}

OPFORGE_KERNEL(DeformableConvolution, make_deformable_convolution, check_deformable_convolution);

}  // namespace opforge_cpu
