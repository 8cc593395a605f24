// NormalizeL2-1: x / sqrt(sum of x^2 over the constant `axes` + eps) (eps_mode "add") or
// x / sqrt(max(sum, eps)) ("max"). Empty axes divide every element by itself: 1, or 0 for zeros
// (OpenVINO's corner case). The shape is coalesced into runs of reduced / kept axes; a single
// reduced run (outer x reduced x inner, the usual case) runs in parallel over its columns.
#include <cmath>
#include <vector>

#include "kernels/common.hpp"

namespace opforge_cpu {

namespace {
template <class T> class NormalizeL2Kernel : public Kernel {
 public:
  explicit NormalizeL2Kernel(const NodeDesc& n) {
    const Shape& s = n.in(0).shape;
    const int64_t rank = static_cast<int64_t>(s.size());
    std::vector<bool> red(rank, false);
    if (rank > 0)
      for (int64_t a : n.const_ints(1)) red[normalize_axis(a, rank)] = true;
    for (int64_t i = 0; i < rank; ++i) {
      if (s[i] == 1) continue;  // a unit axis changes nothing, reduced or not
      if (!dims_.empty() && reduced_.back() == red[i]) {
        dims_.back() *= s[i];
      } else {
        dims_.push_back(s[i]);
        reduced_.push_back(red[i]);
      }
    }
    any_axis_ = false;
    for (int64_t i = 0; i < rank; ++i) any_axis_ = any_axis_ || red[i];
    eps_ = n.attrs.f("eps");
    max_mode_ = n.attrs.s("eps_mode", "add") == "max";
    total_ = numel(s);
  }
  std::string impl_name() const override { return "normalize_l2"; }
  int inplace_input(int out) const override { return out == 0 ? 0 : -1; }
  size_t scratch_bytes() const override { return generic() ? static_cast<size_t>(total_) * sizeof(double) : 0; }

  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    if (!any_axis_) {
      for (int64_t i = 0; i < total_; ++i) y[i] = x[i] == T(0) ? T(0) : T(1);
      return;
    }
    if (!generic()) {
      // outer x reduced x inner, with outer and inner possibly 1
      int64_t outer = 1, len = 1, inner = 1;
      size_t k = 0;
      if (k < dims_.size() && !reduced_[k]) outer = dims_[k++];
      if (k < dims_.size()) len = dims_[k++];
      if (k < dims_.size()) inner = dims_[k++];
      parallel_range(outer * inner, ctx.num_threads, [&](int64_t b, int64_t e) {
        for (int64_t p = b; p < e; ++p) {
          const int64_t o = p / inner, i = p % inner;
          const T* xs = x + o * len * inner + i;
          T* ys = y + o * len * inner + i;
          double acc = 0;
          for (int64_t q = 0; q < len; ++q) acc += static_cast<double>(xs[q * inner]) * static_cast<double>(xs[q * inner]);
          const double norm = this->norm(acc);
          for (int64_t q = 0; q < len; ++q) ys[q * inner] = static_cast<T>(static_cast<double>(xs[q * inner]) / norm);
        }
      }, 1024);
      return;
    }
    // Several reduced runs: sums into a buffer of the kept shape, walked with a multi-index.
    const size_t r = dims_.size();
    std::vector<int64_t> kstride(r, 0);
    int64_t kept = 1;
    for (size_t i = r; i-- > 0;)
      if (!reduced_[i]) {
        kstride[i] = kept;
        kept *= dims_[i];
      }
    double* sums = static_cast<double*>(ctx.scratch);
    for (int64_t i = 0; i < kept; ++i) sums[i] = 0;
    std::vector<int64_t> idx(r, 0);
    int64_t ki = 0;
    auto walk = [&](auto&& f) {
      std::fill(idx.begin(), idx.end(), 0);
      ki = 0;
      for (int64_t i = 0; i < total_; ++i) {
        f(i, ki);
        for (size_t d = r; d-- > 0;) {
          ki += kstride[d];
          if (++idx[d] < dims_[d]) break;
          ki -= kstride[d] * dims_[d];
          idx[d] = 0;
        }
      }
    };
    walk([&](int64_t i, int64_t k) { sums[k] += static_cast<double>(x[i]) * static_cast<double>(x[i]); });
    for (int64_t i = 0; i < kept; ++i) sums[i] = norm(sums[i]);
    walk([&](int64_t i, int64_t k) { y[i] = static_cast<T>(static_cast<double>(x[i]) / sums[k]); });
  }

 private:
  bool generic() const {
    if (!any_axis_) return false;
    int runs = 0;
    for (bool b : reduced_) runs += b ? 1 : 0;
    return runs > 1;
  }
  double norm(double sq) const { return std::sqrt(max_mode_ ? std::max(sq, eps_) : sq + eps_); }

  std::vector<int64_t> dims_;
  std::vector<bool> reduced_;
  bool any_axis_ = false, max_mode_ = false;
  double eps_ = 0;
  int64_t total_ = 0;
};
}  // namespace

std::unique_ptr<Kernel> make_normalize_l2(NodeDesc& n) {
  std::unique_ptr<Kernel> k;
  dispatch_float(n.in(0).dtype, [&](auto tag) { k = std::make_unique<NormalizeL2Kernel<OPF_TYPE_OF(tag)>>(n); });
  return k;
}

std::string check_normalize_l2(const NodeDesc& n) {
  if (!n.is_const(1)) return "NormalizeL2 needs constant axes on the CPU device";
  return check_unary(n, Types::Float);
}

OPFORGE_KERNEL(NormalizeL2, make_normalize_l2, check_normalize_l2);

}  // namespace opforge_cpu
