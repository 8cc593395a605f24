// TopK-11: the k largest ("max") or smallest ("min") elements along an axis and their indices;
// sorted by value ("value", "none") or by index ("index"). Ties: lowest index first, so the
// result is also the stable one. k comes from the output shape (fixed per program).
#include <algorithm>
#include <numeric>
#include <vector>

#include "kernels/common.hpp"

namespace opforge_cpu {

namespace {
template <class T, class I> class TopKKernel : public Kernel {
 public:
  explicit TopKKernel(const NodeDesc& n) {
    const Shape& xs = n.in(0).shape;
    const int64_t rank = static_cast<int64_t>(xs.size());
    const int64_t axis = normalize_axis(n.attrs.i("axis"), rank);
    max_ = n.attrs.s("mode", "max") == "max";
    by_index_ = n.attrs.s("sort", "value") == "index";
    n_ = xs[axis];
    k_ = n.outputs[0].shape[axis];
    outer_ = inner_ = 1;
    for (int64_t i = 0; i < axis; ++i) outer_ *= xs[i];
    for (int64_t i = axis + 1; i < rank; ++i) inner_ *= xs[i];
  }
  std::string impl_name() const override { return "top_k"; }
  size_t scratch_bytes() const override { return 0; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    if (k_ > n_) throw KernelFailure("k = " + std::to_string(k_) + " exceeds the axis size " + std::to_string(n_));
    const T* x = in[0].ptr<T>();
    T* vals = out[0].ptr<T>();
    I* idx = out[1].ptr<I>();
    const int64_t n = n_, k = k_, inner = inner_;
    const bool mx = max_;
    parallel_range(outer_ * inner_, ctx.num_threads, [&](int64_t r0, int64_t r1) {
      std::vector<int64_t> order(n);
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t o = r / inner, i = r % inner;
        const T* row = x + o * n * inner + i;
        std::iota(order.begin(), order.end(), 0);
        auto before = [&](int64_t a, int64_t b) {
          T va = row[a * inner], vb = row[b * inner];
          if constexpr (std::is_floating_point_v<T>) {
            // NaN ranks above everything for "max" and below for "min" (as NumPy sorts it last).
            bool na = std::isnan(va), nb = std::isnan(vb);
            if (na || nb) return na != nb ? (mx ? na : nb) : a < b;
          }
          if (va != vb) return mx ? va > vb : va < vb;
          return a < b;
        };
        if (k < n) std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
        else std::sort(order.begin(), order.end(), before);
        if (by_index_) std::sort(order.begin(), order.begin() + k);
        T* vo = vals + o * k * inner + i;
        I* io = idx + o * k * inner + i;
        for (int64_t j = 0; j < k; ++j) {
          vo[j * inner] = row[order[j] * inner];
          io[j * inner] = static_cast<I>(order[j]);
        }
      }
    }, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, n_)));
  }

 private:
  int64_t n_ = 0, k_ = 0, outer_ = 1, inner_ = 1;
  bool max_ = true, by_index_ = false;
};
}  // namespace

std::unique_ptr<Kernel> make_top_k(NodeDesc& n) {
  std::unique_ptr<Kernel> k;
  dispatch_numeric(n.in(0).dtype, [&](auto tag) {
    using T = OPF_TYPE_OF(tag);
    if (n.outputs[1].dtype == DType::i64) k = std::make_unique<TopKKernel<T, int64_t>>(n);
    else k = std::make_unique<TopKKernel<T, int32_t>>(n);
  });
  return k;
}

std::string check_top_k(const NodeDesc& n) {
  if (n.outputs.size() < 2 || (n.outputs[1].dtype != DType::i32 && n.outputs[1].dtype != DType::i64))
    return "TopK indices must be i32 or i64";
  return check_numeric(n);
}

OPFORGE_KERNEL(TopK, make_top_k, check_top_k);

}  // namespace opforge_cpu
