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
    onnx_max_ = n.attrs.s("mode") == "onnx_max";
    am_ = n.attrs.s("aligned_mode", "asymmetric");
  }
  std::string impl_name() const override { return "roi_align"; }

  // corner_max: the largest weighted corner term (ONNX's max) instead of their sum
  // Coordinates and weights in the data's type T, as OpenVINO, ONNX Runtime and ONNX's reference.
  static double bilinear(const T* img, int64_t h, int64_t w, T y, T x, bool corner_max = false) {
    if (y < T(-1) || y > static_cast<T>(h) || x < T(-1) || x > static_cast<T>(w)) return 0.0;
    y = std::max(y, T(0));
    x = std::max(x, T(0));
    int64_t y0 = static_cast<int64_t>(std::floor(y)), x0 = static_cast<int64_t>(std::floor(x)), y1, x1;
    if (y0 >= h - 1) { y0 = y1 = h - 1; y = static_cast<T>(y0); } else y1 = y0 + 1;
    if (x0 >= w - 1) { x0 = x1 = w - 1; x = static_cast<T>(x0); } else x1 = x0 + 1;
    const T ly = y - static_cast<T>(y0), lx = x - static_cast<T>(x0), hy = T(1) - ly, hx = T(1) - lx;
    const double t[4] = {hy * hx * img[y0 * w + x0], hy * lx * img[y0 * w + x1], ly * hx * img[y1 * w + x0],
                         ly * lx * img[y1 * w + x1]};
    if (corner_max) return std::max(std::max(t[0], t[1]), std::max(t[2], t[3]));
    return t[0] + t[1] + t[2] + t[3];
  }

  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const T* x = in[0].ptr<T>();
    const int64_t N = xs_[0], C = xs_[1], H = xs_[2], W = xs_[3];
    const std::vector<double> boxes = read_floats(in[1].dtype, in[1].data, nroi_ * 4);
    T* y = out[0].ptr<T>();
    for (int64_t k = 0; k < nroi_; ++k) {
      const int64_t b = load_index(in[2].dtype, in[2].data, k);
      if (b < 0 || b >= N) throw KernelFailure("batch index " + std::to_string(b) + " of roi " + std::to_string(k) + " is out of range");
      T v[4];
      const T scale = static_cast<T>(scale_);
      for (int i = 0; i < 4; ++i) {
        const T c = static_cast<T>(boxes[k * 4 + i]);
        v[i] = am_ == "half_pixel" ? (c + T(0.5)) * scale - T(0.5) : c * scale + T(am_ == "half_pixel_for_nn" ? -0.5 : 0.0);
      }
      T rw = v[2] - v[0], rh = v[3] - v[1];
      if (am_ == "asymmetric") {
        rw = std::max(rw, T(1));
        rh = std::max(rh, T(1));
      }
      const T bw = rw / static_cast<T>(pw_), bh = rh / static_cast<T>(ph_);
      const int64_t sx = sr_ ? sr_ : std::max<int64_t>(static_cast<int64_t>(std::ceil(bw)), 1);
      const int64_t sy = sr_ ? sr_ : std::max<int64_t>(static_cast<int64_t>(std::ceil(bh)), 1);
      for (int64_t c = 0; c < C; ++c) {
        const T* img = x + (b * C + c) * H * W;
        for (int64_t i = 0; i < ph_; ++i)
          for (int64_t j = 0; j < pw_; ++j) {
            double acc = 0;
            for (int64_t a = 0; a < sy; ++a)
              for (int64_t q = 0; q < sx; ++q) {
                const T py = static_cast<T>(i) * bh + (static_cast<T>(a) + T(0.5)) * (bh / static_cast<T>(sy)) + v[1];
                const T px = static_cast<T>(j) * bw + (static_cast<T>(q) + T(0.5)) * (bw / static_cast<T>(sx)) + v[0];
                const double s = bilinear(img, H, W, py, px, onnx_max_);
                if (onnx_max_) acc = (a == 0 && q == 0) ? s : std::max(acc, s);  // from the first sample
                else acc = max_ ? std::max(acc, s) : acc + s;
              }
            const bool any_max = max_ || onnx_max_;
            y[((k * C + c) * ph_ + i) * pw_ + j] = static_cast<T>(any_max ? acc : acc / static_cast<double>(sx * sy));
          }
      }
    }
  }

 private:
  Shape xs_;
  int64_t nroi_ = 0, ph_ = 1, pw_ = 1, sr_ = 0;
  double scale_ = 1;
  bool max_ = false, onnx_max_ = false;
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

OPFORGE_KERNEL(ROIAlign, make_roi_align, check_roi_align);

}  // namespace opforge_cpu
