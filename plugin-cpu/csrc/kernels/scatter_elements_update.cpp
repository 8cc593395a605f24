// ScatterElementsUpdate-3/-12: out = data, then for every element of indices, the element of out
// at its position with the axis coordinate replaced by the index is replaced by (or reduced
// with: sum, prod, min, max, mean) the matching update. use_init_val=false starts reduced
// elements from the reduction's identity instead of data; mean divides by the count (+1 with
// the initial value), truncating for integers.
#include <vector>

#include "kernels/index_common.hpp"

namespace opforge_cpu {

namespace {
template <class T> class ScatterElementsKernel : public Kernel {
 public:
  explicit ScatterElementsKernel(const NodeDesc& n) {
    ds_ = n.in(0).shape;
    is_ = n.in(1).shape;
    axis_ = normalize_axis(n.const_ints(3).at(0), static_cast<int64_t>(ds_.size()));
    red_ = parse_reduction(n.attrs.s("reduction", "none"));
    init_ = n.attrs.b("use_init_val", true);
    is_bool_ = n.in(0).dtype == DType::boolean;
  }
  std::string impl_name() const override { return "scatter_elements_update"; }
  int inplace_input(int out) const override { return out == 0 ? 0 : -1; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    T* y = out[0].ptr<T>();
    if (out[0].data != in[0].data) std::memcpy(y, in[0].data, in[0].bytes());
    const T* u = in[2].ptr<T>();
    const int rank = static_cast<int>(is_.size());
    const Shape dst = strides_of(ds_);
    const int64_t n = numel(is_);
    std::vector<int64_t> target(n);
    std::vector<int64_t> c(rank, 0);
    for (int64_t i = 0; i < n; ++i) {
      int64_t off = 0;
      for (int d = 0; d < rank; ++d) {
        int64_t v = d == axis_ ? checked_index(load_index(in[1].dtype, in[1].data, i), ds_[d]) : c[d];
        off += v * dst[d];
      }
      target[i] = off;
      for (int d = rank - 1; d >= 0; --d) {
        if (++c[d] < is_[d]) break;
        c[d] = 0;
      }
    }
    if (red_ == Reduction::none) {
      for (int64_t i = 0; i < n; ++i) y[target[i]] = u[i];
      return;
    }
    if (!init_) {
      T id{};
      switch (red_) {
        case Reduction::prod: id = T(1); break;
        case Reduction::min: id = is_bool_ ? T(1) : std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max(); break;
        case Reduction::max: id = is_bool_ ? T(0) : std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest(); break;
        default: id = T(0);
      }
      for (int64_t i = 0; i < n; ++i) y[target[i]] = id;
    }
    std::vector<int64_t> count;
    if (red_ == Reduction::mean) count.assign(numel(ds_), 0);
    for (int64_t i = 0; i < n; ++i) {
      reduce_into(y[target[i]], u[i], red_, is_bool_);
      if (red_ == Reduction::mean) ++count[target[i]];
    }
    if (red_ == Reduction::mean) {
      for (size_t e = 0; e < count.size(); ++e) {
        if (!count[e]) continue;
        int64_t cnt = count[e] + (init_ ? 1 : 0);
        if constexpr (std::is_floating_point_v<T>) y[e] = static_cast<T>(y[e] / static_cast<T>(cnt));
        else y[e] = static_cast<T>(static_cast<int64_t>(y[e]) / cnt);
      }
    }
  }

 private:
  Shape ds_, is_;
  int64_t axis_ = 0;
  Reduction red_ = Reduction::none;
  bool init_ = true, is_bool_ = false;
};
}  // namespace

std::unique_ptr<Kernel> make_scatter_elements_update(NodeDesc& n) {
  std::unique_ptr<Kernel> k;
  if (n.attrs.s("reduction", "none") == "none") {
    dispatch_storage(n.in(0).dtype, [&](auto tag) { k = std::make_unique<ScatterElementsKernel<OPF_TYPE_OF(tag)>>(n); });
  } else {
    dispatch_numeric_bool(n.in(0).dtype, [&](auto tag) { k = std::make_unique<ScatterElementsKernel<OPF_TYPE_OF(tag)>>(n); });
  }
  return k;
}

std::string check_scatter_elements_update(const NodeDesc& n) {
  if (!n.is_const(3)) return "ScatterElementsUpdate needs a constant axis on the CPU device";
  std::string why = check_index_input(n, 1);
  if (!why.empty()) return why;
  if (n.attrs.s("reduction", "none") != "none") return check_numeric_bool(n);
  return "";
}

OPFORGE_KERNEL(ScatterElementsUpdate, make_scatter_elements_update, check_scatter_elements_update);

}  // namespace opforge_cpu
