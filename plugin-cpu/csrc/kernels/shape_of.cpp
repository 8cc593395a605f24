// ShapeOf-3: the input's (static, planned) shape as i32 or i64.
#include "kernels/common.hpp"

namespace opforge_cpu {

namespace {
class ShapeOfKernel : public Kernel {
 public:
  explicit ShapeOfKernel(const NodeDesc& n) : shape_(n.in(0).shape), i64_(n.outputs[0].dtype == DType::i64) {}
  void run(RunContext&, const TensorView*, TensorView* out, Bound*) override {
    for (size_t i = 0; i < shape_.size(); ++i) {
      if (i64_) out[0].ptr<int64_t>()[i] = shape_[i];
      else out[0].ptr<int32_t>()[i] = static_cast<int32_t>(shape_[i]);
    }
  }

 private:
  Shape shape_;
  bool i64_;
};
}  // namespace

std::unique_ptr<Kernel> make_shape_of(NodeDesc& n) { return std::make_unique<ShapeOfKernel>(n); }

OPFORGE_KERNEL(ShapeOf, make_shape_of, nullptr);

}  // namespace opforge_cpu
