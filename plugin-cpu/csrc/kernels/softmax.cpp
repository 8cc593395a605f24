// Softmax-8: exp(x - max) / sum along an axis (f32). The last axis (attention's scores) runs the
// hand-written row loops of core/softmax_rows.cpp, threads splitting the rows; other axes run
// oneDNN's softmax (core/softmax_common.hpp).
#include "core/elementwise.hpp"
#include "core/softmax_common.hpp"
#include "core/softmax_rows.hpp"

namespace opforge_cpu {

namespace {
class LastAxisSoftmax : public Kernel {
 public:
  LastAxisSoftmax(int64_t rows, int64_t len) : rows_(rows), len_(len) {}
  void run(RunContext& ctx, const TensorView* in, TensorView* out, Bound*) override {
    const float* x = in[0].ptr<float>();
    float* y = out[0].ptr<float>();
    const int64_t len = len_;
    // ~20 flops an element (the exp): threads from 8192 elements on
    parallel_range(rows_, ctx.num_threads, [&](int64_t r0, int64_t r1) {
      softmax_rows_f32(x, y, r0, r1, len);
    }, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, len)));
  }
  // each row is read before it is written, element by element
  int inplace_input(int out) const override { return out == 0 ? 0 : -1; }
  std::string impl_name() const override { return "softmax_rows"; }

 private:
  int64_t rows_, len_;
};
}  // namespace

std::unique_ptr<Kernel> make_softmax(NodeDesc& n) {
  const Shape& s = n.in(0).shape;
  const int64_t rank = static_cast<int64_t>(s.size());
  if (rank >= 1 && normalize_axis(n.attrs.i("axis", 1), rank) == rank - 1 && s.back() > 0) {
    return std::make_unique<LastAxisSoftmax>(numel(s) / s.back(), s.back());
  }
  return std::make_unique<SoftmaxKernel>(n, false);
}

std::string check_softmax(const NodeDesc& n) { return n.in(0).dtype == DType::f32 ? "" : "Softmax runs in f32 only"; }

OPFORGE_KERNEL(Softmax, make_softmax, check_softmax);

}  // namespace opforge_cpu
