// GatherElements-6: out[i0..in] = data[i0.., indices[i0..in], ..in] along `axis`; negative
// indices count from the end.
#include "kernels/index_common.hpp"

namespace opforge_cpu {

namespace {
class GatherElementsKernel : public Kernel {
 public:
  explicit GatherElementsKernel(const NodeDesc& n) {
    ds_ = n.in(0).shape;
    is_ = n.in(1).shape;
    axis_ = normalize_axis(n.attrs.i("axis"), static_cast<int64_t>(ds_.size()));
    esize_ = dtype_size(n.in(0).dtype);
  }
  std::string impl_name() const override { return "gather_elements"; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const char* x = static_cast<const char*>(in[0].data);
    char* y = static_cast<char*>(out[0].data);
    const int rank = static_cast<int>(is_.size());
    const Shape dst = strides_of(ds_);
    const int64_t n = numel(is_);
    std::vector<int64_t> c(rank, 0);
    for (int64_t i = 0; i < n; ++i) {
      int64_t off = 0;
      for (int d = 0; d < rank; ++d) {
        int64_t v = d == axis_ ? checked_index(load_index(in[1].dtype, in[1].data, i), ds_[d]) : c[d];
        off += v * dst[d];
      }
      std::memcpy(y + i * esize_, x + off * esize_, esize_);
      for (int d = rank - 1; d >= 0; --d) {
        if (++c[d] < is_[d]) break;
        c[d] = 0;
      }
    }
  }

 private:
  Shape ds_, is_;
  int64_t axis_ = 0;
  size_t esize_ = 4;
};
}  // namespace

std::unique_ptr<Kernel> make_gather_elements(NodeDesc& n) { return std::make_unique<GatherElementsKernel>(n); }
std::string check_gather_elements(const NodeDesc& n) { return check_index_input(n, 1); }

OPFORGE_KERNEL(GatherElements, make_gather_elements, check_gather_elements);

}  // namespace opforge_cpu
