// CumSum-3: running sums along an axis (a constant input, default 0), exclusive and/or
// reversed; floats accumulate in double like the reference.
#include "kernels/index_common.hpp"

namespace opforge_cpu {

namespace {
template <class T> class CumSumKernel : public Kernel {
 public:
  explicit CumSumKernel(const NodeDesc& n) {
    const Shape& s = n.in(0).shape;
    const int64_t rank = static_cast<int64_t>(s.size());
    const int64_t axis = normalize_axis(n.inputs.size() > 1 ? n.const_ints(1).at(0) : 0, rank);
    outer_ = inner_ = 1;
    for (int64_t i = 0; i < axis; ++i) outer_ *= s[i];
    for (int64_t i = axis + 1; i < rank; ++i) inner_ *= s[i];
    dim_ = s[axis];
    exclusive_ = n.attrs.b("exclusive", false);
    reverse_ = n.attrs.b("reverse", false);
  }
  std::string impl_name() const override { return "cum_sum"; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
    const T* x = in[0].ptr<T>();
    T* y = out[0].ptr<T>();
    parallel_range(outer_ * inner_, ctx.num_threads, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t o = r / inner_, i = r % inner_;
        const T* xp = x + o * dim_ * inner_ + i;
        T* yp = y + o * dim_ * inner_ + i;
        Acc acc = 0;
        for (int64_t j = 0; j < dim_; ++j) {
          const int64_t k = reverse_ ? dim_ - 1 - j : j;
          if (exclusive_) {
            yp[k * inner_] = static_cast<T>(acc);
            acc = static_cast<Acc>(acc + xp[k * inner_]);
          } else {
            acc = static_cast<Acc>(acc + xp[k * inner_]);
            yp[k * inner_] = static_cast<T>(acc);
          }
        }
      }
    }, std::max<int64_t>(1, 32768 / std::max<int64_t>(1, dim_)));
  }

 private:
  int64_t outer_ = 1, inner_ = 1, dim_ = 1;
  bool exclusive_ = false, reverse_ = false;
};
}  // namespace

std::unique_ptr<Kernel> make_cum_sum(NodeDesc& n) {
  std::unique_ptr<Kernel> k;
  dispatch_numeric(n.in(0).dtype, [&](auto tag) { k = std::make_unique<CumSumKernel<OPF_TYPE_OF(tag)>>(n); });
  return k;
}
std::string check_cum_sum(const NodeDesc& n) {
  if (n.inputs.size() > 1 && !n.is_const(1)) return "CumSum needs a constant axis on the CPU device";
  return check_numeric(n);
}

OPFORGE_KERNEL(CumSum, make_cum_sum, check_cum_sum);

}  // namespace opforge_cpu
