// Select: cond ? then : else, element-wise with NumPy broadcasting of all three inputs.
#include "kernels/common.hpp"

namespace opforge_cpu {

namespace {
class SelectKernel : public Kernel {
 public:
  explicit SelectKernel(const NodeDesc& n) : out_(n.outputs[0].shape) {
    for (int i = 0; i < 3; ++i) {
      Shape a = align_for_broadcast(out_, n.in(i).shape, "numpy", -1, false);
      Shape st = strides_of(a);
      for (size_t d = 0; d < a.size(); ++d)
        if (a[d] == 1) st[d] = 0;
      str_[i] = st;
    }
    esize_ = dtype_size(n.outputs[0].dtype);
  }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    dispatch_storage(out[0].dtype, [&](auto tag) {
      using T = OPF_TYPE_OF(tag);
      const uint8_t* c = in[0].ptr<uint8_t>();
      const T* a = in[1].ptr<T>();
      const T* b = in[2].ptr<T>();
      T* y = out[0].ptr<T>();
      const int r = static_cast<int>(out_.size());
      const int64_t inner = r ? out_[r - 1] : 1;
      const int64_t rows = inner ? numel(out_) / inner : 0;
      parallel_range(rows, ctx.num_threads, [&](int64_t r0, int64_t r1) {
        for (int64_t row = r0; row < r1; ++row) {
          int64_t o[3] = {0, 0, 0}, rem = row;
          for (int d = r - 2; d >= 0; --d) {
            int64_t i = rem % out_[d];
            rem /= out_[d];
            for (int k = 0; k < 3; ++k) o[k] += i * str_[k][d];
          }
          const int64_t s0 = r ? str_[0][r - 1] : 0, s1 = r ? str_[1][r - 1] : 0, s2 = r ? str_[2][r - 1] : 0;
          T* yp = y + row * inner;
          for (int64_t i = 0; i < inner; ++i) yp[i] = c[o[0] + i * s0] ? a[o[1] + i * s1] : b[o[2] + i * s2];
        }
      }, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, inner)));
    });
  }

 private:
  Shape out_;
  Shape str_[3];
  size_t esize_;
};
}  // namespace

std::unique_ptr<Kernel> make_select(NodeDesc& n) { return std::make_unique<SelectKernel>(n); }

std::string check_select(const NodeDesc& n) {
  if (n.attrs.s("auto_broadcast", "numpy") == "pdpd") return "Select with pdpd broadcasting is not supported";
  return n.in(0).dtype == DType::boolean ? "" : "Select needs a boolean condition";
}

OPFORGE_KERNEL(Select, make_select, check_select);

}  // namespace opforge_cpu
