// NonZero-3: the coordinates [rank, count] of the non-zero elements in row-major order, written
// into an output bounded at [rank, numel] (count reported as the extra size output; see
// dynamic_common.hpp). f16/bf16 zeros are recognised by their bits (-0 is zero).
#include "kernels/dynamic_common.hpp"

namespace opforge_cpu {

namespace {
class NonZeroKernel : public Kernel {
 public:
  explicit NonZeroKernel(const NodeDesc& n) : shape_(n.in(0).shape), dt_(n.in(0).dtype), ot_(n.outputs[0].dtype) {
    n_out_ = n.outputs.size();
    if (shape_.empty()) shape_ = {1};
    bound_ = n.outputs[0].shape.at(1);
  }
  std::string impl_name() const override { return "non_zero"; }
  bool nonzero(const void* p, int64_t i) const {
    switch (dt_) {
      case DType::f16: case DType::bf16: return (static_cast<const uint16_t*>(p)[i] & 0x7fff) != 0;
      case DType::f32: return static_cast<const float*>(p)[i] != 0.0f;
      case DType::f64: return static_cast<const double*>(p)[i] != 0.0;
      default: break;
    }
    switch (dtype_size(dt_)) {
      case 1: return static_cast<const uint8_t*>(p)[i] != 0;
      case 2: return static_cast<const uint16_t*>(p)[i] != 0;
      case 4: return static_cast<const uint32_t*>(p)[i] != 0;
      default: return static_cast<const uint64_t*>(p)[i] != 0;
    }
  }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const int64_t n = numel(shape_);
    const int rank = static_cast<int>(shape_.size());
    const Shape st = strides_of(shape_);
    int64_t count = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (!nonzero(in[0].data, i)) continue;
      int64_t r = i;
      for (int d = 0; d < rank; ++d) {
        store_int(ot_, out[0].data, d * bound_ + count, r / st[d]);
        r %= st[d];
      }
      ++count;
    }
    report_size(out, n_out_, 1, count);
  }

 private:
  size_t n_out_ = 0;  // outputs given, the size output included when staged
  Shape shape_;
  DType dt_, ot_;
  int64_t bound_ = 0;
};
}  // namespace

std::unique_ptr<Kernel> make_non_zero(NodeDesc& n) { return std::make_unique<NonZeroKernel>(n); }
std::string check_non_zero(const NodeDesc& n) { return check_int_output(n.outputs.at(0).dtype); }

OPFORGE_KERNEL(NonZero, make_non_zero, check_non_zero);

}  // namespace opforge_cpu
