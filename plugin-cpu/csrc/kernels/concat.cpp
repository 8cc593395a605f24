// Concat: for each outer index, one memcpy per input of its slab along the axis.
#include "kernels/common.hpp"

namespace opforge_cpu {

namespace {
class ConcatKernel : public Kernel {
 public:
  explicit ConcatKernel(const NodeDesc& n) {
    const Shape& ys = n.outputs[0].shape;
    int64_t axis = normalize_axis(n.attrs.i("axis"), static_cast<int64_t>(ys.size()));
    outer_ = 1;
    for (int64_t i = 0; i < axis; ++i) outer_ *= ys[i];
    size_t es = dtype_size(n.outputs[0].dtype);
    for (const auto& in : n.inputs) {
      int64_t inner = 1;
      for (size_t i = axis; i < in.info.shape.size(); ++i) inner *= in.info.shape[i];
      chunk_.push_back(static_cast<size_t>(inner) * es);
    }
    row_ = 0;
    for (auto c : chunk_) row_ += c;
  }
  std::string impl_name() const override { return "memcpy"; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    char* y = static_cast<char*>(out[0].data);
    parallel_range(outer_, ctx.num_threads, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        size_t off = o * row_;
        for (size_t i = 0; i < chunk_.size(); ++i) {
          if (chunk_[i]) std::memcpy(y + off, static_cast<const char*>(in[i].data) + o * chunk_[i], chunk_[i]);
          off += chunk_[i];
        }
      }
    }, std::max<int64_t>(1, static_cast<int64_t>(65536 / std::max<size_t>(row_, 1))));
  }

 private:
  int64_t outer_ = 1;
  std::vector<size_t> chunk_;
  size_t row_ = 0;
};
}  // namespace

std::unique_ptr<Kernel> make_concat(NodeDesc& n) { return std::make_unique<ConcatKernel>(n); }

OPFORGE_KERNEL(Concat, make_concat, nullptr);

}  // namespace opforge_cpu
