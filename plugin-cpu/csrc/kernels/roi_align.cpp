// ROIAlign-9: each region of interest (x1, y1, x2, y2 scaled by spatial_scale, per aligned_mode)
// of image batch_indices[k] pooled into [pooled_h, pooled_w] bins by averaging ("avg") or taking
// the maximum ("max", a running maximum from 0 as OpenVINO) of bilinear samples on a regular
// sub-grid of each bin (sampling_ratio per axis, 0: ceil(bin size)). Samples more than one
// pixel outside the image count as zero.
#include <cmath>
#include <vector>

#include "kernels/index_common.hpp"

namespace opforge_cpu {

namespace {
template <class T> class ROIAlignKernel : public Kernel {
 public:
  explicit ROIAlignKernel(const NodeDesc& n) {
    xs_ = n.in(0).shape;
    nroi_ = n.in(1).shape[0];
    ph_ = n.attrs.i("pooled_h");
    pw_ = n.attrs.i("pooled_w");
    sr_ = n.attrs.i("sampling_ratio");
    scale_ = n.attrs.f("spatial_scale");
    max_ = n.attrs.s("mode") == "max";
    am_ = n.attrs.s("aligned_mode", "asymmetric");
  }
  std::string impl_name() const override { return "roi_align"; }

  static double bilinear(const T* img, int64_t h, int64_t w, double y, double x) {
    if (y < -1.0 || y > h || x < -1.0 || x > w) return 0.0;
    y = std::max(y, 0.0);
    x = std::max(x, 0.0);
    int64_t y0 = static_cast<int64_t>(std::floor(y)), x0 = static_cast<int64_t>(std::floor(x)), y1, x1;
    if (y0 >= h - 1) { y0 = y1 = h - 1; y = static_cast<double>(y0); } else y1 = y0 + 1;
    if (x0 >= w - 1) { x0 = x1 = w - 1; x = static_cast<double>(x0); } else x1 = x0 + 1;
    const double ly = y - y0, lx = x - x0, hy = 1 - ly, hx = 1 - lx;
    return hy * hx * img[y0 * w + x0] + hy * lx * img[y0 * w + x1] + ly * hx * img[y1 * w + x0] + ly * lx * img[y1 * w + x1];
  }

  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const T* x = in[0].ptr<T>();
    const int64_t N = xs_[0], C = xs_[1], H = xs_[2], W = xs_[3];
    const std::vector<double> boxes = read_floats(in[1].dtype, in[1].data, nroi_ * 4);
    T* y = out[0].ptr<T>();
    for (int64_t k = 0; k < nroi_; ++k) {
      const int64_t b = load_index(in[2].dtype, in[2].data, k);
      if (b < 0 || b >= N) throw KernelFailure("batch index " + std::to_string(b) + " of roi " + std::to_string(k) + " is out of range");
      double v[4];
      for (int i = 0; i < 4; ++i) {
        const double c = boxes[k * 4 + i];
        v[i] = am_ == "half_pixel" ? (c + 0.5) * scale_ - 0.5 : c * scale_ + (am_ == "half_pixel_for_nn" ? -0.5 : 0.0);
      }
      double rw = v[2] - v[0], rh = v[3] - v[1];
      if (am_ == "asymmetric") {
        rw = std::max(rw, 1.0);
        rh = std::max(rh, 1.0);
      }
      const double bw = rw / pw_, bh = rh / ph_;
      const int64_t sx = sr_ ? sr_ : std::max<int64_t>(static_cast<int64_t>(std::ceil(bw)), 1);
      const int64_t sy = sr_ ? sr_ : std::max<int64_t>(static_cast<int64_t>(std::ceil(bh)), 1);
      for (int64_t c = 0; c < C; ++c) {
        const T* img = x + (b * C + c) * H * W;
        for (int64_t i = 0; i < ph_; ++i)
          for (int64_t j = 0; j < pw_; ++j) {
            double acc = 0;
            for (int64_t a = 0; a < sy; ++a)
              for (int64_t q = 0; q < sx; ++q) {
                const double py = i * bh + (a + 0.5) * (bh / sy) + v[1];
                const double px = j * bw + (q + 0.5) * (bw / sx) + v[0];
                const double s = bilinear(img, H, W, py, px);
                acc = max_ ? std::max(acc, s) : acc + s;
              }
            y[((k * C + c) * ph_ + i) * pw_ + j] = static_cast<T>(max_ ? acc : acc / static_cast<double>(sx * sy));
          }
      }
    }
  }

 private:
  Shape xs_;
  int64_t nroi_ = 0, ph_ = 1, pw_ = 1, sr_ = 0;
  double scale_ = 1;
  bool max_ = false;
  std::string am_;
};
}  // namespace

std::unique_ptr<Kernel> make_roi_align(NodeDesc& n) {
  std::unique_ptr<Kernel> k;
  dispatch_float(n.in(0).dtype, [&](auto tag) { k = std::make_unique<ROIAlignKernel<OPF_TYPE_OF(tag)>>(n); });
  return k;
}
std::string check_roi_align(const NodeDesc& n) {
  if (!is_float(n.in(1).dtype)) return "ROIAlign rois must be floating-point";
  return check_unary(n, Types::Float);
}

}  // namespace opforge_cpu
