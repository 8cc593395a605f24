// Unique-10: the distinct elements (or slices along a constant axis) of the input, sorted
// (lexicographically, as NumPy) or in order of first occurrence, with the index of each one's
// first occurrence, the inverse mapping and the counts. Outputs 0, 1, 3 are bounded at the
// input's size along the axis (the actual count is reported in the extra size output; see
// dynamic_common.hpp).
#include <algorithm>
#include <numeric>
#include <vector>

#include "kernels/dynamic_common.hpp"

namespace opforge_cpu {

namespace {
template <class T> class UniqueKernel : public Kernel {
 public:
  explicit UniqueKernel(const NodeDesc& n) {
    n_out_ = n.outputs.size();
    const Shape& s = n.in(0).shape;
    sorted_ = n.attrs.b("sorted", true);
    if (n.inputs.size() > 1) {
      const int64_t ax = normalize_axis(n.const_ints(1).at(0), static_cast<int64_t>(s.size()));
      outer_ = inner_ = 1;
      for (int64_t i = 0; i < ax; ++i) outer_ *= s[i];
      for (size_t i = ax + 1; i < s.size(); ++i) inner_ *= s[i];
      dim_ = s[ax];
    } else {
      outer_ = inner_ = 1;
      dim_ = numel(s);
    }
    it_ = n.outputs[1].dtype;
    ct_ = n.outputs[3].dtype;
  }
  std::string impl_name() const override { return "unique"; }

  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const T* x = in[0].ptr<T>();
    auto elem = [&](int64_t slice, int64_t k) { return x[((k / inner_) * dim_ + slice) * inner_ + k % inner_]; };
    const int64_t row = outer_ * inner_;
    auto less = [&](int64_t a, int64_t b) {
      for (int64_t k = 0; k < row; ++k) {
        T va = elem(a, k), vb = elem(b, k);
        if (va < vb) return true;
        if (vb < va) return false;
      }
      return false;
    };
    auto equal = [&](int64_t a, int64_t b) { return !less(a, b) && !less(b, a); };
    std::vector<int64_t> order(dim_);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), less);
    std::vector<int64_t> group(dim_), first, counts;
    for (int64_t i = 0; i < dim_; ++i) {
      if (i == 0 || !equal(order[i - 1], order[i])) {
        first.push_back(order[i]);
        counts.push_back(0);
      }
      group[order[i]] = static_cast<int64_t>(first.size()) - 1;
      ++counts.back();
    }
    const int64_t u = static_cast<int64_t>(first.size());
    std::vector<int64_t> rank(u);
    std::iota(rank.begin(), rank.end(), 0);
    if (!sorted_) {
      std::vector<int64_t> by_first(u);
      std::iota(by_first.begin(), by_first.end(), 0);
      std::stable_sort(by_first.begin(), by_first.end(), [&](int64_t a, int64_t b) { return first[a] < first[b]; });
      for (int64_t j = 0; j < u; ++j) rank[by_first[j]] = j;
    }
    T* vals = out[0].ptr<T>();
    for (int64_t g = 0; g < u; ++g) {
      const int64_t pos = rank[g];
      for (int64_t k = 0; k < row; ++k) vals[((k / inner_) * dim_ + pos) * inner_ + k % inner_] = elem(first[g], k);
      store_int(it_, out[1].data, pos, first[g]);
      store_int(ct_, out[3].data, pos, counts[g]);
    }
    for (int64_t i = 0; i < dim_; ++i) store_int(it_, out[2].data, i, rank[group[i]]);
    report_size(out, n_out_, 4, u);
  }

 private:
  size_t n_out_ = 0;  // outputs given, the size output included when staged
  int64_t outer_ = 1, inner_ = 1, dim_ = 1;
  bool sorted_ = true;
  DType it_ = DType::i64, ct_ = DType::i64;
};
}  // namespace

std::unique_ptr<Kernel> make_unique_op(NodeDesc& n) {
  std::unique_ptr<Kernel> k;
  dispatch_numeric(n.in(0).dtype, [&](auto tag) { k = std::make_unique<UniqueKernel<OPF_TYPE_OF(tag)>>(n); });
  return k;
}
std::string check_unique_op(const NodeDesc& n) {
  if (n.inputs.size() > 1 && !n.is_const(1)) return "Unique needs a constant axis on the CPU device";
  std::string why = check_int_output(n.outputs.at(1).dtype);
  if (why.empty()) why = check_int_output(n.outputs.at(3).dtype);
  return why.empty() ? check_numeric(n) : why;
}

OPFORGE_KERNEL(Unique, make_unique_op, check_unique_op);

}  // namespace opforge_cpu
