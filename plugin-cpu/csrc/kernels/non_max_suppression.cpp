// NonMaxSuppression-9: per batch and class, greedily pick the highest-scoring box (first index
// among equal scores) above score_threshold, drop the others overlapping it by more than
// iou_threshold (or, with soft_nms_sigma > 0, decay their scores), up to
// max_output_boxes_per_class; boxes as corners (any order) or centers. Results sorted by score
// when sort_result_descending (stable), else by batch, class. Outputs 0 and 1 are bounded at
// batch * classes * boxes rows (actual rows reported in the extra size output).
#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "kernels/dynamic_common.hpp"

namespace opforge_cpu {

namespace {
template <class T> class NMSKernel : public Kernel {
 public:
  explicit NMSKernel(const NodeDesc& n) {
    n_out_ = n.outputs.size();
    center_ = n.attrs.s("box_encoding", "corner") == "center";
    sort_desc_ = n.attrs.b("sort_result_descending", true);
    ot_ = n.outputs[0].dtype;
    nb_ = n.in(1).shape[0];
    nc_ = n.in(1).shape[1];
    nbox_ = n.in(1).shape[2];
    n_in_ = n.inputs.size();
  }
  std::string impl_name() const override { return "non_max_suppression"; }

  double scalar(const TensorView* in, size_t i, double dflt) const {
    if (i >= n_in_ || in[i].size() == 0) return dflt;
    if (is_float(in[i].dtype)) return read_floats(in[i].dtype, in[i].data, 1)[0];
    return static_cast<double>(load_index(in[i].dtype, in[i].data, 0));
  }

  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const T* boxes = in[0].ptr<T>();
    const T* scores = in[1].ptr<T>();
    const int64_t max_out = std::max<int64_t>(static_cast<int64_t>(scalar(in, 2, 0)), 0);
    const double iou_thr = scalar(in, 3, 0), score_thr = scalar(in, 4, 0), sigma = scalar(in, 5, 0);
    struct Found { int64_t b, c, i; double s; };
    std::vector<Found> found;
    std::vector<std::array<double, 4>> cor(nbox_);
    for (int64_t b = 0; b < nb_; ++b) {
      for (int64_t i = 0; i < nbox_; ++i) {
        const T* p = boxes + (b * nbox_ + i) * 4;
        double v0 = p[0], v1 = p[1], v2 = p[2], v3 = p[3];
        if (center_) cor[i] = {v1 - v3 / 2, v0 - v2 / 2, v1 + v3 / 2, v0 + v2 / 2};
        else cor[i] = {std::min(v0, v2), std::min(v1, v3), std::max(v0, v2), std::max(v1, v3)};
      }
      auto iou = [&](int64_t a, int64_t o) {
        const auto &A = cor[a], &B = cor[o];
        const double area = (A[2] - A[0]) * (A[3] - A[1]), areas = (B[2] - B[0]) * (B[3] - B[1]);
        const double ih = std::max(0.0, std::min(A[2], B[2]) - std::max(A[0], B[0]));
        const double iw = std::max(0.0, std::min(A[3], B[3]) - std::max(A[1], B[1]));
        const double inter = ih * iw, uni = area + areas - inter;
        return (area > 0 && areas > 0 && uni > 0) ? inter / uni : 0.0;
      };
      for (int64_t c = 0; c < nc_; ++c) {
        std::vector<double> sc(nbox_);
        std::vector<char> alive(nbox_);
        for (int64_t i = 0; i < nbox_; ++i) {
          sc[i] = static_cast<double>(scores[(b * nc_ + c) * nbox_ + i]);
          alive[i] = sc[i] > score_thr;
        }
        int64_t picked = 0;
        while (picked < max_out) {
          int64_t best = -1;
          for (int64_t i = 0; i < nbox_; ++i)
            if (alive[i] && (best < 0 || sc[i] > sc[best])) best = i;
          if (best < 0) break;
          found.push_back({b, c, best, sc[best]});
          ++picked;
          alive[best] = 0;
          for (int64_t i = 0; i < nbox_; ++i) {
            if (!alive[i]) continue;
            const double v = iou(best, i);
            if (sigma > 0) {
              sc[i] *= std::exp(-(v * v) / (2 * sigma));
              alive[i] = sc[i] > score_thr;
            } else if (v > iou_thr) {
              alive[i] = 0;
            }
          }
        }
      }
    }
    if (sort_desc_) std::stable_sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return a.s > b.s; });
    T* sel = out[1].ptr<T>();
    for (size_t k = 0; k < found.size(); ++k) {
      store_int(ot_, out[0].data, 3 * k, found[k].b);
      store_int(ot_, out[0].data, 3 * k + 1, found[k].c);
      store_int(ot_, out[0].data, 3 * k + 2, found[k].i);
      sel[3 * k] = static_cast<T>(found[k].b);
      sel[3 * k + 1] = static_cast<T>(found[k].c);
      sel[3 * k + 2] = static_cast<T>(found[k].s);
    }
    store_int(ot_, out[2].data, 0, static_cast<int64_t>(found.size()));
    report_size(out, n_out_, 3, static_cast<int64_t>(found.size()));
  }

 private:
  size_t n_out_ = 0;  // outputs given, the size output included when staged
  bool center_ = false, sort_desc_ = true;
  DType ot_ = DType::i64;
  int64_t nb_ = 0, nc_ = 0, nbox_ = 0;
  size_t n_in_ = 2;
};
}  // namespace

std::unique_ptr<Kernel> make_non_max_suppression(NodeDesc& n) {
  std::unique_ptr<Kernel> k;
  dispatch_float(n.in(0).dtype, [&](auto tag) { k = std::make_unique<NMSKernel<OPF_TYPE_OF(tag)>>(n); });
  return k;
}
std::string check_non_max_suppression(const NodeDesc& n) {
  if (n.in(1).dtype != n.in(0).dtype) return "NonMaxSuppression boxes and scores must have one type";
  std::string why = check_int_output(n.outputs.at(0).dtype);
  return why.empty() ? check_unary(n, Types::Float) : why;
}

OPFORGE_KERNEL(NonMaxSuppression, make_non_max_suppression, check_non_max_suppression);

}  // namespace opforge_cpu
