// OneHot-1: out has a new axis of size depth (a constant) at `axis`; an element is on_value
// where its position on that axis equals the index, else off_value (indices outside [0, depth)
// give an all-off row, as in the reference).
#include "kernels/index_common.hpp"

namespace opforge_cpu {

namespace {
class OneHotKernel : public Kernel {
 public:
  explicit OneHotKernel(const NodeDesc& n) {
    const Shape& is = n.in(0).shape;
    const int64_t rank = static_cast<int64_t>(is.size()) + 1;
    const int64_t axis = normalize_axis(n.attrs.i("axis"), rank);
    depth_ = n.const_ints(1).at(0);
    outer_ = inner_ = 1;
    for (int64_t i = 0; i < axis; ++i) outer_ *= is[i];
    for (int64_t i = axis; i < rank - 1; ++i) inner_ *= is[i];
    esize_ = dtype_size(n.outputs[0].dtype);
  }
  std::string impl_name() const override { return "one_hot"; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    char* y = static_cast<char*>(out[0].data);
    const char* on = static_cast<const char*>(in[2].data);
    const char* off = static_cast<const char*>(in[3].data);
    for (int64_t o = 0; o < outer_; ++o)
      for (int64_t d = 0; d < depth_; ++d)
        for (int64_t i = 0; i < inner_; ++i) {
          int64_t v = load_index(in[0].dtype, in[0].data, o * inner_ + i);
          std::memcpy(y + ((o * depth_ + d) * inner_ + i) * esize_, v == d ? on : off, esize_);
        }
  }

 private:
  int64_t depth_ = 0, outer_ = 1, inner_ = 1;
  size_t esize_ = 4;
};
}  // namespace

std::unique_ptr<Kernel> make_one_hot(NodeDesc& n) { return std::make_unique<OneHotKernel>(n); }
std::string check_one_hot(const NodeDesc& n) {
  if (!n.is_const(1)) return "OneHot needs a constant depth on the CPU device";
  if (is_float(n.in(0).dtype) || n.in(0).dtype == DType::boolean) return "OneHot indices must be integers";
  return "";
}

OPFORGE_KERNEL(OneHot, make_one_hot, check_one_hot);

}  // namespace opforge_cpu
