// ScatterNDUpdate-4 and -15: each slice of data addressed by an index tuple (the last dimension
// of indices) combined with its update in index order: replaced ("none", the last repeated index
// wins), or reduced (sum, sub, prod, min, max; on booleans OR, XOR, AND, AND, OR).
#include "kernels/index_common.hpp"

namespace opforge_cpu {

namespace {
template <class T> class ScatterNDKernel : public Kernel {
 public:
  explicit ScatterNDKernel(const NodeDesc& n) {
    ds_ = n.in(0).shape;
    const Shape& is = n.in(1).shape;
    k_ = is.empty() ? 0 : is.back();
    m_ = 1;
    for (size_t i = 0; i + 1 < is.size(); ++i) m_ *= is[i];
    slice_ = 1;
    for (size_t i = k_; i < ds_.size(); ++i) slice_ *= ds_[i];
    red_ = parse_reduction(n.attrs.s("reduction", "none"));
    is_bool_ = n.in(0).dtype == DType::boolean;
  }
  std::string impl_name() const override { return "scatter_nd_update"; }
  int inplace_input(int out) const override { return out == 0 ? 0 : -1; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    T* y = out[0].ptr<T>();
    if (out[0].data != in[0].data) std::memcpy(y, in[0].data, in[0].bytes());
    const T* u = in[2].ptr<T>();
    for (int64_t j = 0; j < m_; ++j) {
      int64_t off = 0;
      for (int64_t q = 0; q < k_; ++q)
        off = off * ds_[q] + checked_index(load_index(in[1].dtype, in[1].data, j * k_ + q), ds_[q]);
      T* dst = y + off * slice_;
      const T* src = u + j * slice_;
      if (red_ == Reduction::none) {
        std::memcpy(dst, src, sizeof(T) * slice_);
      } else {
        for (int64_t e = 0; e < slice_; ++e) reduce_into(dst[e], src[e], red_, is_bool_);
      }
    }
  }

 private:
  Shape ds_;
  int64_t k_ = 0, m_ = 0, slice_ = 1;
  Reduction red_ = Reduction::none;
  bool is_bool_ = false;
};
}  // namespace

std::unique_ptr<Kernel> make_scatter_nd_update(NodeDesc& n) {
  std::unique_ptr<Kernel> k;
  if (n.attrs.s("reduction", "none") == "none") {
    dispatch_storage(n.in(0).dtype, [&](auto tag) { k = std::make_unique<ScatterNDKernel<OPF_TYPE_OF(tag)>>(n); });
  } else {
    dispatch_numeric_bool(n.in(0).dtype, [&](auto tag) { k = std::make_unique<ScatterNDKernel<OPF_TYPE_OF(tag)>>(n); });
  }
  return k;
}

std::string check_scatter_nd_update(const NodeDesc& n) {
  std::string why = check_index_input(n, 1);
  if (!why.empty()) return why;
  if (n.attrs.s("reduction", "none") != "none") return check_numeric_bool(n);
  return "";
}

OPFORGE_KERNEL(ScatterNDUpdate, make_scatter_nd_update, check_scatter_nd_update);

}  // namespace opforge_cpu
