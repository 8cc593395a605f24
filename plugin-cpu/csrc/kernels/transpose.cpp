// Transpose: permutes dimensions (constant permutation), collapsing dimensions that stay
// adjacent so the inner loop is as long as possible.
#include "kernels/common.hpp"

namespace opforge_cpu {

namespace {
class TransposeKernel : public Kernel {
 public:
  explicit TransposeKernel(const NodeDesc& n) : esize_(dtype_size(n.in(0).dtype)) {
    const Shape& xs = n.in(0).shape;
    auto perm = n.const_ints(1);
    if (perm.empty()) for (int64_t i = static_cast<int64_t>(xs.size()) - 1; i >= 0; --i) perm.push_back(i);
    Shape st = strides_of(xs);
    // Output dims in order, with the input stride each one walks; merge runs that are contiguous.
    for (size_t i = 0; i < perm.size(); ++i) {
      int64_t d = xs[perm[i]], s = st[perm[i]];
      if (d == 1) continue;
      if (!dims_.empty() && strides_.back() == s * d) {
        dims_.back() *= d;
        strides_.back() = s;
      } else {
        dims_.push_back(d);
        strides_.push_back(s);
      }
    }
    if (dims_.empty()) { dims_ = {1}; strides_ = {1}; }
    total_ = numel(xs);
  }
  std::string impl_name() const override { return dims_.size() == 1 ? "copy" : "permute"; }
  int inplace_input(int out) const override { return dims_.size() == 1 && out == 0 ? 0 : -1; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    if (dims_.size() == 1) {
      if (out[0].data != in[0].data) std::memcpy(out[0].data, in[0].data, out[0].bytes());
      return;
    }
    dispatch_storage(in[0].dtype, [&](auto tag) {
      using T = OPF_TYPE_OF(tag);
      const T* x = in[0].ptr<T>();
      T* y = out[0].ptr<T>();
      const int r = static_cast<int>(dims_.size());
      const int64_t inner = dims_[r - 1], is = strides_[r - 1];
      const int64_t rows = total_ / inner;
      parallel_range(rows, ctx.num_threads, [&](int64_t b, int64_t e) {
        for (int64_t row = b; row < e; ++row) {
          int64_t rr = row, off = 0;
          for (int d = r - 2; d >= 0; --d) {
            off += (rr % dims_[d]) * strides_[d];
            rr /= dims_[d];
          }
          T* yp = y + row * inner;
          const T* xp = x + off;
          for (int64_t i = 0; i < inner; ++i) yp[i] = xp[i * is];
        }
      }, std::max<int64_t>(1, 16384 / inner));
    });
  }

 private:
  std::vector<int64_t> dims_, strides_;
  int64_t total_ = 0;
  size_t esize_;
};
}  // namespace

std::unique_ptr<Kernel> make_transpose(NodeDesc& n) { return std::make_unique<TransposeKernel>(n); }

std::string check_transpose(const NodeDesc& n) {
  return n.is_const(1) ? "" : "Transpose needs a constant permutation on the CPU device";
}

OPFORGE_KERNEL(Transpose, make_transpose, check_transpose);

}  // namespace opforge_cpu
