// Split / VariadicSplit: the inverse of Concat, one memcpy per output slab.
#pragma once

#include "core/elementwise.hpp"

namespace opforge_cpu {

class SplitKernel : public Kernel {
 public:
  SplitKernel(const NodeDesc& n, int64_t axis) {
    const Shape& xs = n.in(0).shape;
    axis = normalize_axis(axis, static_cast<int64_t>(xs.size()));
    outer_ = 1;
    for (int64_t i = 0; i < axis; ++i) outer_ *= xs[i];
    size_t es = dtype_size(n.in(0).dtype);
    for (const auto& o : n.outputs) {
      int64_t inner = 1;
      for (size_t i = axis; i < o.shape.size(); ++i) inner *= o.shape[i];
      chunk_.push_back(static_cast<size_t>(inner) * es);
    }
    row_ = 0;
    for (auto c : chunk_) row_ += c;
  }
  std::string impl_name() const override { return "memcpy"; }
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const char* x = static_cast<const char*>(in[0].data);
    parallel_range(outer_, ctx.num_threads, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        size_t off = o * row_;
        for (size_t i = 0; i < chunk_.size(); ++i) {
          if (chunk_[i]) std::memcpy(static_cast<char*>(out[i].data) + o * chunk_[i], x + off, chunk_[i]);
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

}  // namespace opforge_cpu
