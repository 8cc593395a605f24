// ScatterUpdate-3: slices of data along `axis` (a constant input) at `indices` replaced by
// updates (shape data[:axis] + indices + data[axis+1:]); of repeated indices the last wins.
#include "kernels/index_common.hpp"

namespace opforge_cpu {

namespace {
class ScatterUpdateKernel : public Kernel {
 public:
  explicit ScatterUpdateKernel(const NodeDesc& n) {
    const Shape& ds = n.in(0).shape;
    const int64_t rank = static_cast<int64_t>(ds.size());
    const int64_t axis = normalize_axis(n.const_ints(3).at(0), rank);
    outer_ = inner_ = 1;
    for (int64_t i = 0; i < axis; ++i) outer_ *= ds[i];
    for (int64_t i = axis + 1; i < rank; ++i) inner_ *= ds[i];
    dim_ = ds[axis];
    nidx_ = numel(n.in(1).shape);
    esize_ = dtype_size(n.in(0).dtype);
  }
  std::string impl_name() const override { return "scatter_update"; }
  int inplace_input(int out) const override { return out == 0 ? 0 : -1; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    char* y = static_cast<char*>(out[0].data);
    if (y != in[0].data) std::memcpy(y, in[0].data, in[0].bytes());
    const char* u = static_cast<const char*>(in[2].data);
    const size_t row = static_cast<size_t>(inner_) * esize_;
    for (int64_t j = 0; j < nidx_; ++j) {
      const int64_t k = checked_index(load_index(in[1].dtype, in[1].data, j), dim_);
      for (int64_t o = 0; o < outer_; ++o)
        std::memcpy(y + (o * dim_ + k) * row, u + (o * nidx_ + j) * row, row);
    }
  }

 private:
  int64_t outer_ = 1, inner_ = 1, dim_ = 1, nidx_ = 0;
  size_t esize_ = 4;
};
}  // namespace

std::unique_ptr<Kernel> make_scatter_update(NodeDesc& n) { return std::make_unique<ScatterUpdateKernel>(n); }
std::string check_scatter_update(const NodeDesc& n) {
  if (!n.is_const(3)) return "ScatterUpdate needs a constant axis on the CPU device";
  return check_index_input(n, 1);
}

OPFORGE_KERNEL(ScatterUpdate, make_scatter_update, check_scatter_update);

}  // namespace opforge_cpu
