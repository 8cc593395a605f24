// GRN-1: x / sqrt(sum of x^2 over channels (axis 1) + bias), data of rank 2 to 4.
#include <cmath>

#include "kernels/common.hpp"

namespace opforge_cpu {

namespace {
template <class T> class GRNKernel : public Kernel {
 public:
  explicit GRNKernel(const NodeDesc& n) : bias_(n.attrs.f("bias")) {
    const Shape& s = n.in(0).shape;
    outer_ = s.at(0);
    channels_ = s.at(1);
    for (size_t i = 2; i < s.size(); ++i) inner_ *= s[i];
  }
  std::string impl_name() const override { return "grn"; }
  int inplace_input(int out) const override { return out == 0 ? 0 : -1; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    const int64_t c = channels_, inner = inner_;
    const double bias = bias_;
    parallel_range(outer_ * inner, ctx.num_threads, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const int64_t o = p / inner, i = p % inner;
        const T* xs = x + o * c * inner + i;
        T* ys = y + o * c * inner + i;
        double acc = 0;
        for (int64_t k = 0; k < c; ++k) acc += static_cast<double>(xs[k * inner]) * static_cast<double>(xs[k * inner]);
        const double norm = std::sqrt(acc + bias);
        for (int64_t k = 0; k < c; ++k) ys[k * inner] = static_cast<T>(static_cast<double>(xs[k * inner]) / norm);
      }
    }, 1024);
  }

 private:
  double bias_;
  int64_t outer_ = 1, channels_ = 1, inner_ = 1;
};
}  // namespace

std::unique_ptr<Kernel> make_grn(NodeDesc& n) {
  std::unique_ptr<Kernel> k;
  dispatch_float(n.in(0).dtype, [&](auto tag) { k = std::make_unique<GRNKernel<OPF_TYPE_OF(tag)>>(n); });
  return k;
}

std::string check_grn(const NodeDesc& n) {
  const size_t r = n.in(0).shape.size();
  if (r < 2 || r > 4) return "GRN needs data of rank 2 to 4";
  return check_unary(n, Types::Float);
}

OPFORGE_KERNEL(GRN, make_grn, check_grn);

}  // namespace opforge_cpu
