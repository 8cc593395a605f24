// LRN-1: x / (bias + alpha / size^n * sum of x^2 over a window of `size` around each element
// along the constant `axes`)^beta. The window sum is separable: a clipped box sum per axis.
#include <vector>

#include "kernels/index_common.hpp"

namespace opforge_cpu {

namespace {
template <class T> class LRNKernel : public Kernel {
 public:
  explicit LRNKernel(const NodeDesc& n) {
    shape_ = n.in(0).shape;
    const int64_t rank = static_cast<int64_t>(shape_.size());
    for (int64_t a : n.const_ints(1)) axes_.push_back(normalize_axis(a, rank));
    size_ = n.attrs.i("size");
    alpha_ = n.attrs.f("alpha");
    beta_ = n.attrs.f("beta");
    bias_ = n.attrs.f("bias");
  }
  std::string impl_name() const override { return "lrn"; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const T* x = in[0].ptr<T>();
    const int64_t total = numel(shape_);
    std::vector<double> sq(total), tmp(total);
    for (int64_t i = 0; i < total; ++i) sq[i] = static_cast<double>(x[i]) * static_cast<double>(x[i]);
    const int64_t half = (size_ - 1) / 2;
    const int64_t rank = static_cast<int64_t>(shape_.size());
    for (int64_t ax : axes_) {
      int64_t outer = 1, inner = 1, len = shape_[ax];
      for (int64_t i = 0; i < ax; ++i) outer *= shape_[i];
      for (int64_t i = ax + 1; i < rank; ++i) inner *= shape_[i];
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          const double* s = sq.data() + o * len * inner + i;
          double* t = tmp.data() + o * len * inner + i;
          for (int64_t p = 0; p < len; ++p) {
            double acc = 0;
            for (int64_t q = std::max<int64_t>(0, p - half); q < std::min<int64_t>(len, p + half + 1); ++q) acc += s[q * inner];
            t[p * inner] = acc;
          }
        }
      sq.swap(tmp);
    }
    const double scale = alpha_ / std::pow(static_cast<double>(size_), static_cast<double>(axes_.size()));
    T* y = out[0].ptr<T>();
    for (int64_t i = 0; i < total; ++i)
      y[i] = static_cast<T>(static_cast<double>(x[i]) / std::pow(bias_ + scale * sq[i], beta_));
  }

 private:
  Shape shape_;
  std::vector<int64_t> axes_;
  int64_t size_ = 1;
  double alpha_ = 0, beta_ = 0, bias_ = 1;
};
}  // namespace

std::unique_ptr<Kernel> make_lrn(NodeDesc& n) {
  std::unique_ptr<Kernel> k;
  dispatch_float(n.in(0).dtype, [&](auto tag) { k = std::make_unique<LRNKernel<OPF_TYPE_OF(tag)>>(n); });
  return k;
}
std::string check_lrn(const NodeDesc& n) {
  if (!n.is_const(1)) return "LRN needs constant axes on the CPU device";
  return check_unary(n, Types::Float);
}

OPFORGE_KERNEL(LRN, make_lrn, check_lrn);

}  // namespace opforge_cpu
