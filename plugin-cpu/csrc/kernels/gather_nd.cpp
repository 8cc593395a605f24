// GatherND-8: slices of data addressed by the last dimension of indices, after batch_dims
// leading dimensions shared by data and indices; negative indices count from the end.
#include "kernels/index_common.hpp"

namespace opforge_cpu {

namespace {
class GatherNDKernel : public Kernel {
 public:
  explicit GatherNDKernel(const NodeDesc& n) {
    ds_ = n.in(0).shape;
    const Shape& is = n.in(1).shape;
    bd_ = n.attrs.i("batch_dims", 0);
    k_ = is.back();
    batch_ = 1;
    for (int64_t i = 0; i < bd_; ++i) batch_ *= ds_[i];
    per_batch_ = 1;
    for (size_t i = bd_; i + 1 < is.size(); ++i) per_batch_ *= is[i];
    slice_ = 1;
    for (size_t i = bd_ + k_; i < ds_.size(); ++i) slice_ *= ds_[i];
    data_batch_ = 1;
    for (size_t i = bd_; i < ds_.size(); ++i) data_batch_ *= ds_[i];
    esize_ = dtype_size(n.in(0).dtype);
  }
  std::string impl_name() const override { return "gather_nd"; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const char* x = static_cast<const char*>(in[0].data);
    char* y = static_cast<char*>(out[0].data);
    const size_t row = static_cast<size_t>(slice_) * esize_;
    for (int64_t b = 0; b < batch_; ++b) {
      for (int64_t j = 0; j < per_batch_; ++j) {
        const int64_t t = b * per_batch_ + j;
        int64_t off = 0;
        for (int64_t q = 0; q < k_; ++q) {
          int64_t dim = ds_[bd_ + q];
          off = off * dim + checked_index(load_index(in[1].dtype, in[1].data, t * k_ + q), dim);
        }
        std::memcpy(y + t * row, x + (b * data_batch_ + off * slice_) * esize_, row);
      }
    }
  }

 private:
  Shape ds_;
  int64_t bd_ = 0, k_ = 0, batch_ = 1, per_batch_ = 1, slice_ = 1, data_batch_ = 1;
  size_t esize_ = 4;
};
}  // namespace

std::unique_ptr<Kernel> make_gather_nd(NodeDesc& n) { return std::make_unique<GatherNDKernel>(n); }
std::string check_gather_nd(const NodeDesc& n) { return check_index_input(n, 1); }

OPFORGE_KERNEL(GatherND, make_gather_nd, check_gather_nd);

}  // namespace opforge_cpu
