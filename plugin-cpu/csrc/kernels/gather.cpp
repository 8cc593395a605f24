// Gather-8: data[..., indices[...], ...] along a constant axis, with batch_dims and negative
// indices (counted from the end); an index out of range is an error naming its value.
#include "kernels/common.hpp"

namespace opforge_cpu {

namespace {
template <class I> class GatherKernel : public Kernel {
 public:
  explicit GatherKernel(const NodeDesc& n) {
    const Shape& ds = n.in(0).shape;
    const Shape& is = n.in(1).shape;
    int64_t rank = static_cast<int64_t>(ds.size());
    int64_t bd = n.attrs.i("batch_dims", 0);
    if (bd < 0) bd += static_cast<int64_t>(is.size());
    int64_t axis = normalize_axis(n.const_ints(2).at(0), rank);
    batch_ = 1;
    for (int64_t i = 0; i < bd; ++i) batch_ *= ds[i];
    outer_ = 1;
    for (int64_t i = bd; i < axis; ++i) outer_ *= ds[i];
    axis_dim_ = ds[axis];
    inner_ = 1;
    for (int64_t i = axis + 1; i < rank; ++i) inner_ *= ds[i];
    nidx_ = 1;
    for (size_t i = bd; i < is.size(); ++i) nidx_ *= is[i];
    esize_ = dtype_size(n.in(0).dtype);
  }
  std::string impl_name() const override { return "gather"; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const char* x = static_cast<const char*>(in[0].data);
    const I* idx = in[1].ptr<I>();
    char* y = static_cast<char*>(out[0].data);
    const size_t row = static_cast<size_t>(inner_) * esize_;
    int64_t bad = 0;
    bool failed = false;
    parallel_range(batch_ * outer_, ctx.num_threads, [&](int64_t b0, int64_t b1) {
      for (int64_t bo = b0; bo < b1; ++bo) {
        int64_t b = bo / outer_;
        const I* ip = idx + b * nidx_;
        const char* xp = x + bo * axis_dim_ * row;
        char* yp = y + bo * nidx_ * row;
        for (int64_t j = 0; j < nidx_; ++j) {
          int64_t k = static_cast<int64_t>(ip[j]);
          if (k < 0) k += axis_dim_;
          if (k < 0 || k >= axis_dim_) {
            failed = true;
            bad = static_cast<int64_t>(ip[j]);
            std::memset(yp + j * row, 0, row);
            continue;
          }
          std::memcpy(yp + j * row, xp + k * row, row);
        }
      }
    }, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, nidx_)));
    if (failed)
      throw KernelFailure("index " + std::to_string(bad) + " is out of range for an axis of size " +
                          std::to_string(axis_dim_));
  }

 private:
  int64_t batch_ = 1, outer_ = 1, axis_dim_ = 1, inner_ = 1, nidx_ = 1;
  size_t esize_ = 4;
};
}  // namespace

std::unique_ptr<Kernel> make_gather(NodeDesc& n) {
  switch (n.in(1).dtype) {
    case DType::i32: return std::make_unique<GatherKernel<int32_t>>(n);
    case DType::i64: return std::make_unique<GatherKernel<int64_t>>(n);
    default: throw CompileFailure("Gather indices must be i32 or i64");
  }
}

std::string check_gather(const NodeDesc& n) {
  if (!n.is_const(2)) return "Gather needs a constant axis on the CPU device";
  if (n.in(1).dtype != DType::i32 && n.in(1).dtype != DType::i64) return "Gather indices must be i32 or i64";
  return "";
}

OPFORGE_KERNEL(Gather, make_gather, check_gather);

}  // namespace opforge_cpu
